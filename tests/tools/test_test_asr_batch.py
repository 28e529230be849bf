"""test-asr.py --batch DIR, run as a person runs it: a folder of recordings transcribed as one
batch by the live server, each transcript written beside its recording."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import run_script
from tests.fixtures.speech import speech_wav
from tests.fixtures.standin import StandIn

SCRIPT = Path(__file__).resolve().parents[2] / "test-asr.py"
LENGTHS = {"intro.wav": 1.5, "talk.wav": 2.1, "outro.wav": 3.0}


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script("test-asr.py", *args)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three recordings and a notes file the tool leaves alone."""
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    for name, seconds in LENGTHS.items():
        (recordings / name).write_bytes(speech_wav(seconds))
    (recordings / "notes.md").write_text("not a recording\n")
    return recordings


def files_kept(server: LiveServer) -> list[str]:
    """The purposes of the files the server still holds."""
    listed = httpx.get(f"{server.url}/v1/files").json()["data"]
    return sorted(file["purpose"] for file in listed)


def test_a_folder_is_transcribed_and_a_file_the_server_refuses_is_reported(
    live_server: LiveServer, folder: Path
) -> None:
    (folder / "broken.wav").write_bytes(b"this is not audio at all" * 40)
    result = run_tool("--batch", str(folder), "--url", live_server.url)
    assert result.returncode == 1
    for name in LENGTHS:  # each transcript is what the tool prints for its recording alone
        alone = run_tool(str(folder / name), "--url", live_server.url)
        assert (folder / name).with_suffix(".txt").read_text() == alone.stdout
        assert alone.stdout.startswith("Heard ")
    assert sorted(result.stdout.splitlines()) == sorted(
        str((folder / name).with_suffix(".txt")) for name in LENGTHS
    )
    assert not (folder / "broken.txt").exists()
    assert not (folder / "notes.txt").exists()
    errors = result.stderr.splitlines()
    assert errors[0].startswith(
        "test-asr: left out broken.wav: The audio file could not be decoded"
    )
    assert re.fullmatch(r"test-asr: batch batch_\w+: 3 recordings", errors[1])
    assert errors[-2] == f"batch completed   3/3 [{'#' * 30}] 0 failed"
    assert errors[-1] == "test-asr: error: 1 of 4 recordings were left out"
    # the recordings and the batch's input are gone from the server; its answers are on disk
    assert files_kept(live_server) == ["batch_output"]


def test_on_a_terminal_the_progress_is_redrawn_in_place(
    live_server: LiveServer, folder: Path
) -> None:
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, str(SCRIPT), "--batch", str(folder), "--url", live_server.url],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            check=False,
        )
        os.close(follower)
        shown = b""
        with contextlib.suppress(OSError):  # EIO: the terminal's other end is closed
            while chunk := os.read(leader, 4096):
                shown += chunk
    finally:
        os.close(leader)
    assert result.returncode == 0
    drawn = shown.decode().split("\r\n")[1]  # after the batch's id; the terminal adds \r
    assert drawn.startswith("\rbatch ")
    assert drawn.endswith(f"\rbatch completed   3/3 [{'#' * 30}] 0 failed")


def test_srt_writes_subtitle_files(live_server: LiveServer, folder: Path) -> None:
    result = run_tool("--batch", str(folder), "--url", live_server.url, "--format", "srt")
    assert result.returncode == 0, result.stderr
    for name in LENGTHS:
        subtitles = (folder / name).with_suffix(".srt").read_text()
        assert subtitles.startswith("1\n00:00:")
        assert "Heard" in subtitles
    assert list(folder.glob("*.txt")) == []


def test_verbose_json_is_written_pretty(live_server: LiveServer, folder: Path) -> None:
    result = run_tool("--batch", str(folder), "--url", live_server.url, "--format", "verbose_json")
    assert result.returncode == 0, result.stderr
    alone = run_tool(str(folder / "talk.wav"), "--url", live_server.url, "--format", "verbose_json")
    written = (folder / "talk.json").read_text()
    assert written.startswith('{\n  "')
    assert json.loads(written) == json.loads(alone.stdout)


