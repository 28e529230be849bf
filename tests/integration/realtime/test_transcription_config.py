"""Realtime `audio.input.transcription` as current clients send it: the model checked against
the same catalogue as REST, keywords, languages, delay; and what the completed event says."""

from __future__ import annotations

from typing import Any

from openai.types.realtime import ConversationItemInputAudioTranscriptionCompletedEvent
from websockets.asyncio.client import ClientConnection

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.harness import MODEL
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.integration.realtime.test_realtime import (
    PATTERN,
    TRANSCRIPTION,
    completed,
    of,
    send,
    serving,
    session,
    stream,
    until,
)


async def update(ws: ClientConnection, transcription: dict[str, Any]) -> dict[str, Any]:
    """Send a GA session.update of `transcription`; the one event that answers it."""
    audio = {"input": {"transcription": transcription}}
    await send(ws, "session.update", session={"type": "transcription", "audio": audio})
    [answer] = await until(ws, lambda events: len(events) == 1)
    return answer


async def test_the_model_is_checked_against_the_catalogue() -> None:
    with serving() as url:
        async with session(url) as ws:
            good = await update(ws, {"model": "gpt-live-transcribe", "language": "en"})
            assert good["type"] == "session.updated"
            refused = await update(ws, {"model": "gpt-9", "language": "fr"})
            assert refused["type"] == "error"
            error = refused["error"]
            assert error["param"] == "session.audio.input.transcription.model"
            assert "gpt-9" in error["message"]
            assert error["code"] == "model_not_found"
            # the session kept its previous configuration: the model, and English
            again = await update(ws, {"prompt": "Qwen"})
            transcription = again["session"]["audio"]["input"]["transcription"]
            assert (transcription["model"], transcription["language"]) == (
                "gpt-live-transcribe",
                "en",
            )


async def test_the_beta_dialect_names_its_own_path() -> None:
    with serving() as url:
        async with session(url, "?intent=transcription") as ws:
            await send(
                ws,
                "transcription_session.update",
                session={"input_audio_transcription": {"model": "nope"}},
            )
            [refused] = await until(ws, lambda events: len(events) == 1)
    assert refused["error"]["param"] == "session.input_audio_transcription.model"


async def test_keywords_languages_and_delay_are_taken_and_echoed() -> None:
    standin = StandIn(MODEL)
    standin.heard = "German"
    with serving(standin) as url:
        async with session(url) as ws:
            answer = await update(
                ws,
                {
                    "model": "gpt-transcribe",
                    "prompt": "A talk.",
                    "keywords": ["Qwen", "vLLM"],
                    "languages": ["fr", "en"],
                    "delay": "low",
                },
            )
            echoed = answer["session"]["audio"]["input"]["transcription"]
            assert echoed["keywords"] == ["Qwen", "vLLM"]
            assert (echoed["languages"], echoed["delay"]) == (["fr", "en"], "low")
            await stream(ws, spoken_pcm(PATTERN[:3]))
            events = await until(ws, completed(1))
    [done] = of(events, TRANSCRIPTION + "completed")
    parsed = ConversationItemInputAudioTranscriptionCompletedEvent.model_validate(done)
    # German was heard, which the session did not list: transcribed again, in French
    assert parsed.transcript == "Bonjour le monde."
    assert [language.code for language in parsed.languages or []] == ["fr"]
    assert parsed.usage.type == "tokens"
    details = parsed.usage.input_token_details
    assert details is not None
    assert details.audio_tokens is not None
    assert details.audio_tokens > 0
    first, second = (request["messages"] for request in standin.requests)
    assert first[0] == {"role": "system", "content": "A talk.\nQwen, vLLM"}
    assert first[-1]["role"] == "user"
    assert second[-1] == {"role": "assistant", "content": "language French<asr_text>"}


async def test_bad_keywords_and_languages_are_error_events() -> None:
    with serving() as url:
        async with session(url) as ws:
            path = "session.audio.input.transcription"
            cases = [
                ({"keywords": "Qwen"}, f"{path}.keywords"),
                ({"keywords": ["k"] * 101}, f"{path}.keywords"),
                ({"keywords": ["y" * 100] * 40}, f"{path}.keywords"),
                ({"languages": ["fr", "xx"]}, f"{path}.languages"),
                ({"languages": ["fr", "de"], "language": "en"}, f"{path}.language"),
                ({"delay": "soon"}, f"{path}.delay"),
            ]
            for transcription, param in cases:
                refused = await update(ws, transcription)
                assert refused["type"] == "error", transcription
                assert refused["error"]["param"] == param


async def test_max_speakers_is_checked_and_echoed_on_the_diarizing_model() -> None:
    with serving() as url:
        async with session(url) as ws:
            param = "session.audio.input.transcription.max_speakers"
            for transcription in (
                {"model": DIARIZE, "max_speakers": 0},
                {"model": DIARIZE, "max_speakers": 21},
                {"model": DIARIZE, "max_speakers": "2"},
                {"max_speakers": 2},  # the session's model labels no speakers
            ):
                refused = await update(ws, transcription)
                assert refused["type"] == "error", transcription
                assert refused["error"]["param"] == param
            taken = await update(ws, {"model": DIARIZE, "max_speakers": 2})
            assert taken["session"]["audio"]["input"]["transcription"]["max_speakers"] == 2
