"""Chat completions, models, auth, health, metrics and the published schema through HTTP."""

from __future__ import annotations

import asyncio
import base64
import typing
from collections.abc import AsyncIterator
from typing import Literal

import openai
import pytest
from openai.types import AudioModel, AudioResponseFormat
from openai.types.audio import transcription_create_params, translation_create_params
from openai.types.realtime import AudioTranscription

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

AUDIO_B64 = base64.b64encode(wav(1.0)).decode()


def _audio_messages(context: str | None = None) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": context}] if context else []
    audio = {"type": "input_audio", "input_audio": {"data": AUDIO_B64, "format": "wav"}}
    return [*messages, {"role": "user", "content": [audio]}]


async def test_chat_answer_is_cleaned(harness: Harness) -> None:
    answer = await harness.sdk.chat.completions.create(
        model="qwen3-asr", messages=_audio_messages("Hermes, oikos")
    )
    assert answer.choices[0].message.content == "Hello world."
    assert answer.model == MODEL
    assert harness.standin.requests[-1]["messages"][0]["content"] == "Hermes, oikos"


async def test_chat_stream_is_cleaned_however_the_prefix_is_split(harness: Harness) -> None:
    stream = await harness.sdk.chat.completions.create(
        model="whisper-1",
        messages=_audio_messages(),
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces = []
    usage = None
    async for chunk in stream:
        usage = chunk.usage or usage
        pieces += [choice.delta.content or "" for choice in chunk.choices]
    assert "".join(pieces) == "Hello world."
    assert not any("language" in piece or "<asr_text>" in piece for piece in pieces)
    assert usage is not None
    assert usage.completion_tokens > 0


async def test_chat_stream_ends_with_done_sentinel(harness: Harness) -> None:
    body = {"model": MODEL, "messages": _audio_messages(), "stream": True}
    response = await harness.http.post("/v1/chat/completions", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line for line in response.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"


async def test_chat_with_client_prefill_passes_text_through(harness: Harness) -> None:
    messages = [*_audio_messages(), {"role": "assistant", "content": "language German<asr_text>"}]
    answer = await harness.sdk.chat.completions.create(
        model=MODEL,
        messages=messages,
        extra_body={"continue_final_message": True, "add_generation_prompt": False},
    )
    assert answer.choices[0].message.content == "Hallo Welt."


async def test_chat_upstream_400_is_translated(harness: Harness) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await harness.sdk.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "no audio here"}]
        )
    assert "audio" in caught.value.message
    body = caught.value.body
    assert isinstance(body, dict)
    assert body.get("code") is None or isinstance(body.get("code"), str)


