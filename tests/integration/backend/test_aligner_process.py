"""`server.py --aligner`: Qwen3-ForcedAligner's vLLM launched beside the ASR one (both stand-ins
here), with its own port, readiness, restarts and shutdown."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from qwen3_asr_server.backend.launch import ALIGNER_ARCHITECTURE
from qwen3_asr_server.model.alignment import CHAT_TEMPLATE
from tests.fixtures.process import ServerProcess, gone, install_launcher
from tests.fixtures.speech import speech_wav

SPEECH = speech_wav(2.0)
ALIGNER = "org/aligner"
READY = {"status": "ok", "backend": "vllm", "device": "cuda", "restarts": 0}


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    install_launcher(tmp_path / "bin", "vllm")
    env = getattr(request, "param", {})
    process = ServerProcess(tmp_path, ["--model", "tiny", "--aligner", ALIGNER], env)
    yield process
    process.stop()


def _launched(server: ServerProcess) -> tuple[dict, dict]:
    """The starts of the ASR vLLM and the aligner's (the one run as a pooling model)."""
    starts = server.starts()
    [asr] = [start for start in starts if "--runner" not in start["argv"]]
    [aligner] = [start for start in starts if "--runner" in start["argv"]]
    return asr, aligner


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_aligner_runs_beside_vllm_and_times_words(server: ServerProcess) -> None:
    health = server.wait_for_health(200)
    assert health == {"model": "tiny", **READY, "aligner": READY}
    asr, aligner = _launched(server)
    argv = aligner["argv"]
    assert argv[1:3] == ["serve", ALIGNER]
    assert _flag(argv, "--runner") == "pooling"
    assert _flag(argv, "--hf-overrides") == ALIGNER_ARCHITECTURE
    # a hub id (not on disk yet) gets the released checkpoint's timestamp token
    pooler = json.loads(_flag(argv, "--pooler-config"))
    assert pooler == {"tok_pooling_type": "STEP", "step_tag_id": 151705}
    assert _flag(argv, "--chat-template") == CHAT_TEMPLATE
    assert _flag(argv, "--max-model-len") == "8192"
    assert _flag(argv, "--host") == "127.0.0.1"
    assert _flag(argv, "--port") != _flag(asr["argv"], "--port")
    # one GPU shared: each engine a share that leaves the other room
    assert _flag(argv, "--gpu-memory-utilization") == "0.15"
    assert _flag(asr["argv"], "--gpu-memory-utilization") == "0.75"

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    result = client.audio.transcriptions.create(
        model="tiny",
        file=("a.wav", SPEECH),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert result.text == "Hello world."
    assert result.words is not None
    assert [word.word for word in result.words] == ["Hello", "world"]
    assert result.segments is not None
    [segment] = result.segments
    assert (result.words[0].start, result.words[-1].end) == (segment.start, segment.end)
    # with an aligner, subtitle cues are word-timed too
    srt = client.audio.transcriptions.create(
        model="tiny", file=("a.wav", SPEECH), response_format="srt"
    )
    first, last = result.words[0].start, result.words[-1].end
    assert f"00:00:0{first:.3f} --> 00:00:0{last:.3f}".replace(".", ",") in srt

    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'qwen3_asr_model_ready{backend="aligner"} 1.0' in metrics
    assert 'qwen3_asr_model_ready{backend="asr"} 1.0' in metrics
    assert (
        f'qwen3_asr_backend_info{{backend="aligner",device="cuda",model_id="{ALIGNER}"}} 1.0'
        in (metrics)
    )
    output = server.output()
    assert f"vllm.aligner: INFO fake vLLM loading {ALIGNER}" in output
    assert "vLLM (aligner) ready" in output


def test_a_crashed_aligner_is_restarted_while_transcription_goes_on(
    server: ServerProcess,
) -> None:
    server.wait_for_health(200)
    _, aligner = _launched(server)
    os.kill(aligner["pid"], signal.SIGKILL)
    down = server.wait_for_health(503, timeout=10)
    assert down["status"] == "down"
    assert down["aligner"]["status"] == "down"
    url = f"{server.url}/v1/audio/transcriptions"
    words = {"response_format": "verbose_json", "timestamp_granularities[]": "word"}
    response = httpx.post(url, files={"file": ("a.wav", SPEECH)}, data=words)
    if response.status_code != 200:  # unless it came back in between
        assert response.status_code == 503
        assert "aligner" in response.json()["error"]["message"]
    plain = httpx.post(url, files={"file": ("a.wav", SPEECH)})
    assert plain.json()["text"] == "Hello world."
    health = server.wait_for_health(200, timeout=30)
    assert health["aligner"]["restarts"] == 1
    assert health["restarts"] == 0
    assert gone([aligner["child"]]), "the crashed aligner's engine child survived the restart"
    response = httpx.post(url, files={"file": ("a.wav", SPEECH)}, data=words)
    assert [word["word"] for word in response.json()["words"]] == ["Hello", "world"]
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'qwen3_asr_backend_restarts_total{backend="aligner"} 1.0' in metrics
    assert 'qwen3_asr_backend_restarts_total{backend="asr"} 0.0' in metrics
    assert "vLLM (aligner) exited with code -9" in server.output()


def test_sigterm_stops_both_process_groups(server: ServerProcess) -> None:
    server.wait_for_health(200)
    asr, aligner = _launched(server)
    server.proc.send_signal(signal.SIGTERM)
    assert server.wait_exit(timeout=40) == -signal.SIGTERM
    pids = [asr["pid"], asr["child"], aligner["pid"], aligner["child"]]
    assert gone(pids, timeout=2), "vLLM processes outlived the server"


@pytest.mark.parametrize("server", [{"FAKE_VLLM_ALIGNER_EXIT_AT_START": "1"}], indirect=True)
def test_an_aligner_that_cannot_start_ends_the_server_with_one_line(
    server: ServerProcess,
) -> None:
    assert server.wait_exit(timeout=40) == 1
    last_line = server.output().strip().splitlines()[-1]
    assert last_line.startswith("qwen3-asr-server: error: vLLM (aligner) exited with code 1")
    assert "CUDA out of memory" in last_line
    for start in server.starts():  # the ASR vLLM too
        assert gone([start["pid"], start["child"]])
