"""POST /v1/chat/completions: vLLM's chat endpoint with Qwen3-ASR's answers cleaned.

For context-primed transcription: the client sends its own system turn and an
`input_audio` / `audio_url` part; the answer comes back without the language prefix,
whole or streamed, however the stream splits the prefix.

The messages are checked before they go upstream: media URLs must be `data:` URLs (vLLM
would fetch any other, from inside the network it runs in) unless
`--allow-remote-audio-urls`, media parts must have the shape vLLM expects, roles must be
known, and text cannot carry control tokens (see `prompt.sanitize_messages`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask

from ..errors import APIError, invalid
from ..model_output import LogprobFilter, StreamCleaner, clean
from ..prompt import sanitize_messages
from ..state import State
from ..transcription.streaming import sse

router = APIRouter()

# The roles chat templates know; the role is rendered into the prompt as it is.
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
URL_KINDS = ("audio_url", "image_url", "video_url")  # media parts vLLM fetches from a URL
REMOTE_SCHEMES = frozenset({"http", "https"})
# vLLM extensions that change how the prompt is rendered
TEMPLATE_FIELDS = ("chat_template", "chat_template_kwargs")


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, state: State) -> Response:
    try:
        body = await request.json()
    except (ValueError, RecursionError) as exc:  # nesting too deep to parse
        raise invalid("The request body is not valid JSON.", None, code="invalid_json") from exc
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.", None)
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise invalid("'messages' must be a non-empty array.", "messages")
    for field in TEMPLATE_FIELDS:
        if body.get(field) is not None:
            raise invalid(
                f"'{field}' is not accepted: the server renders Qwen3-ASR's own prompt, and a "
                "template from the request would bypass its control-token cleaning.",
                field,
                code="unsupported_parameter",
            )
    check_messages(body["messages"], state.settings.allow_remote_audio_urls)
    sanitize_messages(body["messages"], continuing=bool(body.get("continue_final_message")))
    model = body.get("model")
    served = state.catalog.resolve(model if isinstance(model, str) else None)
    body["model"] = state.upstream.model
    request_id = request.state.request_id
    if body.get("stream"):
        events = await state.upstream.chat_stream(body, request_id)
        cleaned = _cleaned(events, served)
        try:
            head = await _until_text(cleaned)
        except BaseException:
            await events.aclose()
            raise
        return StreamingResponse(
            _sse(head, cleaned),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(events.aclose),  # also when the stream never started
        )
    answer = await state.upstream.chat(body, request_id)
    for choice in answer.get("choices") or []:
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            message["content"] = clean(message["content"]).text
        _keep_text_logprobs(choice, LogprobFilter(), final=True)
    answer["model"] = served
    return JSONResponse(answer)


def check_messages(messages: list[Any], allow_remote: bool) -> None:
    """Every message and every content part, whatever the role: a 400 for what must not pass."""
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _bad(f"{where} must be an object with 'role' and 'content'.")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise _bad(f"{where}.role must be one of {', '.join(sorted(ROLES))}.")
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
    for url_kind in URL_KINDS:
        if kind == url_kind or part.get(url_kind) is not None:
            remote_ok = allow_remote and url_kind == "audio_url"  # the model takes no other
            _check_url(part.get(url_kind), f"{where}.{url_kind}", remote_ok)


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


def _bad(message: str) -> APIError:
    return invalid(message, "messages")


async def _cleaned(
    events: AsyncIterable[dict[str, Any]], served: str
) -> AsyncIterator[dict[str, Any]]:
    """vLLM's chunks with each choice's text cleaned as it streams, under the model id the
    client asked for."""
    cleaners: defaultdict[int, StreamCleaner] = defaultdict(StreamCleaner)
    filters: defaultdict[int, LogprobFilter] = defaultdict(LogprobFilter)
    async for event in events:
        for choice in event.get("choices") or []:
            cleaner = cleaners[choice.get("index", 0)]
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                delta["content"] = cleaner.feed(content)
            if choice.get("finish_reason") is not None:
                held = cleaner.finish()
                if held:
                    delta["content"] = (delta.get("content") or "") + held
            final = choice.get("finish_reason") is not None
            _keep_text_logprobs(choice, filters[choice.get("index", 0)], final=final)
        event["model"] = served
        yield event


async def _until_text(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first events, up to the first with text for the client or a choice's end: read
    before answering, so that a backend that fails before any text is an HTTP error (503
    with Retry-After), not a 200 whose stream holds nothing but an error."""
    head: list[dict[str, Any]] = []
    async for event in events:
        head.append(event)
        for choice in event.get("choices") or []:
            if (choice.get("delta") or {}).get("content") or choice.get("finish_reason"):
                return head
    return head


async def _sse(
    head: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]]
) -> AsyncIterator[str]:
    """The events as server-sent events; a failure after the answer started is its last."""
    for event in head:
        yield sse(event)
    try:
        async for event in rest:
            yield sse(event)
    except APIError as exc:
        yield sse(exc.body())
        return
    yield "data: [DONE]\n\n"


def _keep_text_logprobs(choice: dict[str, Any], kept: LogprobFilter, *, final: bool) -> None:
    """vLLM's logprobs cover the `language X<asr_text>` prefix too; the cleaned text does not."""
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
        logprobs["content"] = kept.feed(logprobs["content"]) + (kept.finish() if final else [])
