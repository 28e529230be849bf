"""Progress on long work: pieces planned and done in the metrics and the log, and a stream's
`: progress k/N` comments, which OpenAI's SDK skips."""

from __future__ import annotations

import json
import logging

import pytest

from tests.fixtures import metrics
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness
from tests.fixtures.speech import spoken

# Eleven phrases, each a piece of its own when every pause of 300 ms ends one
PHRASES = encode(spoken([p for _ in range(11) for p in ((2.0, True), (0.8, False))]), 16000, "mp3")
EVERY_PAUSE = json.dumps({"type": "server_vad", "silence_duration_ms": 300})


async def metric(harness: Harness, name: str) -> float:
    return metrics.value((await harness.http.get("/metrics")).text, name)


async def counts(harness: Harness) -> tuple[float, float]:
    planned = await metric(harness, "qwen3_asr_pieces_planned_total")
    return planned, await metric(harness, "qwen3_asr_pieces_done_total")


async def test_a_long_json_request_counts_and_logs_its_pieces(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="qwen3_asr_server.progress")
    before = await counts(harness)
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("phrases.mp3", PHRASES)},
        data={"model": MODEL, "chunking_strategy": EVERY_PAUSE},
        headers={"X-Request-ID": "long-one"},
    )
    assert response.status_code == 200, response.text
    planned, done = (after - was for after, was in zip(await counts(harness), before, strict=True))
    assert planned == done == 11
    lines = [r.getMessage() for r in caplog.records if r.name == "qwen3_asr_server.progress"]
    assert lines[0].startswith("request_id=long-one pieces planned=11 audio_seconds=30.")
    assert lines[-1] == "request_id=long-one pieces done=11 of 11"
    assert len(lines) == 1 + 10  # one line per tenth: with 11 pieces, 10 of them cross one


async def test_a_stream_tells_its_progress_in_comments_the_sdk_skips(harness: Harness) -> None:
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("phrases.mp3", PHRASES)},
        data={"model": MODEL, "chunking_strategy": EVERY_PAUSE, "stream": "true"},
    )
    lines = [line for line in response.text.splitlines() if line]
    progress = [line for line in lines if line.startswith(":")]
    assert progress == [f": progress {done}/11" for done in range(1, 12)]
    assert lines[-1].startswith("data: ")
    assert '"transcript.text.done"' in lines[-1]
    assert lines.index(": progress 11/11") == len(lines) - 2  # the last piece, then done

    stream = await harness.sdk.audio.transcriptions.create(
        model=MODEL,
        file=("phrases.mp3", PHRASES),
        stream=True,
        chunking_strategy={"type": "server_vad", "silence_duration_ms": 300},
    )
    events = [event async for event in stream]
    assert len(events) > 11
    assert {event.type for event in events[:-1]} == {"transcript.text.delta"}
    assert events[-1].type == "transcript.text.done"
