"""multichannel: each channel of a recording transcribed apart and merged by time, through
HTTP and the openai SDK, in front of the stand-in vLLM (which names each piece's length, so
that a segment tells which channel's speech it is)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import orjson
import pytest
from openai import BaseModel
from openai.types.audio import (
    TranscriptionDiarized,
    TranscriptionTextDeltaEvent,
    TranscriptionTextDoneEvent,
    TranscriptionTextSegmentEvent,
    TranscriptionVerbose,
)

from qwen3_asr_server.app import create_app
from qwen3_asr_server.model.catalog import DIARIZE
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import pcm_wav, wav
from tests.fixtures.gated import settle
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import channels_wav, speech_wav
from tests.fixtures.standin import StandIn

# A call: the agent (left) speaks 2 s, then the customer (right) 3 s; 8 s in all
AGENT = [(0.5, False), (2.0, True), (5.5, False)]
CUSTOMER = [(4.0, False), (3.0, True), (1.0, False)]
SILENT = [(8.0, False)]
TRANSCRIPTIONS = "/v1/audio/transcriptions"


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with app_before(StandIn(MODEL, describe=True)) as started:
        yield started


async def _post(harness: Harness, audio: bytes, **fields: str | list[str]) -> dict[str, object]:
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("call.wav", audio, "audio/wav")},
        data={"model": MODEL, "multichannel": "true", **fields},
    )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_each_channel_is_transcribed_apart_and_merged_by_time(harness: Harness) -> None:
    answer = await harness.sdk.audio.transcriptions.create(
        model=MODEL,
        file=("call.wav", channels_wav(AGENT, CUSTOMER)),
        response_format="verbose_json",
        extra_body={"multichannel": True},
    )
    assert isinstance(answer, TranscriptionVerbose)
    segments = answer.segments or []
    channels = [(segment.model_extra or {})["channel"] for segment in segments]
    assert channels == [0, 1]
    agent, customer = segments
    assert agent.start < 1.0 < 3.0 < customer.start < 4.5 < 6.5 < customer.end
    assert agent.text.startswith("Heard 2.")
    assert customer.text.startswith("Heard 3.")
    assert answer.text == f"{agent.text}\n{customer.text}"  # a line a turn
    assert answer.duration == pytest.approx(8.0)
    assert [(segment.model_extra or {})["speaker"] for segment in segments] == ["A", "B"]


async def test_without_multichannel_the_channels_are_mixed(harness: Harness) -> None:
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("call.wav", channels_wav(AGENT, CUSTOMER), "audio/wav")},
        data={"model": MODEL, "response_format": "verbose_json"},
    )
    segments = response.json()["segments"]
    assert all("channel" not in segment for segment in segments)


async def test_diarized_json_names_the_channels_in_order(harness: Harness) -> None:
    answer = await harness.sdk.audio.transcriptions.create(
        model=DIARIZE,
        file=("call.wav", channels_wav(AGENT, CUSTOMER)),
        response_format="diarized_json",
        known_speaker_names=["agent", "customer"],
        extra_body={"multichannel": True},
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert [segment.speaker for segment in answer.segments] == ["agent", "customer"]
    assert [(segment.model_extra or {})["channel"] for segment in answer.segments] == [0, 1]
    assert [segment.id for segment in answer.segments] == ["seg_0", "seg_1"]


async def test_any_model_labels_channels_in_diarized_json(harness: Harness) -> None:
    body = await _post(harness, channels_wav(AGENT, CUSTOMER), response_format="diarized_json")
    TranscriptionDiarized.model_validate(body)
    assert [segment["speaker"] for segment in body["segments"]] == ["A", "B"]  # type: ignore[attr-defined]


async def test_subtitles_label_each_cue_with_its_channel(harness: Harness) -> None:
    names = {"known_speaker_names[]": ["Agent", "Customer"]}
    vtt = (await _vtt_or_srt(harness, "vtt", names)).splitlines()
    voices = [line.split(">")[0] for line in vtt if line.startswith("<v ")]
    assert voices == ["<v Agent", "<v Customer"]
    srt = await _vtt_or_srt(harness, "srt", {})
    labels = [line.split("]")[0] for line in srt.splitlines() if line.startswith("[")]
    assert labels == ["[A", "[B"]


async def _vtt_or_srt(harness: Harness, kind: str, names: dict[str, list[str]]) -> str:
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("call.wav", channels_wav(AGENT, CUSTOMER), "audio/wav")},
        data={"model": MODEL, "multichannel": "true", "response_format": kind, **names},
    )
    assert response.status_code == 200, response.text
    return response.text


async def test_a_silent_channel_sends_nothing_upstream(harness: Harness) -> None:
    assert harness.standin is not None
    body = await _post(harness, channels_wav(AGENT, SILENT), response_format="verbose_json")
    assert len(harness.standin.requests) == 1  # the agent's one utterance
    assert [segment["channel"] for segment in body["segments"]] == [0]  # type: ignore[attr-defined]
    text = await _post(harness, channels_wav(SILENT, SILENT))
    assert text["text"] == ""
    assert len(harness.standin.requests) == 1


async def test_mono_with_multichannel_is_channel_zero(harness: Harness) -> None:
    body = await _post(harness, speech_wav(2.0), response_format="verbose_json")
    TranscriptionVerbose.model_validate(body)
    assert [segment["channel"] for segment in body["segments"]] == [0]  # type: ignore[attr-defined]
    assert str(body["text"]).startswith("Heard 2.")
    assert (await _post(harness, wav(1.0)))["text"] == "Heard 1.00 s."  # json: as without


async def test_more_channels_than_the_limit_is_a_400_that_names_it(harness: Harness) -> None:
    nine = pcm_wav(bytes(2 * 9 * 16_000), channels=9)
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("nine.wav", nine, "audio/wav")},
        data={"model": MODEL, "multichannel": "true"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "too_many_channels"
    assert "at most 8" in error["message"]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"known_speaker_references[]": "data:audio/wav;base64,AAAA"}, "known_speaker_references"),
        ({"known_speaker_names[]": ["a", "a"]}, "known_speaker_names"),
    ],
)
async def test_what_multichannel_cannot_take_is_a_400(
    harness: Harness, fields: dict[str, str | list[str]], param: str
) -> None:
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("call.wav", channels_wav(AGENT, CUSTOMER), "audio/wav")},
        data={"model": MODEL, "multichannel": "true", **fields},
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"].startswith(param)


async def test_a_batch_line_with_multichannel_answers_with_channels(harness: Harness) -> None:
    sdk = harness.sdk
    call = await sdk.files.create(
        file=("call.wav", channels_wav(AGENT, CUSTOMER)), purpose="user_data"
    )
    body = {"file": call.id, "model": MODEL, "multichannel": True}
    line = {"custom_id": "call", "method": "POST", "url": TRANSCRIPTIONS,
            "body": {**body, "response_format": "verbose_json"}}  # fmt: skip
    source = await sdk.files.create(file=("in.jsonl", orjson.dumps(line)), purpose="batch")
    created = await sdk.batches.create(
        input_file_id=source.id,
        endpoint=TRANSCRIPTIONS,  # type: ignore[arg-type]
        completion_window="24h",
    )
    batch = await sdk.batches.retrieve(created.id)
    deadline = time.monotonic() + 60
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        assert time.monotonic() < deadline, batch
        await asyncio.sleep(0.1)
        batch = await sdk.batches.retrieve(created.id)
    assert batch.status == "completed", batch
    assert batch.output_file_id
    (output,) = (await sdk.files.content(batch.output_file_id)).text.splitlines()
    answer = orjson.loads(output)["response"]["body"]
    assert [segment["channel"] for segment in answer["segments"]] == [0, 1]
    assert [segment["speaker"] for segment in answer["segments"]] == ["A", "B"]


# Each channel speaks twice, the channels in turn: a call of four turns, 9 s in all
ASKS = [(0.5, False), (1.5, True), (3.0, False), (1.5, True), (2.5, False)]
ANSWERS = [(2.5, False), (1.5, True), (2.0, False), (2.0, True), (1.0, False)]


async def _streamed(harness: Harness, audio: bytes, **fields: str | list[str]) -> list[Any]:
    """The events of a multichannel stream, each read as OpenAI's model of its type."""
    response = await harness.http.post(
        TRANSCRIPTIONS,
        files={"file": ("call.wav", audio, "audio/wav")},
        data={"model": MODEL, "multichannel": "true", "stream": "true", **fields},
    )
    assert response.status_code == 200, response.text
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [_EVENTS[orjson.loads(line)["type"]].model_validate_json(line) for line in lines]


