"""HTTP to a backend's vLLM, over aiohttp: one pool of kept-alive connections per backend.

aiohttp rather than httpx: under load httpx's pool looked at every connection (asking each
socket whether it had become readable) on every request, about a sixth of the server's CPU
per request, and it wrote bodies more slowly; through aiohttp a 5 s clip cost a third less
CPU (`scripts/overhead.py --capacity`).
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

CONNECT_SECONDS = 10.0
# vLLM's uvicorn closes a connection idle for 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); aiohttp keeps
# one 15 s by default, so a request could take a connection vLLM was closing. Kept well below.
KEEPALIVE_SECONDS = 2.0
PROBE_SECONDS = 5.0  # a probe of /health or /v1/models that takes longer has failed
PROBE_TIMEOUT = aiohttp.ClientTimeout(total=PROBE_SECONDS)


class Client:
    """A session to one backend, made on first use: aiohttp wants it made in the event loop.

    `timeout` bounds each wait for the backend (for its answer to begin, and between the
    chunks of a stream), not a whole streamed answer.
    """

    def __init__(
        self, base_url: str, headers: Mapping[str, str], timeout: float, connections: int = 100
    ) -> None:
        self.base_url = base_url
        self.headers = dict(headers)
        self.timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS, sock_read=timeout)
        self.connections = connections
        self._session: aiohttp.ClientSession | None = None

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=self.headers,
                timeout=self.timeout,
                connector=aiohttp.TCPConnector(
                    limit=self.connections, keepalive_timeout=KEEPALIVE_SECONDS
                ),
                read_bufsize=1 << 20,  # a stream's event lines (logprobs included) fit
            )
        return self._session

    async def healthy(self) -> bool:
        """Whether the backend answers 200 on vLLM's `/health` now."""
        try:
            async with self.session.get(self.url("/health"), timeout=PROBE_TIMEOUT) as answer:
                return answer.status == 200
        except (TimeoutError, aiohttp.ClientError):
            return False

    async def post(
        self, path: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> aiohttp.ClientResponse:
        """POST `body`, sent again once on a fresh connection when the first one broke before
        any byte of the answer: the backend closed it as it went idle, so it saw nothing.

        aiohttp retries only idempotent methods; every POST here is one too (a transcription,
        an alignment), so a second try is safe. A refused connection is not retried: the
        backend is down, and its supervisor says so; nor is one that `aclose()` ended.
        """
        url, session = self.url(path), self.session
        try:
            return await session.post(url, data=body, headers=headers)
        except aiohttp.ClientConnectorError:
            raise
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            if session.closed:
                raise
            return await session.post(url, data=body, headers=headers)

    async def aclose(self) -> None:
        """Close every connection: requests still in flight fail as if the backend had gone."""
        if self._session is not None:
            await self._session.close()
