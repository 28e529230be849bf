"""test-asr.py, run as a person runs it: a subprocess against the live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qwen3_asr_server.app import create_app
from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.model.catalog import DIARIZE
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.containers import encode
from tests.fixtures.conversations import conversation
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import run_script
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import channels_wav, speech_wav, spoken
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import StandInAligner, expected_words

SCRIPT = Path(__file__).resolve().parents[2] / "test-asr.py"
HEARD = "Heard 2.10 s."
KEY_HINT = "test-asr: error: the server wants an API key: pass --api-key or set QWEN_API_KEY\n"


def run_tool(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_script("test-asr.py", *args, env=env)


@pytest.fixture
def clip(tmp_path: Path) -> str:
    path = tmp_path / "clip.wav"
    path.write_bytes(speech_wav(2.1))
    return str(path)


@pytest.fixture
def keyed_server() -> Iterator[LiveServer]:
    server = LiveServer(StandIn(MODEL), api_key="k")
    yield server
    server.stop()


def last_request(server: LiveServer) -> dict[str, Any]:
    request: dict[str, Any] = server.standin.requests[-1]
    return request


def test_the_script_is_an_executable_python3_script() -> None:
    assert SCRIPT.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(SCRIPT, os.X_OK)


def test_help_shows_the_usage() -> None:
    result = run_tool("--help")
    assert result.returncode == 0
    flags = ("--language", "--context", "--format", "--stream", "--translate", "--api-key")
    for flag in (*flags, "--batch"):
        assert flag in result.stdout


@pytest.mark.parametrize("response_format", ["json", "text"])
def test_json_and_text_print_the_transcript(
    live_server: LiveServer, clip: str, response_format: str
) -> None:
    result = run_tool(clip, "--url", live_server.url, "--format", response_format)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{HEARD}\n", "")


def test_multichannel_labels_each_channel_s_cues(tmp_path: Path) -> None:
    call = tmp_path / "call.wav"
    call.write_bytes(
        channels_wav(
            [(0.5, False), (2.0, True), (3.5, False)], [(3.0, False), (2.5, True), (0.5, False)]
        )
    )
    server = LiveServer(StandIn(MODEL, describe=True))
    try:
        result = run_tool(str(call), "--url", server.url, "--multichannel", "--format", "vtt")
        streamed = run_tool(str(call), "--url", server.url, "--multichannel", "--stream")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    voices = [line.split(">")[0] for line in result.stdout.splitlines() if line.startswith("<v")]
    assert voices == ["<v A", "<v B"]
    assert (streamed.returncode, streamed.stderr) == (0, "")
    lines = streamed.stdout.splitlines()  # a line a piece, in the order the channels end them
    assert sorted(line[:10] for line in lines) == ["[A] Heard ", "[B] Heard "]


def test_json_is_the_default(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url)
    assert (result.returncode, result.stdout) == (0, f"{HEARD}\n")


def test_srt_prints_the_subtitle_file(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--format", "srt")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1\n00:00:")
    assert "Heard" in result.stdout


def test_vtt_prints_the_subtitle_file(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--format", "vtt")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("WEBVTT")
    assert "Heard" in result.stdout


def _lines(words: list[dict[str, Any]]) -> str:
    """What --words and --align print: a line per word, its start, end and text."""
    return "".join(f"{w['start']:9.3f} {w['end']:9.3f}  {w['word']}\n" for w in words)


def test_words_prints_a_line_per_word(live_server: LiveServer, clip: str) -> None:
    aligner = ThreadedServer(StandInAligner().app).start()
    server = LiveServer(StandIn(MODEL, describe=True), aligner_url=aligner.url)
    try:
        result = run_tool(clip, "--url", server.url, "--words")
    finally:
        server.stop()
        aligner.stop()
    assert result.returncode == 0, result.stderr
    # "Heard 2.10 s." is three words, spread by the stand-in aligner over the 2.1 s clip
    assert result.stdout == _lines(expected_words(0.0, 2.1, ["Heard", "210", "s"]))
    refused = run_tool(clip, "--url", live_server.url, "--words")  # no aligner there
    assert refused.returncode == 1
    assert "start it with --aligner" in refused.stderr


def test_align_prints_a_line_per_word_of_the_given_text(
    live_server: LiveServer, clip: str, tmp_path: Path
) -> None:
    text = tmp_path / "said.txt"
    text.write_text("Hello there, world.\n", encoding="utf-8")
    aligner = ThreadedServer(StandInAligner().app).start()
    server = LiveServer(StandIn(MODEL), aligner_url=aligner.url)
    try:
        result = run_tool(clip, "--url", server.url, "--align", str(text))
        srt = run_tool(clip, "--url", server.url, "--align", str(text), "--format", "srt")
    finally:
        server.stop()
        aligner.stop()
    assert result.returncode == 0, result.stderr
    assert result.stdout == _lines(expected_words(0.0, 2.1, ["Hello", "there", "world"]))
    assert result.stderr == "test-asr: the aligner placed 100% of the words\n"
    assert srt.stdout.startswith("1\n00:00:00,000 --> ")
    assert srt.stdout.endswith("\nHello there, world.\n\n")
    refused = run_tool(clip, "--url", live_server.url, "--align", str(text))  # no aligner
    assert refused.returncode == 1
    assert "--aligner" in refused.stderr


def test_verbose_json_prints_the_answer_pretty(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--format", "verbose_json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["task"] == "transcribe"
    assert answer["segments"]
    assert answer["segments"][0]["text"].strip().startswith("Heard")
    assert result.stdout.startswith('{\n  "')


@pytest.mark.parametrize("language", ["fr", "French", "FR"])
def test_a_forced_language(live_server: LiveServer, clip: str, language: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--language", language)
    assert (result.returncode, result.stdout, result.stderr) == (0, "Bonjour le monde.\n", "")


def test_stream_prints_the_same_text(live_server: LiveServer, clip: str) -> None:
    whole = run_tool(clip, "--url", live_server.url)
    streamed = run_tool(clip, "--url", live_server.url, "--stream")
    assert (streamed.returncode, streamed.stderr) == (0, "")
    assert streamed.stdout == whole.stdout == f"{HEARD}\n"
    assert last_request(live_server)["stream"] is True


def test_context_primes_a_chat_completion(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--context", "Hermes, oikos")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{HEARD}\n", "")
    request = last_request(live_server)
    system, user = request["messages"]
    assert system == {"role": "system", "content": "Hermes, oikos"}
    assert user["role"] == "user"
    assert {"type": "input_audio", "format": "wav"} in user["content"]
    assert request["audio"]["seconds"] == pytest.approx(2.1)
    assert "continue_final_message" not in request
    assert not request.get("stream")


def test_context_streams_with_a_forced_language(live_server: LiveServer, clip: str) -> None:
    result = run_tool(
        clip, "--url", live_server.url, "--context", "Paris", "--stream", "--language", "fr"
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "Bonjour le monde.\n", "")
    request = last_request(live_server)
    assert request["messages"][0] == {"role": "system", "content": "Paris"}
    assert request["messages"][-1] == {"role": "assistant", "content": "language French<asr_text>"}
    assert request["continue_final_message"] is True
    assert request["add_generation_prompt"] is False
    assert request["stream"] is True


def test_translate(live_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", live_server.url, "--translate")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{HEARD}\n", "")


def test_a_keyed_server_without_a_key(keyed_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", keyed_server.url)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", KEY_HINT)


def test_a_wrong_key(keyed_server: LiveServer, clip: str) -> None:
    result = run_tool(clip, "--url", keyed_server.url, "--api-key", "wrong")
    assert result.returncode == 1
    assert result.stderr.startswith("test-asr: error: the server refused the API key")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_good_key_works(keyed_server: LiveServer, clip: str, how: str) -> None:
    if how == "flag":
        result = run_tool(clip, "--url", keyed_server.url, "--api-key", "k")
    else:
        result = run_tool(clip, "--url", keyed_server.url, env={"QWEN_API_KEY": "k"})
    assert (result.returncode, result.stdout, result.stderr) == (0, "Hello world.\n", "")


def test_connection_refused_says_to_start_the_server(clip: str) -> None:
    port = free_port()
    result = run_tool(clip, "--url", f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr == (
        f"test-asr: error: cannot reach http://127.0.0.1:{port}: is the server running? "
        f"(start it with: python server.py --port {port} --model Qwen/Qwen3-ASR-1.7B)\n"
    )


def test_a_loading_model_says_to_retry(clip: str) -> None:
    dead_backend = f"http://127.0.0.1:{free_port()}"
    server = ThreadedServer(create_app(Settings(model=MODEL, backend_url=dead_backend))).start()
    try:
        result = run_tool(clip, "--url", server.url)
    finally:
        server.stop()
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "test-asr: error: the model is still loading; retry in a few seconds\n"
    )


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run_tool(str(tmp_path / "nope.wav"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr
    assert "nope.wav" in result.stderr


@pytest.mark.parametrize(
    "flags",
    [
        ["--translate", "--stream"],
        ["--translate", "--language", "fr"],
        ["--translate", "--context", "Hermes"],
        ["--stream", "--format", "srt"],
        ["--context", "Hermes", "--format", "verbose_json"],
        ["--language", "klingon"],
        ["--format", "docx"],
        ["--url", "localhost:8000"],
        ["--realtime", "--stream"],
        ["--realtime", "--format", "srt"],
        ["--realtime", "--translate"],
        ["--words", "--stream"],
        ["--words", "--format", "srt"],
        ["--words", "--context", "Hermes"],
        ["--speakers", "2", "--translate"],
        ["--speakers", "2", "--model", "whisper-1"],
        ["--speakers", "0"],
        ["--speakers", "2", "--multichannel"],
        ["--align", "missing.txt"],
        ["--align", "SELF", "--words"],
        ["--align", "SELF", "--stream"],
        ["--align", "SELF", "--format", "text"],
        ["--align", "SELF", "--speakers", "2"],
    ],
)
def test_bad_combinations_are_usage_errors(clip: str, flags: list[str]) -> None:
    result = run_tool(clip, *[clip if flag == "SELF" else flag for flag in flags])
    assert result.returncode == 2
    assert result.stdout == ""
    assert "error:" in result.stderr


def test_speakers_tells_the_diarizer_how_many_spoke(
    live_server: LiveServer, tmp_path: Path
) -> None:
    """Two voices: told one spoke, every cue is A's."""
    path = tmp_path / "talk.wav"
    path.write_bytes(conversation(2, 4, tmp_path, seed=1).wav())
    alone = run_tool(str(path), "--url", live_server.url, "--format", "srt", "--model", DIARIZE)
    told = run_tool(str(path), "--url", live_server.url, "--format", "srt", "--speakers", "1")
    assert (alone.returncode, told.returncode) == (0, 0)
    assert "[B]" in alone.stdout
    assert "[A]" in told.stdout
    assert "[B]" not in told.stdout


