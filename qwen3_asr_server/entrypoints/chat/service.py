"""The chat service: a checked chat request (`request.Request`) to vLLM, its answer cleaned.

For context-primed transcription: the client sends its own system turn and an `input_audio`
/ `audio_url` part; the answer comes back without the language prefix, whole or streamed,
however the stream splits the prefix. Control tokens in the messages' text are removed
before vLLM renders them (`prompt.sanitize_messages`), and the fields `entrypoints.chat.protocol`
lets through only to drop them (OpenAI's account bookkeeping) are taken out, with a warning. The
request is a plain one, made from the wire model by whoever checked it (the route, a batch
line), so that nothing here knows HTTP or pydantic.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from ...backend.upstream import EventStream, Upstream
from ...model.catalog import Catalog
from ...model.output import LogprobFilter, clean
from ...model.prompt import sanitize_messages
from . import stream
from .request import Request

logger = logging.getLogger(__name__)


class ChatService:
    def __init__(self, upstream: Upstream, catalog: Catalog) -> None:
        self.upstream = upstream
        self.catalog = catalog

    def _prepared(self, request: Request) -> str:
        """The body made ready for vLLM, in place; the id the client asked for, resolved."""
        body = request.body
        if request.dropped:
            logger.warning(
                "chat: dropped %s (OpenAI account fields; no effect on a transcript)",
                ", ".join(request.dropped),
            )
            for key in request.dropped:
                del body[key]
        sanitize_messages(body["messages"], continuing=request.continue_final_message)
        served = self.catalog.resolve(request.requested_model)
        body["model"] = self.upstream.model
        return served

    async def answer(self, request: Request, request_id: str) -> Any:
        """vLLM's completion, each choice's text cleaned, under the id the client asked for."""
        served = self._prepared(request)
        answer = await self.upstream.chat(request.body, request_id)
        for choice in answer.get("choices") or []:
            message = choice.get("message") or {}
            if isinstance(message.get("content"), str):
                message["content"] = clean(message["content"]).text
            stream.keep_text_logprobs(choice, LogprobFilter(), final=True)
        answer["model"] = served
        return answer

    async def stream(
        self, request: Request, request_id: str
    ) -> tuple[AsyncIterator[str], EventStream]:
        """The completion as server-sent events, read up to its first text (a backend that
        fails before that is an error here), and the stream to close once they are sent."""
        served = self._prepared(request)
        events = await self.upstream.chat_stream(request.body, request_id)
        cleaned = stream.cleaned(events, served)
        try:
            head = await stream.until_text(cleaned)
        except BaseException:
            await events.aclose()
            raise
        return stream.server_sent(head, cleaned), events
