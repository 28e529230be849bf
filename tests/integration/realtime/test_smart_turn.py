"""`--smart-turn`: semantic_vad sessions ask the end-of-turn model at each pause, and every
verdict is counted; server VAD sessions never ask it. What it answers on synthetic speech is
close to chance (docs: Performance), so these tests hold what a user observes whatever the
verdict: each turn is transcribed once, whole, and the judgements are there in /metrics."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from qwen3_asr_server.errors import LaunchError
from qwen3_asr_server.speech.turn_end import model_path
from tests.fixtures import metrics
from tests.fixtures.process import ServerProcess
from tests.fixtures.speech import spoken_pcm
from tests.integration.realtime.test_realtime import (
    TRANSCRIPTION,
    completed,
    of,
    send,
    serving,
    session,
    stream,
    until,
)

try:
    model_path()
except LaunchError:  # the floors' environment holds no pipecat-ai
    pytest.skip("pipecat-ai (extra [turn]) is not installed", allow_module_level=True)

# Two turns, each 1.5 s of speech then 2.5 s of silence: longer than any eagerness waits.
TURNS = [(0.5, False), (1.5, True), (2.5, False), (1.5, True), (2.5, False)]


async def judgements(url: str) -> dict[str, float]:
    async with httpx.AsyncClient() as http:
        text = (await http.get(url.replace("ws://", "http://") + "/metrics")).text
    return metrics.by_label(text, "qwen3_asr_realtime_turn_judgements_total", "verdict")


async def turns_of(url: str, vad: dict[str, str]) -> list[dict[str, object]]:
    async with session(url) as ws:
        audio = {"input": {"turn_detection": vad}}
        await send(ws, "session.update", session={"type": "transcription", "audio": audio})
        await stream(ws, spoken_pcm(TURNS))
        return await until(ws, completed(2))


async def test_semantic_vad_asks_the_model_at_each_pause_and_counts_its_verdicts() -> None:
    with serving(smart_turn=True) as url:
        events = await turns_of(url, {"type": "semantic_vad", "eagerness": "low"})
        counted = await judgements(url)
    assert len(of(events, TRANSCRIPTION + "completed")) == 2
    assert len(of(events, "input_audio_buffer.committed")) == 2
    [updated] = of(events, "session.updated")
    vad = updated["session"]["audio"]["input"]["turn_detection"]
    assert vad == {"type": "semantic_vad", "eagerness": "low"}
    # each turn's pause was judged once at least (at most once per pause heard)
    assert sum(counted.values()) >= 2


async def test_server_vad_never_asks_the_model() -> None:
    with serving(smart_turn=True) as url:
        events = await turns_of(url, {"type": "server_vad"})
        counted = await judgements(url)
    assert len(of(events, TRANSCRIPTION + "completed")) == 2
    assert counted == {"complete": 0.0, "incomplete": 0.0}


def test_a_missing_model_file_stops_the_server_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "smart-turn.onnx"
    args = ["--smart-turn", "--smart-turn-model", str(missing)]
    server = ServerProcess(tmp_path, [*args, "--backend-url", "http://127.0.0.1:9"])
    assert server.wait_exit(timeout=60) == 1
    last_line = server.output().strip().splitlines()[-1]
    assert last_line == f"qwen3-asr-server: error: the end-of-turn model {missing} is not a file"
