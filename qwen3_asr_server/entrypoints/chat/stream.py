"""vLLM's streamed chat chunks with the text cleaned as it streams, as server-sent events."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from ...errors import APIError
from ...model.output import LogprobFilter, StreamCleaner
from ...transcription.streaming import sse


async def cleaned(
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
            keep_text_logprobs(choice, filters[choice.get("index", 0)], final=final)
        event["model"] = served
        yield event


async def until_text(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
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


async def server_sent(
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


def keep_text_logprobs(choice: dict[str, Any], kept: LogprobFilter, *, final: bool) -> None:
    """vLLM's logprobs cover the `language X<asr_text>` prefix too; the cleaned text does not."""
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
        logprobs["content"] = kept.feed(logprobs["content"]) + (kept.finish() if final else [])
