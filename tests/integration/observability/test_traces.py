"""Traces, as an operator's collector receives them over OTLP/HTTP: a transcription is one
trace from the front door into the engine (the client's `traceparent` continued, vLLM given
its engine span's); a long recording's pieces are engine requests of their own under its cut;
a Realtime utterance is a span inside its session; a batch line is a trace of its own, linked
to the request that made its batch; and a collector that cannot take them changes no answer,
and costs a counted drop and one warning line."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.fixtures import metrics
from tests.fixtures.audio import wav
from tests.fixtures.collector import Collector, Seen
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.speech import channels_wav, speech_wav, spoken_pcm
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_projects import ENDPOINT, line
from tests.integration.realtime.test_realtime import (
    completed,
    send,
    serving,
    session,
    stream,
    until,
)

TRANSCRIBE = "POST /v1/audio/transcriptions"
ENGINE = "POST /v1/chat/completions"


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # batches sent at once, not every 5 s
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    found = Collector()
    yield found
    found.stop()


def named(spans: list[Seen], name: str) -> list[Seen]:
    return [span for span in spans if span.name == name]


def ancestors(spans: list[Seen], span: Seen) -> list[str]:
    """The names of `span`'s parents, nearest first."""
    by_id = {each.span_id: each for each in spans}
    found = []
    while span.parent in by_id:
        span = by_id[span.parent]
        found.append(span.name)
    return found


def _dropped(server: LiveServer) -> float:
    shown = httpx.get(f"{server.url}/metrics").text
    return metrics.value(shown, "qwen3_asr_trace_spans_dropped_total")


def post(server: LiveServer, audio: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("a.wav", audio)},
        data={"model": MODEL, "response_format": "verbose_json"},
        headers=headers,
        timeout=60,
    )


def test_a_transcription_is_one_trace_from_the_clients_span_into_the_engine(
    collector: Collector,
) -> None:
    standin = StandIn(MODEL)
    server = LiveServer(standin, otlp_traces_endpoint=collector.url)
    try:
        trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
        answer = post(server, speech_wav(1.0), traceparent=f"00-{trace_id}-{parent}-01")
        assert answer.status_code == 200
        spans = collector.wait(lambda seen: bool(named(seen, TRANSCRIBE)))
    finally:
        server.stop()
    (front,) = named(spans, TRANSCRIBE)
    assert (front.trace_id, front.parent, front.kind) == (trace_id, parent, "server")
    assert front.service == "qwen3-asr-server"
    assert front.attributes["http.route"] == "/v1/audio/transcriptions"
    assert front.attributes["http.response.status_code"] == 200
    assert front.attributes["qwen3_asr.request_id"] == answer.headers["x-request-id"]
    assert front.attributes["qwen3_asr.audio_seconds"] == 1.0
    (engine,) = named(spans, ENGINE)
    assert (engine.trace_id, engine.kind) == (trace_id, "client")
    assert TRANSCRIBE in ancestors(spans, engine)
    # vLLM's own span of the request goes under the engine span
    (sent,) = [each["traceparent"] for each in standin.requests]
    assert sent == f"00-{trace_id}-{engine.span_id}-01"
    assert engine.events == ["engine awake, slot taken"]  # its wait for a slot, over
    (render,) = named(spans, "render")
    assert render.parent == front.span_id
    assert render.attributes["qwen3_asr.response_format"] == "verbose_json"
    assert named(spans, "decode") == []  # a small plain WAV is read at once
    assert all(span.trace_id == trace_id for span in spans)


def test_a_streamed_answers_engine_span_lasts_until_its_last_piece(collector: Collector) -> None:
    server = LiveServer(StandIn(MODEL, piece_delay=0.2), otlp_traces_endpoint=collector.url)
    try:
        with httpx.stream(
            "POST",
            f"{server.url}/v1/audio/transcriptions",
            files={"file": ("a.wav", speech_wav(1.0))},
            data={"model": MODEL, "stream": "true"},
            timeout=60,
        ) as answer:
            deltas = [line for line in answer.iter_lines() if "transcript.text.delta" in line]
        spans = collector.wait(lambda seen: bool(named(seen, TRANSCRIBE)))
    finally:
        server.stop()
    (engine,) = named(spans, ENGINE)
    assert len(deltas) >= 2
    # the stand-in waits 0.2 s before each piece it streams: the span is vLLM's whole answer,
    # not its first byte
    assert engine.end - engine.start >= len(deltas) * 0.2 * 1e9
    assert engine.end <= named(spans, TRANSCRIBE)[0].end


def test_a_stream_vllm_refuses_has_its_engine_span_ended(collector: Collector) -> None:
    server = LiveServer(StandIn(MODEL, refuse="no"), otlp_traces_endpoint=collector.url)
    try:
        answer = httpx.post(
            f"{server.url}/v1/audio/transcriptions",
            files={"file": ("a.wav", speech_wav(1.0))},
            data={"model": MODEL, "stream": "true"},
            timeout=60,
        )
        spans = collector.wait(lambda seen: bool(named(seen, TRANSCRIBE)))
    finally:
        server.stop()
    assert answer.status_code == 400
    (engine,) = named(spans, ENGINE)  # a span is sent only once it has ended
    assert engine.events[-1] == "exception"


