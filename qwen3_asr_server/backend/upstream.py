"""The one HTTP client to vLLM: sends requests, turns every failure into an `APIError`.

It knows vLLM's wire format (JSON, SSE) but nothing about speech: prompts are built in
`prompt`, answers are cleaned in `model.output`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import aiohttp
import orjson

from ..capacity.admission import AdmissionSettings, Slots, limit_of
from ..errors import APIError, unavailable
from ..observability.metrics import Metrics
from ..observability.tracing import OFF, Span, Tracing
from .activity import awake
from .client import PROBE_SECONDS, Client
from .failures import SPEECH_BACKEND, BackendGone, failed, reaching
from .roles import ASR
from .supervisor import BackendState, check_ready

CHAT_PATH = "/v1/chat/completions"
# A request body, or what makes it once the request has its slot: a piece of audio waiting in
# line is then held once (decoded), not also base64-encoded inside a JSON body.
Body = dict[str, Any] | Callable[[], dict[str, Any]]
T = TypeVar("T")
# A piece is sent at most this many times more when the backend went away: one whose audio
# itself brings vLLM down (out of memory) does not bring it down again and again.
RESENDS = 2
# Seconds between looks at a backend that went away, doubled up to the second.
FIRST_PAUSE, LAST_PAUSE = 0.25, 2.0


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
    if status == 503:
        return BackendGone(f"The speech backend is restarting: {message}")
    if status == 429:
        return unavailable(f"The speech backend is busy: {message}")
    return failed(SPEECH_BACKEND, message)


class UpstreamSettings(AdmissionSettings, Protocol):
    """What the client reads: the limits' timeouts and slots (`settings.limits`), and the
    engine's name, headers and wake timeout (`settings.engine`)."""

    request_timeout: float
    backend_wait: float
    wake_timeout: float

    @property
    def served_name(self) -> str: ...

    @property
    def backend_headers(self) -> dict[str, str]: ...


class Upstream:
    def __init__(
        self,
        settings: UpstreamSettings,
        supervisor: BackendState,
        admission: Slots,
        metrics: Metrics,
        tracing: Tracing = OFF,
    ) -> None:
        self.supervisor = supervisor
        self.tracing = tracing
        self.served_name = settings.served_name
        self.timeout = settings.request_timeout
        self.backend_wait = settings.backend_wait
        self.wake_timeout = settings.wake_timeout
        self.admission = admission
        self.metrics = metrics
        # One kept-alive connection per admission slot: no request waits for a connection,
        # and none is opened and closed again under load.
        headers = {**settings.backend_headers, "Content-Type": "application/json"}
        self._client = Client(supervisor.url, headers, settings.request_timeout, limit_of(settings))
        # Its own connections to ask whether a backend that went away is back, so that the
        # question never waits behind the answers filling the pool.
        self._probe = Client(supervisor.url, settings.backend_headers, PROBE_SECONDS, 2)
        self.aborted = False

    async def abort(self) -> None:
        """End every request with the backend now, each as if the backend had gone (a 503),
        and refuse the ones still to come: the server is going away."""
        self.aborted = True
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()
        await self._probe.aclose()

    @property
    def model(self) -> str:
        """The id the backend knows the model by."""
        return self.supervisor.upstream_model or self.served_name

    def check_ready(self) -> None:
        if self.aborted:
            raise unavailable("The server is shutting down; retry shortly.")
        check_ready(self.supervisor, "The speech model")

    async def persist(self, attempt: Callable[[], Awaitable[T]], at_stake: Callable[[], bool]) -> T:
        """`attempt()` (one piece's request), made again when it failed because the backend
        went away, as soon as the backend serves again, but only while `at_stake()` says
        that failing would lose work (the backend has answered some of the request): a
        restart of vLLM then costs a long recording the pieces in flight, not the whole file.
        A request with nothing answered yet (a short clip, an utterance, a stream before its
        first event) gets the 503 at once, so that a voice agent can go elsewhere rather than
        wait a minute for a GPU to reload. Every other failure (a 400 for the piece's
        content, a timeout, an answer out of shape) is raised at once."""
        deadline: float | None = None
        resends = 0
        while True:
            try:
                return await attempt()
            except BackendGone as gone:
                if resends == RESENDS or not at_stake():
                    raise
                deadline = deadline or time.monotonic() + self.backend_wait
                self.tracing.event("engine gone: waiting to send the piece again")
                await self._back(gone, deadline)
            resends += 1
            self.metrics.pieces_retried.inc()

    async def _back(self, gone: BackendGone, deadline: float) -> None:
        """Wait until the backend serves again: its supervisor says it is ready and it answers
        its `/health` itself (a backend given by URL is polled only every few seconds, so
        the supervisor may not know yet). `gone` is raised when the backend answers at once,
        as then the failure was not its going away; when it is not back by `deadline`
        (--backend-wait after the piece first failed); or when the server is stopping."""
        pause, away = FIRST_PAUSE, False
        while not self.aborted:
            if self.supervisor.ready and await self._probe.healthy():
                if away:
                    return
                raise gone
            away = True
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, LAST_PAUSE)
        raise gone

    async def _send(
        self, body: Body, request_id: str, stream: bool
    ) -> tuple[aiohttp.ClientResponse, Span]:
        """Send one request in an admission slot, once the backend is awake (--idle-sleep); a
        streamed answer keeps its slot, and the backend awake, until closed. Its span covers
        the wait for the engine and a slot, then vLLM's answer: a stream's is left open, for
        its closing to end."""
        self.check_ready()
        attributes = {"http.request.method": "POST"}
        span: Span | None = None
        try:
            with self.tracing.span(
                f"POST {CHAT_PATH}", "client", attributes, ends=not stream
            ) as span:
                return await self._sent(body, request_id, stream), span
        except BaseException:
            if stream and span is not None:
                span.end()  # once its block has recorded the failure
            raise

    async def _sent(self, body: Body, request_id: str, stream: bool) -> aiohttp.ClientResponse:
        activity = self.supervisor.activity
        activity.enter()
        try:
            waits = self.metrics.wake_waits.labels(ASR)
            await awake(activity, self.wake_timeout, "The speech model", waits, self.tracing)
            await self.admission.acquire()
        except BaseException:
            activity.leave()
            raise
        try:
            self.check_ready()  # again: things may have changed while it waited in line
            self.tracing.event("engine awake, slot taken")
            payload = body() if callable(body) else body
            if stream:
                payload = {**payload, "stream": True}
            response = await self._request(payload, request_id, stream)
        except BaseException:
            self._done()
            raise
        if not stream:
            self._done()
        return response

    def _done(self) -> None:
        """A request's end: its slot freed, its use of the backend over."""
        self.admission.release()
        self.supervisor.activity.leave()

    async def _request(
        self, body: dict[str, Any], request_id: str, stream: bool
    ) -> aiohttp.ClientResponse:
        """The answer, read whole unless it is a stream; an error answer raised."""
        try:
            data = orjson.dumps(body)
        except TypeError as exc:  # a client's integer past 64 bits, in a chat body passed on
            message = f"The request cannot be sent to the model: {exc}."
            raise APIError(400, message, code="invalid_value") from exc
        headers = {"X-Request-Id": request_id}
        self.tracing.inject(headers)  # vLLM's own span of it goes under the request's
        with reaching(SPEECH_BACKEND, self.timeout):
            response = await self._client.post(CHAT_PATH, data, headers)
            try:
                if not stream or response.status >= 400:
                    await response.read()
            except BaseException:
                response.close()
                raise
        if response.status >= 400:
            content = await response.read()  # read already: this returns it
            response.release()
            try:
                payload = orjson.loads(content)
            except ValueError:
                payload = content.decode(errors="replace")
            raise upstream_error(response.status, payload)
        return response

    async def chat(self, body: Body, request_id: str) -> dict[str, Any]:
        """One non-streaming chat completion, as vLLM returns it."""
        response, _ = await self._send(body, request_id, stream=False)
        try:
            data: dict[str, Any] = orjson.loads(await response.read())
        except ValueError as exc:
            raise failed(SPEECH_BACKEND, "invalid JSON.") from exc
        return data

    async def chat_stream(self, body: Body, request_id: str) -> EventStream:
        """Open a streaming chat completion; an error answer (a status >= 400) raises here."""
        response, span = await self._send(body, request_id, stream=True)

        def closed() -> None:
            self._done()
            span.end()

        return EventStream(response, closed)


