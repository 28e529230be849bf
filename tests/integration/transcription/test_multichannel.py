"""multichannel: each channel of a recording transcribed apart and merged by time, through
HTTP and the openai SDK, in front of the stand-in vLLM (which names each piece's length, so
that a segment tells which channel's speech it is)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import orjson
import pytest
from openai.types.audio import TranscriptionDiarized, TranscriptionVerbose

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.audio import pcm_wav, wav
from tests.fixtures.harness import MODEL, Harness, app_before
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
        ({"stream": "true"}, "stream"),
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
