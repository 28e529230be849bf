"""The chat request's checks, before vLLM sees the body."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from qwen3_asr_server.entrypoints.chat import protocol as chat
from qwen3_asr_server.entrypoints.chat.request import Request
from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model.catalog import Catalog

CATALOG = Catalog("qwen3-asr", [], 0)
CLOSED = Policy(CATALOG, 400, 1000)
OPEN = Policy(CATALOG, 400, 1000, allow_remote_audio_urls=True)
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}


def body(*parts: Any, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(parts or [AUDIO])}], **fields}


def refused(value: Any, policy: Policy = CLOSED) -> APIError:
    with pytest.raises(APIError) as caught:
        chat.read(value, policy)
    return caught.value


def test_a_good_body_is_read_and_left_as_it_is() -> None:
    sent = body(model="whisper-1", stream=True, logprobs=True, continue_final_message=True)
    request = chat.read(sent, CLOSED)
    assert (request.requested_model, request.stream, request.continue_final_message) == (
        "whisper-1",
        True,
        True,
    )
    assert request.messages is sent["messages"]  # not copied: it goes to vLLM as it is
    assert chat.read(body(model=7), CLOSED).requested_model is None


@pytest.mark.parametrize(
    ("value", "param"),
    [
        ([], None),
        ({"model": "x"}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": ["not a message"]}, "messages"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages"),
        (body({"type": "text", "text": 5}), "messages"),
        (body({"type": "input_audio", "input_audio": "wav"}), "messages"),
        (body({"type": "audio_url", "audio_url": {"url": ""}}), "messages"),
        (body(chat_template="{{ x }}"), "chat_template"),
        (body(chat_template_kwargs={}), "chat_template_kwargs"),
        (body(vllm_xargs={}), "vllm_xargs"),
        (body(n=64), "n"),
        (body({"type": "audio_embeds", "audio_embeds": "AAAA"}), "messages"),
        ({"messages": [{"role": "user", "content": "hi", "tool_calls": []}]}, "messages"),
    ],
)
def test_what_must_not_pass_is_a_400_naming_it(value: Any, param: str | None) -> None:
    error = refused(value)
    assert (error.status, error.param) == (400, param)


@pytest.mark.parametrize("url", ["http://10.0.0.1/a.wav", "file:///etc/passwd", "ftp://x/a"])
def test_media_urls_must_be_data_urls_unless_allowed(url: str) -> None:
    part = {"type": "audio_url", "audio_url": {"url": url}}
    assert refused(body(part)).code == "remote_audio_url_not_allowed"
    if url.startswith("http"):
        assert chat.read(body(part), OPEN).messages[0]["content"][0] == part
    else:
        assert refused(body(part), OPEN).code == "remote_audio_url_not_allowed"
    image = {"type": "image_url", "image_url": {"url": "http://10.0.0.1/a.png"}}
    assert refused(body(image), OPEN).code == "remote_audio_url_not_allowed"
    data = {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,UklGRg=="}}
    assert chat.read(body(data), CLOSED).messages[0]["content"][0] == data


def test_the_allow_list_follows_the_openai_sdk() -> None:
    """OpenAI's fields passed on and dropped are the SDK's; vLLM's own are not OpenAI's."""
    openai_fields = set(CompletionCreateParamsStreaming.__annotations__)
    assert chat.OPENAI_FIELDS - openai_fields == set()
    assert chat.DROPPED - openai_fields == set()
    assert chat.VLLM_FIELDS & openai_fields == set()


def test_dropped_fields_are_read_and_named() -> None:
    request = chat.read(body(store=False, metadata={"a": "b"}, top_k=3), CLOSED)
    assert request.dropped == ["store", "metadata"]
    assert chat.read(body(), CLOSED).dropped == []


def test_the_service_gets_a_plain_request_holding_the_body_itself() -> None:
    sent = body(model="whisper-1", stream=1, store=False, continue_final_message=None)
    asked = chat.read(sent, CLOSED).completion(sent)
    assert asked == Request(
        body=sent,
        requested_model="whisper-1",
        stream=True,
        continue_final_message=False,
        dropped=("store",),
    )
    assert asked.body is sent  # made ready for vLLM in place, as before