class EventStream:
    """vLLM's streamed answer as JSON events. It holds its admission slot and connection
    until `aclose()`: call it also when the stream is never read (a client gone early).

    Iterating raises the APIError the client should get when the answer goes wrong after the
    stream started: an error event from vLLM, a broken connection, or a stream that ends
    before every choice in it has its `finish_reason` (so a truncated answer never passes
    for a whole one).
    """

    def __init__(self, response: aiohttp.ClientResponse, release: Callable[[], None]) -> None:
        self._response = response
        self._release: Callable[[], None] | None = release

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._events()

    async def aclose(self) -> None:
        release, self._release = self._release, None
        if release is None:
            return
        release()
        if self._response.content.at_eof():
            self._response.release()  # its connection goes back to the pool
        else:
            self._response.close()  # vLLM sees the connection close and stops generating

    async def _events(self) -> AsyncIterator[dict[str, Any]]:
        finished: dict[int, bool] = {}  # whether each choice seen so far has its finish_reason
        try:
            async for line in self._response.content:
                if not line.startswith(b"data:"):
                    continue
                data = line[len(b"data:") :].strip()
                if data == b"[DONE]":
                    break
                event = orjson.loads(data)
                if not isinstance(event, dict):
                    raise failed(SPEECH_BACKEND, "a stream event that is not a JSON object.")
                if "error" in event:
                    status = event["error"].get("code") if isinstance(event["error"], dict) else 500
                    raise upstream_error(status if isinstance(status, int) else 500, event)
                for choice in event.get("choices") or []:
                    index = choice.get("index", 0) if isinstance(choice, dict) else 0
                    done = isinstance(choice, dict) and choice.get("finish_reason") is not None
                    finished[index] = finished.get(index, False) or done
                yield event
        except aiohttp.ClientError as exc:  # reset, or closed before the stream's end
            raise BackendGone(
                f"{SPEECH_BACKEND} went away during the stream; retry shortly."
            ) from exc
        except (TimeoutError, ValueError) as exc:
            raise unavailable(f"{SPEECH_BACKEND} failed during the stream; retry shortly.") from exc
        finally:
            await self.aclose()
        if not finished or not all(finished.values()):
            raise unavailable(f"{SPEECH_BACKEND} ended the stream before its answer was complete.")
