"""An utterance streamed into vLLM's own /v1/realtime while it is spoken (`--vllm-realtime`).

The session hands the audio over as the VAD lets it go (`Live.send_until`); `relay` feeds it
to vLLM as it comes and passes every text on as vLLM answers, so a long utterance's words
arrive before the speaker stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..audio import RATE
from ..backend.vllm_realtime import LiveUtterance
from .buffer import AudioBuffer


@dataclass
class Live:
    """An utterance streaming into vLLM's realtime endpoint while it is spoken."""

    item_id: str
    sent: int  # stream position up to which its audio was handed to the relay
    chunks: asyncio.Queue[npt.NDArray[np.int16] | None] = field(default_factory=asyncio.Queue)
    cancelled: bool = False  # the client cleared the buffer: no transcript is wanted
    seconds: float = 0.0

    def send_until(self, buffer: AudioBuffer, end: int) -> None:
        """Hand the relay the audio from where it got to up to stream position `end`."""
        if end > self.sent:
            self.chunks.put_nowait(buffer.samples(self.sent, end))
            self.seconds += (end - self.sent) / RATE
            self.sent = end


async def relay(
    live: Live, utterance: LiveUtterance, on_text: Callable[[str], Awaitable[None]]
) -> str | None:
    """Stream `live`'s audio into `utterance` until its end, each text to `on_text` as vLLM
    answers; the whole transcript, or None when the client cleared the utterance. vLLM's
    failures are APIErrors; the utterance's connection is closed however it ends."""
    parts: list[str] = []

    async def relay_texts() -> None:
        async for text in utterance.texts():
            parts.append(text)
            await on_text(text)

    reader: asyncio.Task[None] | None = None
    try:
        await utterance.open()
        reader = asyncio.create_task(relay_texts())
        while (chunk := await live.chunks.get()) is not None:
            await utterance.append(chunk)
        if live.cancelled:
            return None
        await utterance.finish()
        await reader
    finally:
        if reader is not None and not reader.done():
            reader.cancel()
            await asyncio.wait([reader])
        await utterance.close()
    return "".join(parts)
