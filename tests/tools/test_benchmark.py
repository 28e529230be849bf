"""benchmark.py run as its own process against the live server (a stand-in upstream behind it).

Figures are checked for shape and consistency, never for speed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import wave
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import benchmark
from qwen3_asr_server.backend.launch import free_port
from tests.fixtures import containers
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import run_script
from tests.fixtures.standin import StandIn

SCRIPT = Path(__file__).resolve().parents[2] / "benchmark.py"
KEY_MESSAGE = "benchmark.py: error: the server wants an API key: pass --api-key or set QWEN_API_KEY"


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_script("benchmark.py", *args, env=env)


@pytest.fixture
def second_server() -> Iterator[LiveServer]:
    server = LiveServer(StandIn(MODEL, delay=0.02, describe=True))
    yield server
    server.stop()


@pytest.fixture
def without(tmp_path: Path) -> Any:
    """An environment in which the named packages fail to import (a shadow on PYTHONPATH)."""

    def make(*names: str) -> dict[str, str]:
        for name in names:
            (tmp_path / "shadow" / name).mkdir(parents=True)
            (tmp_path / "shadow" / name / "__init__.py").write_text("raise ImportError('hidden')\n")
        return {"PYTHONPATH": str(tmp_path / "shadow")}

    return make


def test_a_synthetic_run_prints_the_figures_and_counts_warm_up_and_runs(
    live_server: LiveServer,
) -> None:
    result = bench("--url", live_server.url, "--synthetic", "2", "--runs", "3")
    assert result.returncode == 0, result.stderr
    assert "synthetic-2s.wav" in result.stdout
    for column in ("audio s", "mean ± sd ms", "p50 ms", "p95 ms", "x real time", "errors"):
        assert column in result.stdout
    assert "2.00" in result.stdout  # the audio's length
    assert len(live_server.standin.requests) == 1 + 3
    assert all(r["audio"]["seconds"] == pytest.approx(2.0) for r in live_server.standin.requests)
    assert all(r["model"] == MODEL for r in live_server.standin.requests)  # whisper-1, mapped
    assert "note:" not in result.stderr


def test_long_synthetic_clips_come_with_a_note_that_a_neural_vad_hears_little_of_them(
    live_server: LiveServer,
) -> None:
    result = bench("--url", live_server.url, "--synthetic", "31", "--runs", "1")
    assert result.returncode == 0, result.stderr
    assert "note: synthetic clips over 30 s are tone bursts" in result.stderr
    assert "use real recordings for long audio" in result.stderr


def test_json_holds_every_figure_and_the_environment(
    live_server: LiveServer, tmp_path: Path
) -> None:
    out = tmp_path / "figures.json"
    args = ("--synthetic", "1,2", "--runs", "2", "--json", str(out))
    result = bench("--url", live_server.url, *args)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    environment = report["environment"]
    assert environment["url"] == live_server.url
    assert environment["runs"] == 2
    assert {"date", "python", "platform"} <= environment.keys()
    assert [f["file"] for f in report["files"]] == ["synthetic-1s.wav", "synthetic-2s.wav"]
    for figures, seconds in zip(report["files"], (1.0, 2.0), strict=True):
        assert figures["audio_seconds"] == pytest.approx(seconds)
        assert figures["runs"] == 2
        assert figures["errors"] == 0
        latency = figures["latency"]
        assert latency["mean_ms"] > 0
        assert latency["stdev_ms"] >= 0
        assert 0 < latency["p50_ms"] <= latency["p95_ms"]
        assert figures["x_real_time"] == pytest.approx(seconds / (latency["mean_ms"] / 1000))
        assert figures["first_delta"] is None  # not streamed
    assert report["requests"] == len(live_server.standin.requests) == 2 * (1 + 2)
    assert report["failures"] == []
    assert report["concurrency"] == []
    assert report["compare"] == []


def test_a_concurrency_sweep_reports_each_level(live_server: LiveServer, tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    args = ("--synthetic", "1", "--runs", "2", "--concurrency", "1,4", "--json", str(out))
    result = bench("--url", live_server.url, *args)
    assert result.returncode == 0, result.stderr
    assert "Throughput by concurrency" in result.stdout
    assert "requests/s" in result.stdout
    assert "audio s/s" in result.stdout
    levels = json.loads(out.read_text())["concurrency"]
    assert [level["concurrency"] for level in levels] == [1, 4]
    assert [level["requests"] for level in levels] == [2, 8]  # max(--runs, 2N)
    for level in levels:
        assert level["errors"] == 0
        assert level["requests_per_s"] > 0
        assert level["audio_seconds_per_s"] == pytest.approx(level["requests_per_s"] * 1.0)
        assert 0 < level["latency"]["p50_ms"] <= level["latency"]["p95_ms"]
    # latency: 1 + 2; level 1: a warm-up of 1, then 2; level 4: a warm-up of 4, then 8
    assert len(live_server.standin.requests) == 3 + 3 + 12
    assert live_server.standin.max_in_flight >= 2  # the workers were concurrent


def test_streaming_times_the_first_delta_and_the_done_event(
    live_server: LiveServer, tmp_path: Path
) -> None:
    out = tmp_path / "figures.json"
    args = ("--synthetic", "2", "--runs", "2", "--stream", "--concurrency", "2", "--json", str(out))
    result = bench("--url", live_server.url, *args)
    assert result.returncode == 0, result.stderr
    assert "first delta p50 ms" in result.stdout
    assert "done p50 ms" in result.stdout
    report = json.loads(out.read_text())
    figures = report["files"][0]
    assert 0 < figures["first_delta"]["p50_ms"] <= figures["done"]["p50_ms"]
    assert figures["done"]["p50_ms"] <= figures["latency"]["p50_ms"]
    assert report["concurrency"][0]["first_delta"]["p50_ms"] > 0
    assert all(r["stream"] for r in live_server.standin.requests)


def test_compare_runs_both_endpoints_and_reports_ratios(
    live_server: LiveServer, second_server: LiveServer, tmp_path: Path
) -> None:
    out = tmp_path / "figures.json"
    result = bench(
        "--url", live_server.url, "--compare", f"{second_server.url}/v1",
        "--compare-model", MODEL, "--synthetic", "1", "--runs", "2",
        "--concurrency", "2", "--stream", "--json", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"A = {live_server.url}, model whisper-1" in result.stdout
    assert f"B = {second_server.url}, model {MODEL}" in result.stdout
    assert f"Comparison: A = {live_server.url}, B = {second_server.url}" in result.stdout
    for column in ("p50 B/A", "added ms (A-B)", "requests/s B/A", "first delta B/A"):
        assert column in result.stdout
    for column in ("first delta added",):
        assert column in result.stdout
    # the same workload on each side: 1 + 2 for latency, 2 + 4 for the sweep
    assert len(live_server.standin.requests) == len(second_server.standin.requests) == 9
    report = json.loads(out.read_text())
    assert report["environment"]["compare_url"] == second_server.url
    assert [f["target"] for f in report["files"]] == ["A", "B"]
    assert [level["target"] for level in report["concurrency"]] == ["A", "B"]
    by_workload = {c["workload"]: c for c in report["compare"]}
    assert by_workload.keys() == {"synthetic-1s.wav", "concurrency 2"}
    files = {(f["target"], f["file"]): f for f in report["files"]}
    a_first = files["A", "synthetic-1s.wav"]["first_delta"]["p50_ms"]
    b_first = files["B", "synthetic-1s.wav"]["first_delta"]["p50_ms"]
    first_added = by_workload["synthetic-1s.wav"]["added_first_delta_ms"]
    assert first_added == pytest.approx(a_first - b_first)
    for name, comparison in by_workload.items():
        assert comparison["p50_ratio_b_over_a"] == pytest.approx(
            comparison["b_p50_ms"] / comparison["a_p50_ms"]
        )
        assert comparison["added_p50_ms"] == pytest.approx(
            comparison["a_p50_ms"] - comparison["b_p50_ms"]
        )
        assert comparison["first_delta_ratio_b_over_a"] > 0
        if name.startswith("concurrency"):
            assert comparison["throughput_ratio_b_over_a"] > 0
        else:
            assert comparison["throughput_ratio_b_over_a"] is None


def test_plot_writes_a_png(live_server: LiveServer, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "latency.png"
    args = ("--synthetic", "1", "--runs", "1", "--concurrency", "1,2", "--plot", str(out))
    result = bench("--url", live_server.url, *args)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_without_rich_the_tables_are_plain_text_and_plot_asks_for_matplotlib(
    live_server: LiveServer, without: Any, tmp_path: Path
) -> None:
    env = without("rich", "matplotlib", "numpy")
    result = bench("--url", live_server.url, "--synthetic", "1", "--runs", "1", env=env)
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("file "))
    assert "x real time" in header
    assert "synthetic-1s.wav" in result.stdout
    assert "┃" not in result.stdout
    assert len(live_server.standin.requests) == 2
    args = ("--synthetic", "1", "--concurrency", "1", "--plot", str(tmp_path / "p.png"))
    result = bench("--url", live_server.url, *args, env=env)
    assert result.returncode == 2
    assert "--plot needs matplotlib: pip install matplotlib" in result.stderr
    assert len(live_server.standin.requests) == 2  # refused before any request


def test_a_real_file_is_sent_and_its_length_read(live_server: LiveServer, tmp_path: Path) -> None:
    clip = tmp_path / "clip.wav"
    clip.write_bytes(wav(1.5, rate=22_050))
    result = bench("--url", live_server.url, str(clip), "--runs", "2")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "clip.wav" in line)
    assert "1.50" in row
    assert len(live_server.standin.requests) == 3
    assert live_server.standin.requests[0]["audio"]["seconds"] == pytest.approx(1.5)


def test_a_server_that_wants_a_key_gives_one_line_and_exit_1() -> None:
    server = LiveServer(StandIn(MODEL, describe=True), api_key="k")
    try:
        result = bench("--url", server.url, "--synthetic", "1", "--runs", "1")
        assert result.returncode == 1
        assert KEY_MESSAGE in result.stderr.splitlines()
        assert "Traceback" not in result.stderr
        assert not server.standin.requests
        wrong = bench("--url", server.url, "--synthetic", "1", "--runs", "1", "--api-key", "x")
        assert wrong.returncode == 1
        assert "refused the API key" in wrong.stderr
        right = bench("--url", server.url, "--synthetic", "1", "--runs", "1",
                      env={"QWEN_API_KEY": "k"})  # fmt: skip
        assert right.returncode == 0, right.stderr
        assert len(server.standin.requests) == 2
    finally:
        server.stop()


def test_nothing_listening_gives_one_line_and_a_failure_exit() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = bench("--url", url, "--synthetic", "1", "--runs", "1")
    assert result.returncode == 1
    assert f"benchmark.py: error: cannot reach {url}: is the server running?" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_failed_request_exits_1_after_the_figures(
    live_server: LiveServer, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"this is not audio at all")
    result = bench("--url", live_server.url, str(garbage), "--synthetic", "1", "--runs", "1")
    assert result.returncode == 1
    assert "synthetic-1s.wav" in result.stdout  # the figures are printed all the same
    assert "garbage.wav" in result.stdout
    assert "cannot read the length of" in result.stderr
    assert "2 of 4 requests failed" in result.stderr
    assert "HTTP 400" in result.stderr


def test_a_stream_that_dies_after_its_first_delta_is_a_failed_request() -> None:
    # "language", " English", "<asr_text>", "Heard", " 1.00", then the stand-in dies
    server = LiveServer(StandIn(MODEL, describe=True, fail_after=5))
    try:
        result = bench("--url", server.url, "--synthetic", "1", "--runs", "1", "--stream")
        assert result.returncode == 1
        assert "2 of 2 requests failed" in result.stderr
        assert "error event" in result.stderr
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give audio files or --synthetic"),
        (["missing.wav"], "cannot read missing.wav"),
        (["--synthetic", "0"], "expected positive numbers"),
        (["--synthetic", "two"], "expected numbers"),
        (["--synthetic", "1", "--concurrency", "1.5"], "expected whole numbers"),
        (["--synthetic", "1", "--runs", "0"], "expected positive numbers"),
        (["--synthetic", "1", "--runs", "2,3"], "expected one number"),
        (["--synthetic", "1", "--timeout", "-1"], "expected positive numbers"),
        (["--synthetic", "1", "--plot", "x.png"], "--plot draws the --concurrency sweep"),
        (["--synthetic", "1", "--url", "localhost:8000"], "not an http(s) URL"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = bench(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_the_script_is_executable_and_documents_itself() -> None:
    assert SCRIPT.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(SCRIPT, os.X_OK)
    result = bench("--help")
    assert result.returncode == 0
    for option in ("--url", "--api-key", "--runs", "--synthetic", "--concurrency", "--stream",
                   "--compare", "--compare-api-key", "--compare-model", "--json", "--plot",
                   "--timeout", "x real time"):  # fmt: skip
        assert option in result.stdout


def test_an_unwritable_json_path_is_one_line_and_exit_1(
    live_server: LiveServer, tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "figures.json"
    result = bench("--url", live_server.url, "--synthetic", "1", "--runs", "1", "--json", str(out))
    assert result.returncode == 1
    assert f"benchmark.py: error: cannot write {out}" in result.stderr
    assert "Traceback" not in result.stderr


def test_percentile_interpolates_between_ranks() -> None:
    assert benchmark.percentile([5.0], 0.95) == 5.0
    assert benchmark.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert benchmark.percentile(list(map(float, range(101))), 0.95) == pytest.approx(95.0)


@pytest.mark.parametrize("numpy", [True, False])
def test_synthetic_audio_is_speech_like_16k_mono_pcm(
    numpy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not numpy:
        monkeypatch.setitem(sys.modules, "numpy", None)  # the stdlib renderer
    data = benchmark.synthetic_wav(3)
    with wave.open(io.BytesIO(data), "rb") as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (
            16_000,
            1,
            2,
        )
        assert reader.getnframes() == 48_000
        frames = reader.readframes(reader.getnframes())
    samples = array("h", frames)
    windows = [max(map(abs, samples[i : i + 800])) for i in range(0, len(samples), 800)]  # 50 ms
    assert max(windows) > 3000  # loud bursts
    assert min(windows) == 0  # and pauses
    assert benchmark.synthetic_wav(3) == data  # the same audio for the same length


def test_audio_length_falls_back_to_the_stdlib_wav_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clip = tmp_path / "clip.wav"
    clip.write_bytes(wav(0.5, rate=22_050))
    assert benchmark.audio_seconds(clip) == pytest.approx(0.5)
    monkeypatch.setitem(sys.modules, "av", None)
    monkeypatch.setitem(sys.modules, "soundfile", None)
    assert benchmark.audio_seconds(clip) == pytest.approx(0.5)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"nothing")
    assert benchmark.audio_seconds(garbage) is None


@pytest.mark.parametrize("container", ["flac", "mp3", "mp4"])
def test_audio_length_of_other_containers_comes_from_pyav(container: str, tmp_path: Path) -> None:
    clip = tmp_path / f"clip.{container}"
    clip.write_bytes(containers.encode(containers.tone(2.0, rate=44_100), 44_100, container))
    seconds = benchmark.audio_seconds(clip)
    assert seconds == pytest.approx(2.0, abs=0.1)  # mp3 and aac pad a frame or so