@pytest.mark.parametrize(
    ("payload", "param"),
    [(b"{not json", None), (b"[1, 2]", None), (b'{"model": "qwen3-asr"}', "messages")],
)
async def test_chat_rejects_malformed_bodies(
    harness: Harness, payload: bytes, param: str | None
) -> None:
    response = await harness.http.post(
        "/v1/chat/completions", content=payload, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


def openai_transcription_models() -> set[str]:
    """Every transcription model id the openai package knows, REST and Realtime."""
    realtime = AudioTranscription.model_fields["model"].annotation
    literals = [arg for arg in typing.get_args(realtime) if typing.get_origin(arg) is Literal]
    return {*typing.get_args(AudioModel), *(v for lit in literals for v in typing.get_args(lit))}


async def test_models_lists_served_id_and_every_openai_transcription_model(
    harness: Harness,
) -> None:
    listed = [model.id async for model in harness.sdk.models.list()]
    assert listed[0] == MODEL
    assert listed[1] == "gpt-transcribe"
    assert set(listed[1:]) == openai_transcription_models()
    assert listed[-1] == "gpt-4o-transcribe-diarize"  # the served model with the diarizer
    assert len(listed) == len(set(listed))
    alias = await harness.sdk.models.retrieve("whisper-1")
    assert alias.id == "whisper-1"
    assert alias.owned_by == "qwen3-asr-server"
    with pytest.raises(openai.NotFoundError) as caught:
        await harness.sdk.models.retrieve("gpt-9")
    assert caught.value.code == "model_not_found"


# the diarizing model hears speech, which this tone is not (tests/integration/transcription/
# test_diarization.py drives it with voices)
@pytest.mark.parametrize(
    "model", sorted(openai_transcription_models() - {"gpt-4o-transcribe-diarize"})
)
async def test_every_openai_model_id_transcribes(harness: Harness, model: str) -> None:
    answer = await harness.sdk.audio.transcriptions.create(
        model=model, file=("clip.wav", wav(seconds=1.0))
    )
    assert answer.text


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK's translations
async def test_the_diarizing_model_is_a_400_where_no_speakers_are_labelled(
    harness: Harness,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await harness.sdk.audio.translations.create(
            model="gpt-4o-transcribe-diarize", file=("clip.wav", wav(seconds=1.0))
        )
    with pytest.raises(openai.BadRequestError) as chat:
        await harness.sdk.chat.completions.create(
            model="gpt-4o-transcribe-diarize",
            messages=[{"role": "user", "content": "hello"}],
        )
    for refused in (caught, chat):
        error = refused.value.body
        assert isinstance(error, dict)
        assert error["param"] == "model"
        assert "does not label speakers" in error["message"]
        assert "/v1/audio/transcriptions" in error["message"]
        assert refused.value.code == "unsupported_value"


async def test_model_ids_with_slashes_resolve(standin: tuple[StandIn, ThreadedServer]) -> None:
    fake, server = standin
    settings = Settings(model="Qwen/Qwen3-ASR-1.7B", backend_url=server.url)
    async for h in start_harness(settings, fake):
        card = await h.http.get("/v1/models/Qwen/Qwen3-ASR-1.7B")
        assert card.json()["id"] == "Qwen/Qwen3-ASR-1.7B"
        # the backend serves one model under another id: it is adopted, clients never see it
        result = await h.sdk.audio.transcriptions.create(
            model="Qwen/Qwen3-ASR-1.7B", file=("a.wav", wav(0.5))
        )
        assert result.text == "Hello world."


@pytest.fixture
async def keyed(standin: tuple[StandIn, ThreadedServer]) -> AsyncIterator[Harness]:
    fake, server = standin
    settings = Settings(model=MODEL, backend_url=server.url, api_key="s3cret")
    async for h in start_harness(settings, fake, api_key="s3cret"):
        yield h


async def test_api_key_is_required_and_checked(keyed: Harness) -> None:
    assert (await keyed.sdk.models.list()).data
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        response = await keyed.http.get("/v1/models", headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["type"] == "invalid_request_error"
    response = await keyed.http.post("/v1/audio/transcriptions", files={"file": ("a", b"x")})
    assert response.status_code == 401
    assert keyed.standin.requests == []
    assert (await keyed.http.get("/health")).status_code == 200
    assert (await keyed.http.get("/metrics")).status_code == 200


async def test_health_reports_ok_with_model_and_backend(harness: Harness) -> None:
    response = await harness.http.get("/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "model": MODEL,
        "backend": "remote",
        "device": "remote",
        "restarts": 0,
    }


async def test_metrics_count_requests_by_route_template(harness: Harness) -> None:
    await harness.http.get("/v1/models/whisper-1")
    await harness.http.get("/v1/models/gpt-9")
    await harness.http.get("/no/such/path")
    text = (await harness.http.get("/metrics")).text
    assert (
        'qwen3_asr_requests_total{method="GET",path="/v1/models/{model_id:path}",status="200"} 1.0'
        in text
    )
    assert 'path="/v1/models/{model_id:path}",status="404"} 1.0' in text
    assert 'qwen3_asr_requests_total{method="GET",path="unmatched",status="404"} 1.0' in text
    assert "qwen3_asr_request_duration_seconds_bucket" in text
    assert "qwen3_asr_requests_in_flight 1.0" in text  # this very request
    assert 'qwen3_asr_model_ready{backend="asr"} 1.0' in text
    assert 'qwen3_asr_backend_info{backend="asr",device="remote",model_id="qwen3-asr"} 1.0' in text
    assert 'qwen3_asr_backend_restarts_total{backend="asr"} 0.0' in text


async def test_backend_that_never_answers_is_loading_and_503() -> None:
    settings = Settings(model=MODEL, backend_url=f"http://127.0.0.1:{free_port()}")
    async for h in start_harness(settings):
        health = await h.http.get("/health")
        assert health.status_code == 503
        assert health.json()["status"] == "loading"
        response = await h.http.post("/v1/audio/transcriptions", files={"file": ("a", wav(0.2))})
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert response.json()["error"]["code"] == "backend_unavailable"
        assert 'qwen3_asr_model_ready{backend="asr"} 0.0' in (await h.http.get("/metrics")).text


async def test_backend_going_away_turns_health_down_and_requests_503(
    standin: tuple[StandIn, ThreadedServer],
) -> None:
    fake, server = standin
    async for h in start_harness(Settings(model=MODEL, backend_url=server.url), fake):
        server.stop()
        for _ in range(100):
            if (await h.http.get("/health")).status_code == 503:
                break
            await asyncio.sleep(0.05)
        health = await h.http.get("/health")
        assert health.status_code == 503
        assert health.json()["status"] == "down"
        # a request while it is known down is refused at once (one in flight as it went away
        # waits for it instead: test_piece_retries.py)
        response = await h.http.post("/v1/audio/transcriptions", files={"file": ("a", wav(0.2))})
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        # but the process is well: a liveness probe must not have it killed for this
        live = await h.http.get("/livez")
        assert (live.status_code, live.json()) == (200, {"status": "alive"})


async def test_slow_backend_is_a_504_after_request_timeout() -> None:
    fake = StandIn(MODEL, delay=3.0)
    server = ThreadedServer(fake.app).start()
    try:
        settings = Settings(model=MODEL, backend_url=server.url, request_timeout=0.5)
        async for h in start_harness(settings, fake):
            response = await h.http.post(
                "/v1/audio/transcriptions", files={"file": ("a", wav(0.2))}
            )
            assert response.status_code == 504
            assert response.json()["error"]["code"] == "backend_timeout"
    finally:
        server.stop()


async def test_unexpected_errors_are_500_in_openai_shape_with_request_id(
    harness: Harness,
) -> None:
    async def boom() -> None:
        raise RuntimeError("secret internals")

    harness.app.add_api_route("/boom", boom)
    response = await harness.http.get("/boom", headers={"x-request-id": "r-500"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "r-500"
    error = response.json()["error"]
    assert error["type"] == "server_error"
    assert "secret" not in error["message"]
    metrics = (await harness.http.get("/metrics")).text
    assert 'qwen3_asr_requests_total{method="GET",path="/boom",status="500"} 1.0' in metrics
    assert (await harness.http.get("/health")).status_code == 200


async def test_framework_validation_errors_are_400_naming_the_field(harness: Harness) -> None:
    async def typed(count: int) -> dict:
        return {"count": count}

    harness.app.add_api_route("/typed/{count}", typed)
    response = await harness.http.get("/typed/many")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "count"
    assert error["type"] == "invalid_request_error"


async def test_backend_api_key_is_sent_to_a_protected_backend() -> None:
    fake = StandIn(MODEL, api_key="backend-key")
    server = ThreadedServer(fake.app).start()
    try:
        without = Settings(model=MODEL, backend_url=server.url)
        async for h in start_harness(without, fake):
            response = await h.http.post(
                "/v1/audio/transcriptions", files={"file": ("a", wav(0.2))}
            )
            assert response.status_code == 502
            assert response.json()["error"]["code"] == "backend_auth_failed"
            assert "backend-key" not in response.text
        keyed = Settings(model=MODEL, backend_url=server.url, backend_api_key="backend-key")
        async for h in start_harness(keyed, fake):
            result = await h.sdk.audio.transcriptions.create(model=MODEL, file=("a", wav(0.2)))
            assert result.text == "Hello world."
    finally:
        server.stop()


async def test_chat_logprobs_match_the_cleaned_text(harness: Harness) -> None:
    completion = await harness.sdk.chat.completions.create(
        model=MODEL, messages=_audio_messages(), logprobs=True
    )
    choice = completion.choices[0]
    assert choice.logprobs is not None
    tokens = [entry.token for entry in choice.logprobs.content or []]
    assert "".join(tokens) == choice.message.content == "Hello world."
    stream = await harness.sdk.chat.completions.create(
        model=MODEL, messages=_audio_messages(), logprobs=True, stream=True
    )
    streamed = [
        entry.token
        async for chunk in stream
        for choice in chunk.choices
        for entry in (choice.logprobs.content or [] if choice.logprobs else [])
    ]
    assert "".join(streamed) == "Hello world."


async def test_the_schema_lists_the_audio_form_as_the_sdk_sends_it(harness: Harness) -> None:
    paths = (await harness.http.get("/openapi.json")).json()["paths"]

    def form(path: str) -> dict[str, typing.Any]:
        body = paths[path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
        assert body["required"] == ["file"]
        return {name.removesuffix("[]"): field for name, field in body["properties"].items()}

    sdk = set(transcription_create_params.TranscriptionCreateParamsBase.__annotations__)
    transcription = form("/v1/audio/transcriptions")
    beyond = {"stream", "multichannel", "min_speakers", "max_speakers"}  # not OpenAI's fields
    assert set(transcription) == sdk | beyond
    formats = set(typing.get_args(AudioResponseFormat))
    assert set(transcription["response_format"]["enum"]) == formats
    assert transcription["file"]["format"] == "binary"
    translation = form("/v1/audio/translations")
    assert set(translation_create_params.TranslationCreateParams.__annotations__) <= set(
        translation
    )
    assert not {"language", "languages", "stream"} & set(translation)
