"""vLLM's own /v1/realtime WebSocket: an utterance's audio goes into the model as it is spoken.

vLLM 0.32 serves it only when started with Qwen3-ASR's realtime architecture
(`--hf-overrides '{"architectures": ["Qwen3ASRRealtimeGeneration"]}'`, which --vllm-realtime
adds); otherwise its handshake answers 403. Its protocol, as measured on vLLM 0.32: on connect
`session.created`; `session.update` with the model (no answer); `input_audio_buffer.commit`
starts a generation; appends carry base64 PCM16 at 16 kHz; `commit` with `final: true` ends
the audio. vLLM answers each 5 s of audio as it arrives, with `transcription.delta` events
holding that segment's raw answer (its own `language X<asr_text>` prefix included), then one
`transcription.done`. It takes no language, prompt or context.

vLLM keeps one audio queue per connection, across utterances: audio appended after a final
commit is dropped and a stray final commit cuts the next utterance short. So every utterance
gets a connection of its own, used in that one order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pybase64
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus, WebSocketException

from ..errors import unavailable
from ..model.languages import Language
from ..model.output import SegmentedCleaner
from ..observability.log_redaction import websocket_logger
from .failures import SPEECH_BACKEND, failed, unreachable

PATH = "/v1/realtime"
BACKEND = "vLLM's realtime endpoint"  # how errors name it
OPEN_TIMEOUT = 10.0  # seconds for vLLM's handshake


class NotOffered(Exception):
    """The backend has no realtime endpoint (vLLM started without the realtime architecture)."""


def _url(base_url: str) -> str:
    return base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + PATH


async def _connect(base_url: str, headers: dict[str, str]) -> ClientConnection:
    try:
        return await connect(
            _url(base_url),
            additional_headers=headers,
            open_timeout=OPEN_TIMEOUT,
            logger=websocket_logger(),  # its debug lines would show --backend-api-key
        )
    except InvalidStatus as exc:
        if exc.response.status_code in (403, 404):
            raise NotOffered from exc
        raise failed(BACKEND, f"HTTP {exc.response.status_code} at the handshake.") from exc
    except (OSError, TimeoutError, WebSocketException) as exc:
        raise unreachable(SPEECH_BACKEND) from exc


async def offered(base_url: str, headers: dict[str, str]) -> bool:
    """Whether the backend serves /v1/realtime (a handshake, then a close)."""
    try:
        connection = await _connect(base_url, headers)
    except NotOffered:
        return False
    await connection.close()
    return True


class LiveUtterance:
    """One utterance through vLLM's realtime endpoint: `open`, `append` as the audio comes,
    `finish`, and meanwhile iterate `texts` for the clean text as vLLM writes it."""

    def __init__(self, base_url: str, model: str, headers: dict[str, str]) -> None:
        self.base_url = base_url
        self.model = model
        self.headers = headers
        self.usage: dict[str, Any] = {}  # vLLM's, once done: prompt tokens of 5 s only
        self.spoken: list[Language] = []  # the languages heard, once done
        self._connection: ClientConnection | None = None

    async def open(self) -> None:
        self._connection = await _connect(self.base_url, self.headers)
        await self._send({"type": "session.update", "model": self.model})
        await self._send({"type": "input_audio_buffer.commit"})

    async def append(self, samples: npt.NDArray[np.int16]) -> None:
        audio = pybase64.b64encode_as_string(samples.astype("<i2", copy=False).tobytes())
        await self._send({"type": "input_audio_buffer.append", "audio": audio})

    async def finish(self) -> None:
        await self._send({"type": "input_audio_buffer.commit", "final": True})

    async def texts(self) -> AsyncIterator[str]:
        """Clean text until vLLM is done; APIError if it fails or goes away first."""
        connection = self._opened()
        cleaner = SegmentedCleaner()
        try:
            async for message in connection:
                event = orjson.loads(message)
                kind = event.get("type")
                if kind == "transcription.delta":
                    text = cleaner.feed(str(event.get("delta") or ""))
                    if text:
                        yield text
                elif kind == "transcription.done":
                    text = cleaner.finish()
                    if text:
                        yield text
                    self.usage = event.get("usage") or {}
                    self.spoken = cleaner.spoken
                    return
                elif kind == "error":
                    raise failed(BACKEND, f"{event.get('error') or 'an error event'}.")
        except (OSError, WebSocketException) as exc:
            raise unavailable("The speech backend closed the realtime stream.") from exc
        raise unavailable("The speech backend closed the realtime stream before it was done.")

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()

    async def _send(self, event: dict[str, Any]) -> None:
        try:
            await self._opened().send(orjson.dumps(event).decode())
        except (OSError, WebSocketException) as exc:
            raise unavailable("The speech backend closed the realtime stream.") from exc

    def _opened(self) -> ClientConnection:
        if self._connection is None:
            raise RuntimeError("open() the utterance first")
        return self._connection
