"""The chat request (POST /v1/chat/completions): what this server checks in it before vLLM
sees it. The body goes on to vLLM as it is (cleaned of control tokens, `prompt`), so it may
hold only what this server understands: the fields in `FORWARDED` (OpenAI's that matter to
speech recognition, and vLLM's sampling fields that do), messages with a role, content and
name, and content parts that are text or audio. Anything else is a 400 naming it, so that
nothing vLLM would act on unchecked (`kv_transfer_params`, `vllm_xargs`, `audio_embeds`,
`n=64` in one admission slot...) reaches it. The one exception, `DROPPED`: OpenAI's account
bookkeeping, which agent frameworks configured for OpenAI send and which changes no
transcript, is taken out with a warning rather than refused.

Media URLs must be `data:` URLs (vLLM would fetch any other, from inside the network it runs
in) unless `--allow-remote-audio-urls`, media parts must have the shape vLLM expects, roles
must be known, and no template may come with the request: it would bypass the cleaning.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from ...errors import APIError, invalid
from ..protocol import fields
from .request import Request

# The roles chat templates know; the role is rendered into the prompt as it is.
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
URL_KINDS = ("audio_url", "image_url", "video_url")  # media parts vLLM fetches from a URL
REMOTE_SCHEMES = frozenset({"http", "https"})
# The part types Qwen3-ASR reads; a tuple, as `in` meets a client's value, maybe unhashable
PART_KINDS = ("text", "input_audio", "audio_url")
TYPELESS_KINDS = ("input_audio", "audio_url")  # vLLM reads a part without a type by its key
MESSAGE_KEYS = frozenset({"role", "content", "name"})  # vLLM renders others (tool_calls...)

# OpenAI's chat fields that matter to a transcript, passed on to vLLM as they are (vLLM checks
# their values). `n` only as 1: one answer per request, one admission slot.
OPENAI_FIELDS = frozenset(
    {
        "messages",
        "model",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "logprobs",
        "top_logprobs",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "n",
        "user",
    }
)
# vLLM's own fields that make sense for speech recognition: sampling, and the two that let a
# client pre-fill the language (`language French<asr_text>` continued).
VLLM_FIELDS = frozenset(
    {
        "top_k",
        "min_p",
        "repetition_penalty",
        "min_tokens",
        "add_generation_prompt",
        "continue_final_message",
    }
)
FORWARDED = OPENAI_FIELDS | VLLM_FIELDS
# OpenAI's account bookkeeping: no effect on a transcript. LiveKit Agents' OpenAI plugin sends
# each that its user configured, Pipecat's OpenAI service `service_tier`. Were they refused,
# an agent set up for OpenAI could not be pointed here; they are taken out, with a warning.
DROPPED = frozenset(
    {
        "metadata",
        "store",
        "service_tier",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
    }
)
# vLLM extensions that change how the prompt is rendered: refused with their own reason
TEMPLATE_FIELDS = frozenset({"chat_template", "chat_template_kwargs"})


class _Messages(fields.Checked):
    def check(self, value: Any, info: ValidationInfo) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise invalid("'messages' must be a non-empty array.", "messages")
        check_messages(value, fields.policy(info).allow_remote_audio_urls)
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "minItems": 1, "items": {"type": "object"}}


class ChatRequest(BaseModel):
    # the fields passed on that this server does not read; `read` refused the others before
    model_config = ConfigDict(extra="allow")

    messages: Annotated[list[Any], _Messages()]
    model: Any = None
    stream: Any = None
    continue_final_message: Any = None
    n: Any = None
    # vLLM extensions that change how the prompt is rendered: refused
    chat_template: Any = None
    chat_template_kwargs: Any = None

    @field_validator("chat_template", "chat_template_kwargs")
    @classmethod
    def _no_template(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None:
            raise APIError(
                400,
                f"'{info.field_name}' is not accepted: the server renders Qwen3-ASR's own "
                "prompt, and a template from the request would bypass its control-token "
                "cleaning.",
                param=info.field_name,
                code="unsupported_parameter",
            )
        return value

    @field_validator("n")
    @classmethod
    def _one_answer(cls, value: Any) -> Any:
        if value is not None and (type(value) is not int or value != 1):
            raise APIError(
                400,
                f"'n' must be 1 (got {value!r}): this server answers one transcript per "
                "request. For several, send several requests; each waits its turn.",
                param="n",
                code="unsupported_value",
            )
        return value

    @property
    def requested_model(self) -> str | None:
        return self.model if isinstance(self.model, str) else None

    @property
    def dropped(self) -> list[str]:
        """The `DROPPED` fields the body holds, to be taken out before vLLM sees it."""
        return [key for key in self.model_extra or {} if key in DROPPED]

    def completion(self, body: dict[str, Any]) -> Request:
        """What the chat service takes: `body`, the one this model was read from, and what
        the service reads of it."""
        return Request(
            body=body,
            requested_model=self.requested_model,
            stream=bool(self.stream),
            continue_final_message=bool(self.continue_final_message),
            dropped=tuple(self.dropped),
        )


def read(body: Any, policy: fields.Policy) -> ChatRequest:
    """The body's checks passed, or a 400 that says which failed."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.", None)
    if "messages" not in body:
        raise invalid("'messages' must be a non-empty array.", "messages")
    unknown = [key for key in body if key not in FORWARDED | DROPPED | TEMPLATE_FIELDS]
    if unknown:
        raise APIError(
            400,
            f"Unknown parameter: {_names(unknown)}. This server passes on to "
            "vLLM only the chat fields that matter to speech recognition: "
            f"{', '.join(sorted(FORWARDED))}.",
            param=unknown[0],
            code="unknown_parameter",
        )
    return ChatRequest.model_validate(body, context={fields.POLICY: policy})


