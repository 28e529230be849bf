"""What a chat request may carry to vLLM (`entrypoints.chat.protocol`): the fields this server
understands pass on as they are, OpenAI's account bookkeeping is dropped with a warning, anything
else (vLLM's internals, `n` above 1, content parts that are not text or audio) is a 400 naming
it, and nothing of such a request reaches vLLM. Driven over HTTP and with the openai SDK."""

from __future__ import annotations

import base64
import logging
from typing import Any

import openai
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness

CHAT = "/v1/chat/completions"
AUDIO = {"data": base64.b64encode(wav(0.5)).decode(), "format": "wav"}
INPUT_AUDIO = {"type": "input_audio", "input_audio": AUDIO}
DATA_URL = f"data:audio/wav;base64,{AUDIO['data']}"


def _messages(*parts: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(parts or [INPUT_AUDIO])}]


def _body(*parts: Any, **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": _messages(*parts), **fields}


def _error(response: Any, param: str, code: str) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    message: str = error["message"]
    return message


# vLLM's fields this server does not pass on: what issue 44 found reaching vLLM, what would
# take more than one answer's work or another client's cache, and what reshapes the output
NOT_FORWARDED: list[tuple[str, Any]] = [
    ("kv_transfer_params", {"do_remote_prefill": True, "remote_host": "10.0.0.1"}),
    ("logits_processors", ["my.module.Processor"]),
    ("vllm_xargs", {"anything": 1}),
    ("ec_transfer_params", {}),
    ("use_beam_search", True),
    ("best_of", 64),
    ("priority", -100),
    ("request_id", "someone-elses-id"),
    ("cache_salt", "x" * 43),
    ("structured_outputs", {"regex": ".*"}),
    ("guided_regex", ".*"),
    ("response_format", {"type": "json_object"}),
    ("prompt_logprobs", 20),
    ("truncate_prompt_tokens", 1),
    ("ignore_eos", True),
    ("tools", [{"type": "function", "function": {"name": "f"}}]),
    ("mm_processor_kwargs", {"sampling_rate": 8000}),
    ("pad", "x"),
]


@pytest.mark.parametrize(("field", "value"), NOT_FORWARDED, ids=[f for f, _ in NOT_FORWARDED])
async def test_a_field_this_server_does_not_understand_is_a_400_naming_it(
    harness: Harness, field: str, value: Any
) -> None:
    for stream in (False, True):
        response = await harness.http.post(CHAT, json=_body(stream=stream, **{field: value}))
        message = _error(response, field, "unknown_parameter")
        assert f"'{field}'" in message
        assert "repetition_penalty" in message  # it says what is passed on
    assert harness.standin is not None
    assert harness.standin.requests == []


async def test_every_unknown_field_is_named(harness: Harness) -> None:
    body = _body(vllm_xargs={}, temperature=0, kv_transfer_params={})
    message = _error(await harness.http.post(CHAT, json=body), "vllm_xargs", "unknown_parameter")
    assert "'vllm_xargs', 'kv_transfer_params'" in message
    assert harness.standin is not None
    assert harness.standin.requests == []


SAMPLING = {
    # OpenAI's
    "temperature": 0.2,
    "top_p": 0.9,
    "max_tokens": 200,
    "max_completion_tokens": 200,
    "seed": 7,
    "stop": ["\n\n"],
    "presence_penalty": 0.1,
    "frequency_penalty": 0.1,
    "logit_bias": {"11": -5},
    "logprobs": True,
    "top_logprobs": 2,
    "n": 1,
    "user": "caller-7",
    # vLLM's, for speech recognition
    "top_k": 5,
    "min_p": 0.05,
    "repetition_penalty": 1.1,
    "min_tokens": 1,
}


@pytest.mark.parametrize("stream", [False, True])
async def test_sampling_fields_reach_vllm_as_they_were_sent(harness: Harness, stream: bool) -> None:
    extra = {"stream_options": {"include_usage": True}} if stream else {}
    response = await harness.http.post(CHAT, json=_body(stream=stream, **SAMPLING, **extra))
    assert response.status_code == 200, response.text
    assert harness.standin is not None
    received = harness.standin.requests[-1]
    assert {key: received.get(key) for key in SAMPLING} == SAMPLING
    if stream:
        assert received["stream_options"] == {"include_usage": True}
        assert response.text.endswith("data: [DONE]\n\n")
    else:
        assert response.json()["choices"][0]["message"]["content"] == "Hello world."


@pytest.mark.parametrize("n", [64, 2, 0, -1, "1", 1.0, True, [1]])
async def test_n_other_than_1_is_refused_before_it_takes_a_slot(harness: Harness, n: Any) -> None:
    for stream in (False, True):
        response = await harness.http.post(CHAT, json=_body(n=n, stream=stream))
        assert "'n' must be 1" in _error(response, "n", "unsupported_value")
    assert harness.standin is not None
    assert harness.standin.requests == []
    assert (await harness.http.post(CHAT, json=_body(n=1))).status_code == 200
    assert (await harness.http.post(CHAT, json=_body(n=None))).status_code == 200


BAD_PARTS: list[Any] = [
    {"type": "audio_embeds", "audio_embeds": "AAAA"},
    {"audio_embeds": "AAAA"},  # no type: vLLM reads the part by its key
    {"type": "image_embeds", "image_embeds": "AAAA"},
    {"type": "image_pil", "image_pil": None},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
    {"type": "input_text", "text": "hi"},
    {"type": "refusal", "refusal": "no"},
    {"type": "file", "file": {"file_data": "AAAA"}},
    {"type": ["input_audio"], "input_audio": AUDIO},
    {"text": "a typeless text part, which vLLM refuses"},
    # a known type with more beside it: with a `uuid`, vLLM reads the part by its keys
    {"type": "input_audio", "input_audio": AUDIO, "uuid": "x", "audio_embeds": "AAAA"},
    {"type": "input_audio", "input_audio": AUDIO, "uuid": "another-clients-audio"},
    {"type": "audio_url", "audio_url": {"url": DATA_URL}, "audio_embeds": "AAAA"},
    {"type": "text", "text": "hi", "input_audio": AUDIO},
    {"input_audio": AUDIO, "audio_url": {"url": DATA_URL}},
]


@pytest.mark.parametrize("part", BAD_PARTS)
async def test_a_content_part_that_is_not_text_or_audio_is_a_400_naming_messages(
    harness: Harness, part: Any
) -> None:
    response = await harness.http.post(CHAT, json=_body(INPUT_AUDIO, part))
    assert "messages[0].content[1]" in _error(response, "messages", "invalid_value")
    assert harness.standin is not None
    assert harness.standin.requests == []


@pytest.mark.parametrize(
    "extra",
    [
        {"tool_calls": [{"id": "1", "type": "function", "function": {"name": "f"}}]},
        {"reasoning_content": "<|im_start|>system"},
        {"tools": [{"type": "function"}]},
        {"audio_embeds": "AAAA"},
    ],
)
async def test_a_message_is_its_role_content_and_name(
    harness: Harness, extra: dict[str, Any]
) -> None:
    messages = [{"role": "assistant", "content": "before", **extra}, *_messages()]
    response = await harness.http.post(CHAT, json={"model": MODEL, "messages": messages})
    assert f"'{next(iter(extra))}'" in _error(response, "messages", "invalid_value")
    assert harness.standin is not None
    assert harness.standin.requests == []
    named = [{"role": "system", "content": "Hermes", "name": "ops"}, *_messages()]
    assert (await harness.http.post(CHAT, json={"messages": named})).status_code == 200


async def test_typeless_audio_parts_pass_as_vllm_reads_them(harness: Harness) -> None:
    for part in ({"input_audio": AUDIO}, {"audio_url": {"url": DATA_URL}}):
        response = await harness.http.post(CHAT, json=_body(part))
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == "Hello world."


async def test_openai_account_fields_are_dropped_with_one_warning(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="qwen3_asr_server.entrypoints.chat")
    bookkeeping = {
        "metadata": {"session": "s-1"},
        "store": False,
        "service_tier": "auto",
        "safety_identifier": "user-hash",
        "prompt_cache_key": "k",
        "prompt_cache_retention": "24h",
    }
    response = await harness.http.post(CHAT, json=_body(temperature=0, **bookkeeping))
    assert response.status_code == 200, response.text
    assert harness.standin is not None
    received = harness.standin.requests[-1]
    assert not set(bookkeeping) & set(received)
    assert received["temperature"] == 0
    warnings = [r for r in caplog.records if r.name == "qwen3_asr_server.entrypoints.chat.service"]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert all(field in warnings[0].getMessage() for field in bookkeeping)


async def test_the_openai_sdk_with_typical_arguments(harness: Harness) -> None:
    assert harness.standin is not None
    answer = await harness.sdk.chat.completions.create(
        model="whisper-1",
        messages=[
            {"role": "system", "content": "Hermes, oikos"},
            {"role": "user", "content": [INPUT_AUDIO]},
        ],
        temperature=0,
        top_p=1,
        max_completion_tokens=256,
        seed=1,
        stop=["<|endoftext|>"],
        n=1,
        user="u-1",
        logprobs=True,
        top_logprobs=1,
        metadata={"call": "c-1"},  # dropped
        store=False,  # dropped
        extra_body={"top_k": 1, "repetition_penalty": 1.05},
    )
    assert answer.choices[0].message.content == "Hello world."
    sent = harness.standin.requests[-1]
    assert (sent["top_k"], sent["repetition_penalty"], sent["seed"]) == (1, 1.05, 1)
    assert not {"metadata", "store"} & set(sent)

    stream = await harness.sdk.chat.completions.create(
        model=MODEL,
        messages=_messages(),
        stream=True,
        stream_options={"include_usage": True},
        temperature=0,
        max_tokens=256,
        extra_body={"min_p": 0.1},
    )
    pieces, usage = [], None
    async for chunk in stream:
        usage = chunk.usage or usage
        pieces += [choice.delta.content or "" for choice in chunk.choices]
    assert "".join(pieces) == "Hello world."
    assert usage is not None
    assert harness.standin.requests[-1]["min_p"] == 0.1

    with pytest.raises(openai.BadRequestError) as refused:
        await harness.sdk.chat.completions.create(
            model=MODEL,
            messages=_messages(),
            n=64,
        )
    assert (refused.value.code, refused.value.param) == ("unsupported_value", "n")
    with pytest.raises(openai.BadRequestError) as unknown:
        await harness.sdk.chat.completions.create(
            model=MODEL,
            messages=_messages(),
            extra_body={"kv_transfer_params": {"do_remote_decode": True}},
        )
    assert (unknown.value.code, unknown.value.param) == ("unknown_parameter", "kv_transfer_params")
    assert len(harness.standin.requests) == 2
