"""stream=true: OpenAI's transcript.text.delta / .done events, against both upstream styles."""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import httpx
import openai
import pytest

from qwen3_asr_server.app import create_app
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import wav
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn

CLIP = wav(3.0)
# 70 s of phrases and pauses: several pieces, streamed concurrently
PHRASES = (9.0, 12.0, 7.0, 14.0, 10.0, 11.0)
LONG = encode(spoken([p for s in PHRASES for p in ((s, True), (1.0, False))]), 16000, "mp3")


async def _events(harness: Harness, **form: str) -> list[dict[str, Any]]:
    """The raw SSE events of one streamed transcription."""
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("clip.wav", form.pop("audio", CLIP))},
        data={"stream": "true", **form},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "[DONE]" not in response.text
    return [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]


async def test_the_sdk_iterates_typed_deltas_and_one_done(harness: Harness) -> None:
    stream = await harness.sdk.audio.transcriptions.create(
        model="gpt-4o-transcribe", file=("clip.wav", CLIP), stream=True
    )
    events = [event async for event in stream]
    *deltas, done = events
    assert deltas
    assert {event.type for event in deltas} == {"transcript.text.delta"}
    assert done.type == "transcript.text.done"
    assert "".join(event.delta for event in deltas) == done.text == "Hello world."
    assert done.usage is not None
    assert done.usage.type == "tokens"
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens > 0


@pytest.mark.parametrize("style", ["modern", "legacy"])
async def test_no_prefix_reaches_a_delta_however_it_is_split(style: str) -> None:
    async with app_before(StandIn(MODEL, style, by_character=True)) as harness:
        events = await _events(harness)
        deltas = [event["delta"] for event in events[:-1]]
        assert "".join(deltas) == events[-1]["text"] == "Hello world."
        assert not any(set("<>\n") & set(delta) or "language" in delta for delta in deltas)
        forced = await _events(harness, language="fr")
        assert forced[-1]["text"] == "Bonjour le monde."


async def test_silence_streams_only_an_empty_done(harness: Harness) -> None:
    events = await _events(harness, audio=wav(2.0, silent=True))
    assert events == [
        {
            "type": "transcript.text.done",
            "text": "",
            "languages": [],
            "usage": {
                "type": "tokens",
                "input_tokens": 0,
                "output_tokens": 0,
                "total_tokens": 0,
                "input_token_details": {"audio_tokens": 0, "text_tokens": 0},
            },
        }
    ]
    assert harness.standin.requests == []


async def test_long_audio_streams_piece_by_piece_in_order() -> None:
    async with app_before(StandIn(MODEL, delay=0.1, describe=True, piece_delay=0.01)) as harness:
        verbose = await harness.sdk.audio.transcriptions.create(
            model=MODEL, file=("long.mp3", LONG), response_format="verbose_json"
        )
        expected = " ".join(segment.text for segment in verbose.segments or [])
        assert expected.count("Heard") >= 3
        harness.standin.max_in_flight = 0
        events = await _events(harness, audio=LONG)
        assert "".join(event["delta"] for event in events[:-1]) == events[-1]["text"] == expected
        assert harness.standin.max_in_flight > 1  # the pieces were transcribed concurrently


async def test_a_backend_dying_mid_stream_ends_it_with_an_error_event() -> None:
    # it dies after "language", " English", "<asr_text>", "Hello"
    async with app_before(StandIn(MODEL, fail_after=4)) as harness:
        events = await _events(harness)
        assert events[0] == {"type": "transcript.text.delta", "delta": "Hello"}
        assert events[-1]["error"]["type"] == "server_error"
        assert not any(event.get("type") == "transcript.text.done" for event in events)
        stream = await harness.sdk.audio.transcriptions.create(
            model=MODEL, file=("clip.wav", CLIP), stream=True
        )
        with pytest.raises(openai.APIError):
            async for _ in stream:
                pass


async def test_a_backend_refusing_at_once_is_an_http_error(harness: Harness) -> None:
    harness.app.state.asr.supervisor.upstream_model = "not-served-upstream"
    with pytest.raises(openai.APIStatusError) as caught:
        await harness.sdk.audio.transcriptions.create(
            model=MODEL, file=("clip.wav", CLIP), stream=True
        )
    assert caught.value.status_code == 502


async def test_logprobs_cover_the_text_tokens_only(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("clip.wav", CLIP), include=["logprobs"]
    )
    assert result.logprobs is not None
    assert "".join(entry.token or "" for entry in result.logprobs) == result.text
    assert all((entry.logprob or 0) < 0 for entry in result.logprobs)
    assert [entry.bytes for entry in result.logprobs] == [
        list((entry.token or "").encode()) for entry in result.logprobs
    ]
    events = await _events(harness, **{"include[]": "logprobs"})
    streamed = [entry for event in events[:-1] for entry in event["logprobs"]]
    assert streamed == events[-1]["logprobs"]
    assert "".join(entry["token"] for entry in streamed) == events[-1]["text"]


def _hang_up_after_first_event(base_url: str, path: str, **request: Any) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        deadline = time.monotonic() + 10
        while client.get("/health").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        with client.stream("POST", path, **request) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and '"content":""' not in line.replace(" ", ""):
                    return  # the first text: now hang up


@pytest.mark.parametrize("route", ["transcriptions", "chat"])
def test_a_client_that_leaves_cancels_the_upstream_request(route: str) -> None:
    standin = StandIn(MODEL, piece_delay=0.3)
    backend = ThreadedServer(standin.app).start()
    server = ThreadedServer(create_app(Settings(model=MODEL, backend_url=backend.url))).start()
    try:
        if route == "chat":
            audio = {"data": base64.b64encode(CLIP).decode(), "format": "wav"}
            content = [{"type": "input_audio", "input_audio": audio}]
            body = {"stream": True, "messages": [{"role": "user", "content": content}]}
            _hang_up_after_first_event(server.url, "/v1/chat/completions", json=body)
        else:
            _hang_up_after_first_event(
                server.url,
                "/v1/audio/transcriptions",
                files={"file": ("clip.wav", CLIP)},
                data={"stream": "true"},
            )
        deadline = time.monotonic() + 10
        while standin.streams_broken == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert standin.streams_broken == 1  # vLLM would stop generating
    finally:
        server.stop()
        backend.stop()


async def test_a_ten_minute_file_streams_whole_and_in_order() -> None:
    minute = encode(
        spoken([p for s in PHRASES[:5] for p in ((s, True), (1.0, False))]), 16000, "mpeg"
    )
    async with app_before(StandIn(MODEL, describe=True)) as harness:
        stream = await harness.sdk.audio.transcriptions.create(
            model=MODEL, file=("ten-minutes.mp3", minute * 10), stream=True
        )
        *deltas, done = [event async for event in stream]
        assert done.type == "transcript.text.done"
        assert "".join(event.delta for event in deltas) == done.text
        heard = [float(value) for value in re.findall(r"Heard (\d+\.\d\d) s\.", done.text)]
        assert len(heard) == len(harness.standin.requests) >= 20
        verbose = await harness.sdk.audio.transcriptions.create(
            model=MODEL, file=("ten-minutes.mp3", minute * 10), response_format="verbose_json"
        )
        lengths = [segment.end - segment.start for segment in verbose.segments or []]
        assert heard == pytest.approx(lengths, abs=0.011)  # every piece, in the audio's order