async def test_a_stream_sends_each_channels_segments_in_time_order(harness: Harness) -> None:
    call = channels_wav(ASKS, ANSWERS)
    names = ["agent", "customer"]
    asked: dict[str, Any] = {
        "model": MODEL,
        "file": ("call.wav", call),
        "response_format": "diarized_json",
        "known_speaker_names": names,
        "chunking_strategy": {"type": "server_vad", "silence_duration_ms": 500},  # each turn
        "extra_body": {"multichannel": True},
    }
    stream = await harness.sdk.audio.transcriptions.create(**asked, stream=True)
    *events, done = [event async for event in stream]
    assert isinstance(done, TranscriptionTextDoneEvent)
    segments = [event for event in events if isinstance(event, TranscriptionTextSegmentEvent)]
    by_channel = [[s for s in segments if _channel(s) == channel] for channel in (0, 1)]
    assert [len(each) for each in by_channel] == [2, 2]
    for channel, said in enumerate(by_channel):
        assert {segment.speaker for segment in said} == {names[channel]}
        assert said[0].end <= said[1].start  # a channel's pieces in its time order
    assert len({segment.id for segment in segments}) == 4
    deltas = [event for event in events if isinstance(event, TranscriptionTextDeltaEvent)]
    for segment in segments:
        own = [delta for delta in deltas if delta.segment_id == segment.id]
        assert {_channel(delta) for delta in own} == {_channel(segment)}
        assert "".join(delta.delta for delta in own).strip() == segment.text
    whole = await harness.sdk.audio.transcriptions.create(**asked)
    assert isinstance(whole, TranscriptionDiarized)
    assert done.text == whole.text
    assert done.text.count("\n") == 3  # four turns
    assert sorted(_said(segment) for segment in segments) == sorted(
        _said(segment) for segment in whole.segments
    )


