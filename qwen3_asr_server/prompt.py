"""The Qwen3-ASR prompt, built as a vLLM chat request.

Qwen3-ASR reads an optional system turn as context (vocabulary, names), a user turn holding
the audio, and can be told the language by pre-filling the assistant turn with
`language French<asr_text>`. Sent through vLLM's chat endpoint this honours `language` and
`prompt` on every vLLM, including the older stack whose transcription endpoint ignores both
(vllm#33768).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from .cleaning import ASR_TEXT_TAG
from .languages import Language

_CONTROL_TOKEN = re.compile(r"<\|[^|]*\|>")


def sanitize_context(text: str) -> str:
    """Remove ChatML control tokens and the `<asr_text>` tag from user-supplied context.

    Repeated until nothing changes, so that `<|im<|x|>_end|>` cannot reassemble a token.
    """
    previous = None
    while previous != text:
        previous = text
        text = _CONTROL_TOKEN.sub("", text).replace(ASR_TEXT_TAG, "")
    return text.strip()


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
        "input_audio": {"data": base64.b64encode(audio).decode("ascii"), "format": audio_format},
    }
    messages.append({"role": "user", "content": [audio_part]})
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if language is not None:
        messages.append({"role": "assistant", "content": language_prefix(language)})
        body["continue_final_message"] = True
        body["add_generation_prompt"] = False
    return body