def test_a_garbage_file_gets_the_servers_message(live_server: LiveServer, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"this is not audio at all" * 40)
    result = run_tool(str(garbage), "--url", live_server.url)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("test-asr: error: The audio file could not be decoded")
    assert result.stderr.endswith(" (HTTP 400)\n")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("context", [[], ["--context", "Hermes"]])
def test_an_error_mid_stream_fails(clip: str, context: list[str]) -> None:
    server = LiveServer(StandIn(MODEL, describe=True, fail_after=4))
    try:
        result = run_tool(clip, "--url", server.url, "--stream", *context)
    finally:
        server.stop()
    assert result.returncode == 1
    assert result.stdout == "Heard\n"
    assert result.stderr.startswith("test-asr: error: ")
    assert result.stderr.count("\n") == 1


@pytest.fixture
def speech(tmp_path: Path) -> str:
    """An MP3 at 44.1 kHz: 1 s of speech, 0.8 s of silence, 1 s of speech (real speech: the
    Realtime VAD is Silero's)."""
    path = tmp_path / "call.mp3"
    pattern = [(0.3, False), (1.0, True), (0.8, False), (1.0, True)]
    path.write_bytes(encode(spoken(pattern, rate=44100), 44100, "mp3"))
    return str(path)


def test_realtime_prints_each_utterance_while_the_file_still_plays(speech: str) -> None:
    server = LiveServer(StandIn(MODEL, describe=True))
    try:
        tool = subprocess.Popen(
            [sys.executable, str(SCRIPT), speech, "--realtime", "--url", server.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert tool.stdout is not None
        first = tool.stdout.readline()
        # the second utterance has not reached the model yet: the file is still playing
        assert len(server.standin.requests) == 1
        rest, errors = tool.communicate(timeout=30)
    finally:
        server.stop()
    assert (tool.returncode, errors) == (0, "")
    lines = [first, *rest.splitlines(keepends=True)]
    assert len(lines) == 2
    for line in lines:  # 1 s of speech, from 300 ms before it to 150 ms after (one window's slack)
        assert line.startswith("Heard ")
        assert line.endswith(" s.\n")
        assert float(line.removeprefix("Heard ").removesuffix(" s.\n")) == pytest.approx(
            1.43, abs=0.1
        )


def test_realtime_with_a_keyed_server_and_no_key(keyed_server: LiveServer, speech: str) -> None:
    result = run_tool(speech, "--realtime", "--url", keyed_server.url)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", KEY_HINT)


def test_realtime_with_a_file_that_is_not_audio(live_server: LiveServer, tmp_path: Path) -> None:
    garbage = tmp_path / "notes.mp3"
    garbage.write_bytes(b"not audio at all " * 64)
    result = run_tool(str(garbage), "--realtime", "--url", live_server.url)
    assert result.returncode == 1
    assert result.stderr.startswith(f"test-asr: error: cannot decode {garbage}")


def test_progress_shows_the_pieces_done_of_planned_and_prints_the_text(
    live_server: LiveServer, tmp_path: Path
) -> None:
    """70 s of talk with pauses: the server cuts it into pieces, the bar counts them."""
    path = tmp_path / "long.mp3"
    path.write_bytes(
        encode(spoken([p for _ in range(7) for p in ((9.0, True), (1.0, False))]), 16000, "mp3")
    )
    plain = run_tool(str(path), "--url", live_server.url)
    shown = run_tool(str(path), "--url", live_server.url, "--progress")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == plain.stdout
    assert plain.stderr == ""  # not a terminal: no bar unless asked
    drawn = [line for line in shown.stderr.splitlines() if line]  # text mode reads \r as \n
    planned = int(drawn[-1].split("/")[1].split()[0])
    assert planned >= 3
    assert drawn[-1].startswith(f"pieces {planned}/{planned} [{'#' * 30}]")
    assert [line.split()[1] for line in drawn] == [
        f"{done}/{planned}" for done in range(1, planned + 1)
    ]