async def test_a_json_stream_is_labelled_and_done_as_the_answer(harness: Harness) -> None:
    """Whatever the format, a multichannel stream tells the channels apart; its done text is
    the answer's, and its usage counts every channel's requests."""
    call = channels_wav(AGENT, CUSTOMER)
    events = await _streamed(harness, call)
    *said, done = events
    assert isinstance(done, TranscriptionTextDoneEvent)
    segments = [event for event in said if isinstance(event, TranscriptionTextSegmentEvent)]
    assert sorted((_channel(segment), segment.speaker) for segment in segments) == [
        (0, "A"),
        (1, "B"),
    ]
    assert len(harness.standin.requests) == 2
    assert done.text == (await _post(harness, call))["text"]
    *_, alone = await _streamed(harness, channels_wav(AGENT))  # as long, as many tokens
    assert done.usage is not None
    assert alone.usage is not None
    assert done.usage.total_tokens == 2 * alone.usage.total_tokens > 0


async def test_a_streamed_calls_logprobs_are_the_answers(harness: Harness) -> None:
    call = channels_wav(CUSTOMER, AGENT)  # the second channel speaks first
    logprobs = {"include[]": "logprobs", "chunking_strategy": "auto"}  # cut: "Heard 2.25 s."
    *said, done = await _streamed(harness, call, **logprobs)
    assert done.logprobs is not None
    streamed = [entry.model_dump() for entry in done.logprobs]
    assert streamed == (await _post(harness, call, **logprobs))["logprobs"]
    deltas = [entry.model_dump() for event in said if event.type == "transcript.text.delta"
              for entry in event.logprobs or ()]  # fmt: skip
    assert sorted(deltas, key=str) == sorted(streamed, key=str)  # the channels' in another order


