"""Fuzzing the HTTP surface: whatever arrives, no 5xx, and every error in OpenAI's shape.

Two halves:
- schemathesis, over the schema the server publishes at `/openapi.json`, the audio routes' form
  fields included. The chat route reads its JSON by hand, so FastAPI lists no request body for
  it; the fuzzed copy gets OpenAI's chat request, so that schemathesis sends bodies, and
  bodies that break them, too;
- hypothesis, by hand, where a schema cannot say enough: real and broken audio in forms with
  every field right, wrong, repeated, sent as a file or unknown, and chat bodies from valid to
  any JSON value at all.

The server runs for real on a loopback port (lifespan and all) in front of the stand-in
upstream, which answers a chat body it cannot make sense of as vLLM does, with a 400: a 5xx
here is always the proxy's own. Examples are derandomized: the same ones every run.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import Response

from qwen3_asr_server.app import create_app
from qwen3_asr_server.model.catalog import DIARIZE
from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.transcription.formats import FORMATS
from tests.fixtures.audio import wav
from tests.fixtures.broken_audio import corpus
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.standin import StandIn

FUZZ = settings(
    max_examples=50,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Success, the client's fault, an unknown model or route, a wrong method, a body too large,
# a JSON route's body not sent as JSON (httpx's `json=None` sends none).
# Never a 5xx: the stand-in upstream is up and answers everything it can read.
EXPECTED = {200, 400, 404, 405, 413, 415}
AUDIO_ROUTES = ("/v1/audio/transcriptions", "/v1/audio/translations")


class ForgivingStandIn(StandIn):
    """The stand-in, answering a chat body it cannot read with vLLM's 400 instead of a crash."""

    async def chat(self, request: Request) -> Response:
        try:
            return await super().chat(request)
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
            return self._error(400, f"Invalid request: {exc!r}")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    live = LiveServer(ForgivingStandIn(MODEL))
    yield live
    live.stop()


@pytest.fixture(scope="module")
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def assert_openai_error(body: bytes) -> None:
    """Exactly {"error": {"message": str, "type": str, "param": str|None, "code": str|None}}."""
    payload = json.loads(body)
    assert isinstance(payload, dict), payload
    assert set(payload) == {"error"}, payload
    error = payload["error"]
    assert isinstance(error, dict), payload
    assert set(error) == {"message", "type", "param", "code"}, payload
    assert isinstance(error["message"], str), payload
    assert error["message"], payload
    assert isinstance(error["type"], str), payload
    assert error["param"] is None or isinstance(error["param"], str), payload
    assert error["code"] is None or isinstance(error["code"], str), payload


def check_answer(response: httpx.Response) -> None:
    assert response.status_code in EXPECTED, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        assert_openai_error(response.content)


# --- schemathesis ------------------------------------------------------------------------

# OpenAI's request bodies, for operations the app publishes without one.
CHAT_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["messages"],
                "properties": {
                    "model": {"type": "string"},
                    "stream": {"type": "boolean"},
                    "temperature": {"type": "number"},
                    "messages": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["role", "content"],
                            "properties": {
                                "role": {"enum": ["system", "user", "assistant"]},
                                "content": {
                                    "anyOf": [
                                        {"type": "string"},
                                        {
                                            "type": "array",
                                            "items": {"$ref": "#/components/schemas/ChatPart"},
                                        },
                                    ]
                                },
                            },
                        },
                    },
                },
            }
        }
    },
}
CHAT_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"enum": ["text", "input_audio", "audio_url"]},
        "text": {"type": "string"},
        "input_audio": {
            "type": "object",
            "properties": {"data": {"type": "string"}, "format": {"enum": ["wav", "mp3"]}},
        },
        "audio_url": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
}

# Built at import, when pytest makes one test per operation, from an app that never starts.
OPENAPI = create_app(Settings(model=MODEL, backend_url="http://127.0.0.1:9")).openapi()
FUZZED = copy.deepcopy(OPENAPI)
FUZZED.setdefault("components", {}).setdefault("schemas", {})["ChatPart"] = CHAT_PART
FUZZED["paths"]["/v1/chat/completions"]["post"].setdefault("requestBody", CHAT_BODY)
schema = schemathesis.openapi.from_dict(FUZZED)


@schemathesis.check
def openai_error_shape(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> bool:
    """Every error answer is OpenAI's error object, nothing more, nothing less."""
    if response.status_code >= 400:
        assert_openai_error(response.content)
    return True


def test_the_schema_fuzzed_is_the_one_served(http: httpx.Client) -> None:
    assert http.get("/openapi.json").json() == OPENAPI


@schema.parametrize()
@FUZZ
def test_every_operation_of_the_schema(case: schemathesis.Case, server: LiveServer) -> None:
    response = case.call(base_url=server.url, timeout=10)
    case.validate_response(
        response, checks=[schemathesis.checks.not_a_server_error, openai_error_shape]
    )


# --- the audio form, by hand -------------------------------------------------------------

texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)