def test_recursive_names_each_recording_by_its_path_in_the_folder(
    live_server: LiveServer, folder: Path
) -> None:
    (folder / "day2").mkdir()
    (folder / "day2" / "talk.wav").write_bytes(speech_wav(1.0))
    flat = run_tool("--batch", str(folder), "--url", live_server.url)
    assert "3 recordings" in flat.stderr
    assert not (folder / "day2" / "talk.txt").exists()
    deep = run_tool("--batch", str(folder), "--url", live_server.url, "--recursive")
    assert deep.returncode == 0, deep.stderr
    assert "4 recordings" in deep.stderr
    assert (folder / "day2" / "talk.txt").read_text() == "Heard 1.00 s.\n"


def test_lines_that_fail_are_reported_with_their_message(
    live_server: LiveServer, folder: Path
) -> None:
    """A context longer than the model takes fails each line when it runs."""
    result = run_tool("--batch", str(folder), "--url", live_server.url, "--context", "x" * 5000)
    assert (result.returncode, result.stdout) == (1, "")
    failed = [line for line in result.stderr.splitlines() if " failed: " in line]
    assert sorted(line.split()[1] for line in failed) == sorted(LENGTHS)
    assert all("context" in line and line.endswith("(HTTP 400)") for line in failed)
    assert "batch completed   3/3" in result.stderr
    assert "3 failed" in result.stderr
    assert result.stderr.endswith(
        "test-asr: error: 3 of 3 recordings have no transcript (the batch is completed)\n"
    )
    assert list(folder.glob("*.txt")) == []


def test_no_wait_prints_the_batch_id(live_server: LiveServer, folder: Path) -> None:
    result = run_tool("--batch", str(folder), "--url", live_server.url, "--no-wait")
    assert (result.returncode, result.stderr) == (0, "")
    batch = httpx.get(f"{live_server.url}/v1/batches/{result.stdout.strip()}").json()
    assert batch["request_counts"]["total"] == 3
    assert list(folder.glob("*.txt")) == []


@pytest.fixture
def slow_server() -> Iterator[LiveServer]:
    """A server whose model takes 5 s an answer: a batch is still running when Ctrl-C comes."""
    server = LiveServer(StandIn(MODEL, delay=5.0, describe=True))
    yield server
    server.stop()


def test_ctrl_c_cancels_the_batch(slow_server: LiveServer, folder: Path) -> None:
    tool = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--batch", str(folder), "--url", slow_server.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal starts it: a test run in the background (CI's lanes) ignores SIGINT,
        # and a child would inherit that and never see the Ctrl-C
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert tool.stderr is not None
    started = tool.stderr.readline()
    batch_id = started.split()[2].rstrip(":")
    assert tool.stderr.readline().startswith("batch ")  # polling
    tool.send_signal(signal.SIGINT)
    output, errors = tool.communicate(timeout=30)
    assert (tool.returncode, output) == (130, "")
    assert re.search(rf"test-asr: interrupted: batch {batch_id} is cancel(ling|led)", errors)
    batch = httpx.get(f"{slow_server.url}/v1/batches/{batch_id}").json()
    assert batch["status"] in ("cancelling", "cancelled")
    assert list(folder.glob("*.txt")) == []


@pytest.mark.parametrize(
    "flags",
    [
        ["--batch", "{dir}", "--stream"],
        ["--batch", "{dir}", "--realtime"],
        ["--batch", "{dir}", "--words"],
        ["--batch", "{dir}", "{dir}/talk.wav"],
        [],
    ],
)
def test_batch_usage_errors(folder: Path, flags: list[str]) -> None:
    result = run_tool(*(flag.format(dir=folder) for flag in flags))
    assert (result.returncode, result.stdout) == (2, "")
    assert "error:" in result.stderr


def test_a_batch_that_is_not_a_folder_or_flags_without_one(folder: Path) -> None:
    not_folder = run_tool("--batch", str(folder / "talk.wav"))
    assert (not_folder.returncode, not_folder.stdout) == (2, "")
    assert "is not one" in not_folder.stderr
    for flag in ("--recursive", "--no-wait"):
        alone = run_tool(str(folder / "talk.wav"), flag)
        assert alone.returncode == 2
        assert "go with --batch DIR" in alone.stderr