async def test_a_silent_channel_streams_nothing_and_asks_nothing(harness: Harness) -> None:
    events = await _streamed(harness, channels_wav(AGENT, SILENT), response_format="diarized_json")
    *said, done = events
    assert {_channel(event) for event in said} == {0}
    assert len(harness.standin.requests) == 1
    assert isinstance(done, TranscriptionTextDoneEvent)
    assert done.text.startswith("Heard 2.")


async def test_a_stream_fails_as_a_mono_one_does() -> None:
    """Before any text, a backend's refusal is an HTTP error; after, an error event ends the
    stream, with no done."""
    async with app_before(StandIn(MODEL, fail_after=4)) as harness:  # dies after "Hello"
        response = await harness.http.post(
            TRANSCRIPTIONS,
            files={"file": ("call.wav", channels_wav(AGENT, CUSTOMER), "audio/wav")},
            data={"model": MODEL, "multichannel": "true", "stream": "true"},
        )
        lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        first, *_, last = [orjson.loads(line) for line in lines]
        assert (first["delta"], first["segment_id"]) == ("Hello", "seg_0")
        assert last["error"]["type"] == "server_error"
        assert all(orjson.loads(line).get("type") != "transcript.text.done" for line in lines)
        harness.app.state.asr.supervisor.upstream_model = "not-served-upstream"
        with pytest.raises(openai.APIStatusError) as caught:
            await harness.sdk.audio.transcriptions.create(
                model=MODEL,
                file=("call.wav", channels_wav(AGENT, CUSTOMER)),
                stream=True,
                extra_body={"multichannel": True},
            )
        assert caught.value.status_code == 502


def test_a_client_that_leaves_a_multichannel_stream_stops_every_channel() -> None:
    """Every channel's upstream stream is cancelled, and the audio's room given back: a call
    that did not fit beside it (a budget of 20 s, 16 s each) is served."""
    standin = StandIn(MODEL, piece_delay=0.5, text="One two three four five six seven eight.")
    backend = ThreadedServer(standin.app).start()
    settings = Settings(
        model=MODEL, backend_url=backend.url, audio_budget_seconds=20, queue_timeout=30
    )
    server = ThreadedServer(create_app(settings)).start()
    call = {"file": ("call.wav", channels_wav(AGENT, CUSTOMER))}
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            form = {"multichannel": "true", "stream": "true"}
            with client.stream("POST", TRANSCRIPTIONS, data=form, files=call) as response:
                assert response.status_code == 200
                next(line for line in response.iter_lines() if line.startswith("data: "))
            settle(lambda: standin.streams_broken == 2)
            assert standin.streams_broken == 2  # vLLM would stop generating, for each channel
            served = client.post(TRANSCRIPTIONS, data={"multichannel": "true"}, files=call)
            assert served.status_code == 200, served.text
    finally:
        server.stop()
        backend.stop()


def _channel(event: BaseModel) -> int:
    channel: int = (event.model_extra or {})["channel"]
    return channel


def _said(segment: BaseModel) -> tuple[int, float, float, str, str]:
    fields = segment.model_dump()
    return (_channel(segment), *(fields[key] for key in ("start", "end", "text", "speaker")))


_EVENTS: dict[str, type[BaseModel]] = {
    "transcript.text.delta": TranscriptionTextDeltaEvent,
    "transcript.text.segment": TranscriptionTextSegmentEvent,
    "transcript.text.done": TranscriptionTextDoneEvent,
}