def check_messages(messages: list[Any], allow_remote: bool) -> None:
    """Every message and every content part, whatever the role: a 400 for what must not pass."""
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _bad(f"{where} must be an object with 'role' and 'content'.")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise _bad(f"{where}.role must be one of {', '.join(sorted(ROLES))}.")
        others = [key for key in message if key not in MESSAGE_KEYS]
        if others:
            raise _bad(
                f"{where} has {_names(others)}: a message here is its role, "
                "content and name only (vLLM would render the rest into the prompt)."
            )
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _check_part(part, f"{where}.content[{j}]", allow_remote)
        elif content is not None and not isinstance(content, str):
            raise _bad(f"{where}.content must be a string or an array of content parts.")


def _check_part(part: Any, where: str, allow_remote: bool) -> None:
    if isinstance(part, str):
        return
    if not isinstance(part, dict):
        raise _bad(f"{where} must be a content part object (or a string).")
    kind = part.get("type")
    for url_kind in URL_KINDS:  # first: a URL that must not be fetched is named as such
        if kind == url_kind or part.get(url_kind) is not None:
            remote_ok = allow_remote and url_kind == "audio_url"  # the model takes no other
            _check_url(part.get(url_kind), f"{where}.{url_kind}", remote_ok)
    payload = [key for key in part if key != "type"]
    if kind is None and len(payload) == 1 and payload[0] in TYPELESS_KINDS:
        kind = payload[0]  # as vLLM reads it
    if kind not in PART_KINDS:
        raise _bad(
            f"{where}.type {_names([kind])} is not accepted: a content part is "
            f"{', '.join(PART_KINDS)} (Qwen3-ASR hears audio and reads text)."
        )
    if kind == "text" and not isinstance(part.get("text"), str):
        raise _bad(f"{where}.text must be a string.")
    if kind == "input_audio" or "input_audio" in part:
        audio = part.get("input_audio")
        if not (
            isinstance(audio, dict)
            and isinstance(audio.get("data"), str)
            and isinstance(audio.get("format", ""), str)
        ):
            raise _bad(f'{where}.input_audio must be {{"data": "<base64>", "format": "wav"}}.')
    if payload != [kind]:  # vLLM reads some keys whatever the type (a `uuid`, embeddings)
        raise _bad(f'{where} must be {{"type": "{kind}", "{kind}": ...}} and nothing else.')


def _check_url(value: Any, where: str, allow_remote: bool) -> None:
    """`data:` always; http(s) only when allowed; anything else (file:, ftp:...) never."""
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url.strip():
        raise _bad(f'{where} must be {{"url": "data:audio/wav;base64,..."}}.')
    scheme = urlsplit(url).scheme.lower()  # parsed as vLLM parses it (stdlib)
    if scheme == "data" or (allow_remote and scheme in REMOTE_SCHEMES):
        return
    raise APIError(
        400,
        f"{where} is not a data: URL (scheme {scheme or 'none'!r}). The speech backend would "
        "fetch it from inside this server's network, which would let any client make the "
        "server reach any address (server-side request forgery), so this server accepts "
        "only inline audio: an input_audio part or a data: URL. An operator who trusts "
        "every client can start the server with --allow-remote-audio-urls to allow http(s) "
        "URLs.",
        param="messages",
        code="remote_audio_url_not_allowed",
    )


def _names(values: list[Any]) -> str:
    """A client's keys or values as a message names them: a few, each cut short."""
    shown = [repr(value)[:40] for value in values[:5]]
    return ", ".join(shown) + (f" and {len(values) - 5} more" if len(values) > 5 else "")


def _bad(message: str) -> APIError:
    return invalid(message, "messages")