GOOD_AUDIO = [wav(0.3), wav(0.3, silent=True), wav(1.0, rate=44100)]
BROKEN_AUDIO = [case.data for case in corpus() if len(case.data) < 70_000]
FIELD_VALUES = {
    "model": st.sampled_from([MODEL, "whisper-1", "gpt-4o-transcribe", DIARIZE, "nope", ""])
    | texts,
    "language": st.sampled_from(["en", "fr", "French", "yue", "zz", "EN", " en "]) | texts,
    "prompt": texts,
    "response_format": st.sampled_from([*FORMATS, "JSON", ""]) | texts,
    "temperature": st.sampled_from(["0", "1", "0.5", "-0", "1.0000001", "nan", "inf", "1e-400"])
    | st.floats(allow_nan=True).map(str)
    | texts,
    "stream": st.sampled_from(["true", "false", "1", "0", "True", "yes", ""]) | texts,
    "timestamp_granularities[]": st.sampled_from(["segment", "word", "Segment"]) | texts,
    "include[]": st.sampled_from(["logprobs", "logprob"]) | texts,
}


@st.composite
def audio_forms(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Multipart parts: (name, str) for a field, (name, (filename, bytes, content type)) for a
    file; in any order, each field missing, once, or (lists) twice, some unknown ones too, and
    any value: near the valid ones, or anything at all."""
    parts: list[tuple[str, Any]] = []
    if draw(st.booleans()):
        content = draw(st.sampled_from(GOOD_AUDIO + BROKEN_AUDIO) | st.binary(max_size=2048))
        parts.append(("file", (draw(texts), content, draw(st.sampled_from(["audio/wav", ""])))))
    for name, values in FIELD_VALUES.items():
        for _ in range(draw(st.integers(0, 2 if name.endswith("[]") else 1))):
            parts.append((name, draw(values)))
    for _ in range(draw(st.integers(0, 2))):  # fields nobody asked for
        parts.append((draw(texts), draw(texts)))
    if draw(st.booleans()):  # a text field sent as a file
        parts.append((draw(st.sampled_from(sorted(FIELD_VALUES))), ("field.txt", b"json", "")))
    return draw(st.permutations(parts))


@st.composite
def valid_audio_forms(draw: st.DrawFn, translation: bool) -> list[tuple[str, Any]]:
    """Forms every field of which is right, alone and together, in any order and spelling."""
    padded = st.sampled_from(["{}", " {} ", "{}\n"])
    # speakers (diarized_json) come from the diarizing model, which translations do not take
    kinds = [name for name, entry in FORMATS.items() if not (translation and entry.speakers)]
    response_format = draw(st.sampled_from(kinds))
    parts: list[tuple[str, Any]] = [("response_format", response_format)]
    parts.append(("file", (draw(texts), draw(st.sampled_from(GOOD_AUDIO)), "audio/wav")))
    models = [MODEL, "whisper-1", "gpt-4o-mini-transcribe", *([] if translation else [DIARIZE])]
    if FORMATS[response_format].speakers:
        parts.append(("model", DIARIZE))
    optional = {
        "model": st.sampled_from(models),
        "prompt": texts,
        "temperature": st.floats(0, 1).map(str) | st.sampled_from(["0", "1", "-0", "1e-9"]),
        "timestamp_granularities[]": st.just("segment"),
        "keywords[]": st.sampled_from(["Hermes", "Qwen3-ASR", "oikos, agora"]),
        "chunking_strategy": st.just("auto"),
    }
    if not translation:
        optional["language"] = st.sampled_from(["en", "fr", "French", "yue", "EN", "Cantonese"])
    if response_format == "json":
        optional["include[]"] = st.just("logprobs")
        if not translation:
            optional["stream"] = st.sampled_from(["true", "false", "1", "0", "True"])
    for name, values in optional.items():
        if name == "model" and FORMATS[response_format].speakers:
            continue
        if draw(st.booleans()):
            parts.append((name, draw(padded).format(draw(values))))
    for _ in range(draw(st.integers(0, 2))):  # fields nobody asked for are ignored
        parts.append((draw(st.sampled_from(["user", "x"])), draw(texts)))
    return draw(st.permutations(parts))


BOUNDARY = "fuzz-7MA4YWxkTrZu0gW"


def _quote(name: str) -> str:
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _multipart(parts: list[tuple[str, Any]]) -> bytes:
    """Encode the parts by hand: httpx would not send a form without a file as multipart."""
    body = b""
    for name, value in parts:
        head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{_quote(name)}"'
        if isinstance(value, tuple):
            filename, content, kind = value
            head += f'; filename="{_quote(filename)}"'
            head += f"\r\nContent-Type: {kind}" if kind else ""
        else:
            content = value.encode()
        body += head.encode() + b"\r\n\r\n" + content + b"\r\n"
    return body + f"--{BOUNDARY}--\r\n".encode()


def _check_success(parts: list[tuple[str, Any]], response: httpx.Response) -> None:
    """A 200 is in the format asked for (the last value of a field is the one read)."""
    fields = {name: value.strip() for name, value in parts if isinstance(value, str)}
    asked = fields.get("response_format") or "json"
    kind = response.headers["content-type"]
    if fields.get("stream", "").lower() in ("true", "1"):
        assert kind.startswith("text/event-stream"), kind
        assert "transcript.text.done" in response.text
    elif asked in ("json", "verbose_json", "diarized_json"):
        assert isinstance(response.json()["text"], str)
    else:
        assert kind.startswith(
            {"text": "text/plain", "srt": "application/x-subrip"}.get(asked, "text/vtt")
        ), kind


def _post_form(http: httpx.Client, route: str, parts: list[tuple[str, Any]]) -> httpx.Response:
    kind = f"multipart/form-data; boundary={BOUNDARY}"
    return http.post(route, content=_multipart(parts), headers={"content-type": kind})


@pytest.mark.parametrize("route", AUDIO_ROUTES)
@FUZZ
@given(data=st.data())
def test_valid_audio_forms_succeed(http: httpx.Client, route: str, data: st.DataObject) -> None:
    parts = data.draw(valid_audio_forms(translation=route.endswith("translations")))
    response = _post_form(http, route, parts)
    assert response.status_code == 200, response.text
    _check_success(parts, response)


@pytest.mark.parametrize("route", AUDIO_ROUTES)
@FUZZ
@given(parts=audio_forms())
def test_any_audio_form(http: httpx.Client, route: str, parts: list[tuple[str, Any]]) -> None:
    response = _post_form(http, route, parts)
    check_answer(response)
    if response.status_code == 200:
        _check_success(parts, response)


# --- the chat body, by hand --------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
WAV_B64 = base64.b64encode(wav(0.3)).decode()
valid_audio_parts = st.sampled_from(
    [
        {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": WAV_B64}},
        {"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,{WAV_B64}"}},
    ]
)
# An optional system turn with the context, then the user's turn with the audio.
valid_chat_bodies = st.fixed_dictionaries(
    {
        "messages": st.builds(
            lambda system, parts: [*system, {"role": "user", "content": parts}],
            st.lists(
                st.builds(lambda text: {"role": "system", "content": text}, texts), max_size=1
            ),
            st.lists(valid_audio_parts, min_size=1, max_size=1),
        )
    },
    optional={
        "model": st.sampled_from([MODEL, "whisper-1"]),
        "stream": st.booleans(),
        "temperature": st.floats(0, 2),
        "max_tokens": st.integers(1, 100),
        "logprobs": st.booleans(),
        "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
    },
)
any_parts = st.one_of(
    valid_audio_parts,
    st.builds(lambda text: {"type": "text", "text": text}, texts),
    st.dictionaries(
        st.sampled_from(["type", "text", "input_audio", "audio_url"]), json_values, max_size=3
    ),
    json_values,
)
any_messages = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["system", "user", "assistant", "tool"]) | json_values,
            "content": texts | st.lists(any_parts, max_size=3) | json_values,
        },
    )
    | json_values,
    max_size=3,
)
any_chat_bodies = st.one_of(
    st.fixed_dictionaries(
        {"messages": any_messages},
        optional={
            "model": st.sampled_from([MODEL, "whisper-1", "nope"]) | json_values,
            "stream": json_values,
            "continue_final_message": json_values,
            "temperature": json_values,
        },
    ),
    json_values,
)


def _check_chat_success(body: dict[str, Any], response: httpx.Response) -> None:
    """A 200 is a completion, or a stream of chunks, of the stand-in's transcript of a tone,
    the language prefix cleaned off."""
    if body.get("stream"):
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.text.split("\n") if line]
        assert lines.pop() == "data: [DONE]"
        events = [json.loads(line.removeprefix("data: ")) for line in lines]
        deltas = [choice["delta"] for event in events for choice in event["choices"]]
        text = "".join(delta.get("content") or "" for delta in deltas)
    else:
        text = response.json()["choices"][0]["message"]["content"]
    assert text == "Hello world."


@FUZZ
@given(body=valid_chat_bodies)
def test_valid_chat_bodies_succeed(http: httpx.Client, body: dict[str, Any]) -> None:
    response = http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    _check_chat_success(body, response)


@FUZZ
@given(body=any_chat_bodies)
def test_any_chat_body(http: httpx.Client, body: Any) -> None:
    response = http.post("/v1/chat/completions", json=body)
    check_answer(response)
    if response.status_code == 200:
        _check_chat_success(body, response)


@FUZZ
@given(raw=st.binary(max_size=512) | texts.map(str.encode))
def test_any_chat_bytes(http: httpx.Client, raw: bytes) -> None:
    response = http.post(
        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    check_answer(response)


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000,  # nesting deeper than the parser recurses
        b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"messages": [{"role": "user", "content": NaN}]}',
        b'{"messages": [{"role": {}, "content": ""}]}',  # an unhashable role
        b"\xef\xbb\xbf{}",  # a byte-order mark
        b'{"messages": [], "messages": [{"role": "user", "content": "x"}]}',
        b"Infinity",
    ],
    ids=["deep-array", "deep-messages", "nan", "dict-role", "bom", "duplicate-key", "infinity"],
)
def test_hostile_chat_bodies(http: httpx.Client, raw: bytes) -> None:
    response = http.post(
        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    check_answer(response)
