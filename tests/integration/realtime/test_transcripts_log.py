"""A Realtime utterance finishes as an upload does: counted under its protocol, with its audio
seconds, and its text in the log with --log-transcripts, under the session's request id;
whether the chat path transcribed it or vLLM's own realtime endpoint did."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tests.fixtures import metrics
from tests.fixtures.harness import MODEL
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.integration.realtime.test_realtime import (
    PATTERN,
    TRANSCRIPTION,
    completed,
    heard,
    of,
    serving,
    session,
    stream,
    until,
)

TRANSCRIPTS = "qwen3_asr_server.transcripts"


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == TRANSCRIPTS]


def _metric(url: str, series: str) -> float:
    text = httpx.get(url.replace("ws://", "http://") + "/metrics", timeout=5).text
    return metrics.value(text, series, 0.0)


@pytest.mark.parametrize("vllm_realtime", [False, True])
async def test_each_utterance_is_logged_and_counted_under_realtime(
    vllm_realtime: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=TRANSCRIPTS)
    standin = StandIn(MODEL, describe=True, realtime=vllm_realtime)
    headers = {"x-request-id": "rt-session-1"}
    with serving(standin, log_transcripts=True, vllm_realtime=vllm_realtime) as url:
        async with session(url, additional_headers=headers) as ws:
            await stream(ws, spoken_pcm(PATTERN), pace=0.01 if vllm_realtime else 0.0)
            events = await until(ws, completed(2))
        counted = _metric(url, 'qwen3_asr_transcriptions_total{protocol="realtime"}')
        seconds = _metric(url, 'qwen3_asr_audio_seconds_total{protocol="realtime"}')
    transcripts = [e["transcript"] for e in of(events, TRANSCRIPTION + "completed")]
    assert len(transcripts) == 2
    assert _logged(caplog) == [
        f"request_id=rt-session-1 transcript={json.dumps(text)}" for text in transcripts
    ]
    assert counted == 2
    # the stand-in says how much audio it heard: the seconds counted are those
    assert seconds == pytest.approx(sum(heard(transcripts)), abs=0.05)
    if vllm_realtime:
        assert standin.requests == []  # through vLLM's endpoint, not the chat path