def test_a_long_recordings_pieces_are_engine_requests_under_its_trace(
    collector: Collector,
) -> None:
    talk = [(0.5, False), (20.0, True), (1.5, False), (20.0, True), (1.5, False), (20.0, True)]
    server = LiveServer(StandIn(MODEL), otlp_traces_endpoint=collector.url)
    try:
        assert post(server, channels_wav(talk)).status_code == 200
        spans = collector.wait(lambda seen: bool(named(seen, TRANSCRIBE)))
    finally:
        server.stop()
    (front,) = named(spans, TRANSCRIBE)
    (plan,) = named(spans, "plan the cut")
    assert plan.parent == front.span_id
    (decode,) = named(spans, "decode")  # 2 MB: decoded in a thread
    assert decode.parent == front.span_id
    assert decode.attributes["qwen3_asr.audio_seconds"] == pytest.approx(63.5, abs=0.01)
    pieces = plan.attributes["qwen3_asr.pieces"]
    assert pieces >= 3
    engine = named(spans, ENGINE)
    assert len(engine) == pieces
    assert all(TRANSCRIBE in ancestors(spans, each) for each in engine)
    assert {span.trace_id for span in spans} == {front.trace_id}  # a new trace: no traceparent


def test_a_collector_that_refuses_changes_no_answer_and_is_said_once(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    collector.refusing = True
    server = LiveServer(StandIn(MODEL), otlp_traces_endpoint=collector.url)
    try:
        with caplog.at_level(logging.WARNING, "qwen3_asr_server.observability.otel"):
            for _ in range(5):
                answer = post(server, speech_wav(1.0))
                assert answer.status_code == 200
                assert answer.json()["text"]
            deadline = time.monotonic() + 30
            while not (dropped := _dropped(server)):
                assert time.monotonic() < deadline, "no span was counted as dropped"
                time.sleep(0.2)
    finally:
        server.stop()
    assert dropped > 0
    said = [r for r in caplog.records if r.name == "qwen3_asr_server.observability.otel"]
    assert len(said) == 1
    assert "spans dropped" in said[0].getMessage()
    assert collector.spans == []


def test_a_batch_line_is_a_trace_of_its_own_linked_to_the_request_that_made_it(
    collector: Collector,
) -> None:
    server = LiveServer(StandIn(MODEL), otlp_traces_endpoint=collector.url)
    try:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="-", max_retries=0)
        clip = client.files.create(file=("a.wav", wav(1.0)), purpose="user_data")
        source = client.files.create(file=("in.jsonl", line("a", clip.id)), purpose="batch")
        batch = client.batches.create(
            input_file_id=source.id,
            endpoint=ENDPOINT,  # type: ignore[arg-type]
            completion_window="24h",
        )
        spans = collector.wait(lambda seen: bool(named(seen, "batch line")))
    finally:
        server.stop()
    (made,) = named(spans, "POST /v1/batches")
    (answered,) = named(spans, "batch line")
    assert answered.parent == ""  # a root: the line ran long after its request ended
    assert answered.trace_id != made.trace_id
    assert answered.links == [(made.trace_id, made.span_id)]
    assert answered.attributes["qwen3_asr.batch_id"] == batch.id
    (engine,) = named(spans, ENGINE)
    assert "batch line" in ancestors(spans, engine)


async def test_a_realtime_utterance_is_a_span_inside_its_session(collector: Collector) -> None:
    with serving(StandIn(MODEL, describe=True), otlp_traces_endpoint=collector.url) as url:
        async with session(url) as ws:
            vad_off = {"type": "transcription", "audio": {"input": {"turn_detection": None}}}
            await send(ws, "session.update", session=vad_off)
            await until(ws, lambda events: len(events) == 1)
            await stream(ws, spoken_pcm([(1.0, True), (1.0, False)]))
            await send(ws, "input_audio_buffer.commit")
            await until(ws, completed(1))
        spans = await asyncio.to_thread(
            collector.wait, lambda seen: bool(named(seen, "GET /v1/realtime"))
        )
    (session_span,) = named(spans, "GET /v1/realtime")
    assert session_span.kind == "server"
    assert session_span.attributes["http.response.status_code"] == 101
    (spoken,) = named(spans, "utterance")
    assert spoken.parent == session_span.span_id
    assert spoken.attributes["qwen3_asr.protocol"] == "realtime"
    assert spoken.attributes["qwen3_asr.audio_seconds"] == pytest.approx(2.0, abs=0.01)
    (engine,) = named(spans, ENGINE)
    assert "utterance" in ancestors(spans, engine)
