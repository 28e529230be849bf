"""The Qwen3-ASR prompt, built as a vLLM chat request.

Qwen3-ASR reads an optional system turn as context (vocabulary, names), a user turn holding
the audio, and can be told the language by pre-filling the assistant turn with
`language French<asr_text>`. Sent through vLLM's chat endpoint this honours `language` and
`prompt` on every vLLM, including the older stack whose transcription endpoint ignores both
(vllm#33768).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pybase64

from .languages import Language
from .output import ASR_TEXT_TAG, CONTROL_TOKEN

MAX_KEYWORDS = 100
MAX_KEYWORD_CHARS = 100
AUDIO_TOKENS_PER_SECOND = 13  # Qwen3-ASR's encoder: 13 tokens per 100 mel frames (1 s)
TEMPLATE_TOKENS = 64  # the chat template's own tokens, generously
OUTPUT_TOKENS = 512  # room kept for the transcript of a full window

_PREFILL = re.compile(r"language [A-Za-z]+" + re.escape(ASR_TEXT_TAG))  # a forced language
# Message fields that carry media, not text: never rewritten.
_MEDIA_KEYS = frozenset({"type", "input_audio", "audio_url", "image_url", "video_url"})


def remove_control_tokens(text: str) -> str:
    """Remove ChatML control tokens and the `<asr_text>` tag; leave everything else as it is.

    vLLM tokenizes the rendered prompt with special tokens recognised, so `<|im_end|>` in a
    client's text would end its turn and let it write the prompt's structure. Repeated until
    nothing changes, so that `<|im<|x|>_end|>` cannot reassemble a token.
    """
    previous = None
    while previous != text:
        previous = text
        text = CONTROL_TOKEN.sub("", text).replace(ASR_TEXT_TAG, "")
    return text


def sanitize_context(text: str) -> str:
    """User-supplied context (`prompt`) without control tokens or surrounding whitespace."""
    return remove_control_tokens(text).strip()


def context(prompt: str | None, keywords: Sequence[str]) -> str | None:
    """The system turn: the client's prompt, then its keywords on a line of their own.

    Qwen3-ASR takes any text as context (a paragraph, a list of names); keywords are
    written as a comma-separated list, which it reads as vocabulary to expect.
    """
    parts = [
        sanitize_context(prompt or ""),
        ", ".join(filter(None, map(sanitize_context, keywords))),
    ]
    return "\n".join(part for part in parts if part) or None


def context_limit(max_model_len: int, window_seconds: float) -> int:
    """UTF-8 bytes of context that always fit beside a full window of audio and its
    transcript: Qwen's byte-level BPE never makes more tokens than there are bytes."""
    audio = AUDIO_TOKENS_PER_SECOND * int(window_seconds + 1)
    return max(0, max_model_len - audio - TEMPLATE_TOKENS - OUTPUT_TOKENS)


def context_too_long(size: int, limit: int) -> str:
    """The message for context over `context_limit`."""
    return (
        f"The prompt and keywords together are {size} bytes of UTF-8, more than the {limit} "
        "this server takes: the model's context (--max-model-len) must also hold the audio "
        "and its transcript. Shorten them."
    )


def sanitize_messages(messages: list[Any], continuing: bool) -> None:
    """Remove control tokens from the text of chat messages, in place, whatever the role.

    One exception: when the client continues the final message (`continue_final_message`)
    and it is an assistant turn starting with `language French<asr_text>`, that prefix stays:
    it is how clients force the language. Media parts are left alone.
    """
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        prefill = continuing and index == len(messages) - 1 and message.get("role") == "assistant"
        for key, value in message.items():
            if key == "content" and isinstance(value, list):
                message[key] = [
                    _sanitize_part(part, prefill and i == 0) for i, part in enumerate(value)
                ]
            elif key != "role" and isinstance(value, str):
                message[key] = _sanitize_text(value, prefill and key == "content")


def _sanitize_part(part: Any, prefill: bool) -> Any:
    if isinstance(part, str):
        return _sanitize_text(part, prefill)
    if isinstance(part, dict):
        for key, value in part.items():
            if key not in _MEDIA_KEYS and isinstance(value, str):
                part[key] = _sanitize_text(value, prefill)
    return part


def _sanitize_text(text: str, prefill: bool) -> str:
    forced = _PREFILL.match(text) if prefill else None
    if forced is None:
        return remove_control_tokens(text)
    return forced.group() + remove_control_tokens(text[forced.end() :])


def language_prefix(language: Language) -> str:
    return f"language {language.name}{ASR_TEXT_TAG}"


def transcription_request(
    *,
    model: str,
    audio: bytes,
    audio_format: str,
    language: Language | None,
    context: str | None,
    temperature: float,
) -> dict[str, Any]:
    """The chat-completions body that transcribes `audio`."""
    messages: list[dict[str, Any]] = []
    context = sanitize_context(context or "")
    if context:
        messages.append({"role": "system", "content": context})
    audio_part = {
        "type": "input_audio",
        "input_audio": {"data": pybase64.b64encode_as_string(audio), "format": audio_format},
    }
    messages.append({"role": "user", "content": [audio_part]})
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if language is not None:
        messages.append({"role": "assistant", "content": language_prefix(language)})
        body["continue_final_message"] = True
        body["add_generation_prompt"] = False
    return body
