"""The one HTTP client to vLLM: sends requests, turns every failure into an `APIError`.

It knows vLLM's wire format (JSON, SSE) but nothing about speech: prompts are built in
`prompt`, answers are cleaned in `cleaning`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from .errors import APIError, unavailable
from .settings import Settings
from .supervisor import Supervisor

CHAT_PATH = "/v1/chat/completions"


def upstream_error(status: int, payload: Any) -> APIError:
    """Translate an error answer of vLLM (either of its shapes) into OpenAI's shape."""
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        param = error.get("param") if isinstance(error.get("param"), str) else None
    else:
        message, param = str(error or ""), None
    message = message or f"HTTP {status}"
    if status in (400, 413, 422):
        return APIError(400, message, param=param)
    if status in (401, 403):
        return APIError(
            502,
            "The speech backend refused this server's credentials (see --backend-api-key).",
            code="backend_auth_failed",
        )
    if status in (429, 503):
        return unavailable(f"The speech backend is busy or restarting: {message}")
    return APIError(502, f"The speech backend failed: {message}", code="backend_error")


class Upstream:
    def __init__(self, settings: Settings, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.timeout = settings.request_timeout
        self._client = httpx.AsyncClient(
            base_url=supervisor.url,
            headers=settings.backend_headers,
            timeout=httpx.Timeout(settings.request_timeout, connect=10.0),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    @property
    def model(self) -> str:
        """The id the backend knows the model by."""
        return self.supervisor.upstream_model

    def check_ready(self) -> None:
        if not self.supervisor.ready:
            state = "still loading" if self.supervisor.status == "loading" else "restarting"
            raise unavailable(f"The speech model is {state}; retry shortly.")

    async def _send(self, body: dict[str, Any], request_id: str, stream: bool) -> httpx.Response:
        self.check_ready()
        request = self._client.build_request(
            "POST", CHAT_PATH, json=body, headers={"X-Request-Id": request_id}
        )
        try:
            response = await self._client.send(request, stream=stream)
        except httpx.TimeoutException as exc:
            raise APIError(
                504,
                f"The speech backend did not answer within {self.timeout:.0f} s.",
                code="backend_timeout",
            ) from exc
        except httpx.TransportError as exc:
            raise unavailable("The speech backend is not reachable; retry shortly.") from exc
        if response.status_code >= 400:
            await response.aread()
            await response.aclose()
            try:
                payload = response.json()
            except ValueError:
                payload = response.text
            raise upstream_error(response.status_code, payload)
        return response

    async def chat(self, body: dict[str, Any], request_id: str) -> dict[str, Any]:
        """One non-streaming chat completion, as vLLM returns it."""
        response = await self._send(body, request_id, stream=False)
        try:
            data: dict[str, Any] = response.json()
        except ValueError as exc:
            raise APIError(502, "The backend sent invalid JSON.", code="backend_error") from exc
        return data

    async def chat_stream(
        self, body: dict[str, Any], request_id: str
    ) -> AsyncIterator[dict[str, Any]]:
        """Open a streaming chat completion; errors before the first event raise here.

        The returned iterator yields each SSE event as JSON; a failure of the backend after
        the stream started is yielded as one final OpenAI-shaped `{"error": ...}` event.
        """
        response = await self._send({**body, "stream": True}, request_id, stream=True)
        return self._events(response)

    async def _events(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        try:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    return
                event = json.loads(data)
                if isinstance(event, dict) and "error" in event:
                    status = event["error"].get("code") if isinstance(event["error"], dict) else 500
                    yield upstream_error(status if isinstance(status, int) else 500, event).body()
                    return
                yield event
        except (httpx.HTTPError, ValueError):
            yield unavailable("The speech backend failed during the stream.").body()
        finally:
            await asyncio.shield(response.aclose())
