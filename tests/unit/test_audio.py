"""audio.decode_in_thread: a cancelled caller never leaves FFmpeg reading a closed upload."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import pytest

from qwen3_asr_server import audio
from tests.fixtures.containers import encode, speech_like

MP3 = encode(speech_like([(60.0, True)]), 16000, "mp3")


class SlowUpload(io.BytesIO):
    """An upload read slowly (as a spooled file on a busy disk), that counts the reads in
    progress and says whether one began after `close()`."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reading = threading.Event()
        self.active = 0
        self.reads = 0
        self.read_after_close = False

    def read(self, size: int | None = -1) -> bytes:
        self.active += 1
        self.reads += 1
        try:
            self.read_after_close |= self.closed
            self.reading.set()
            time.sleep(0.02)
            return super().read(size)
        finally:
            self.active -= 1


async def test_a_cancelled_decode_stops_its_thread_before_the_upload_closes() -> None:
    upload = SlowUpload(MP3)
    task = asyncio.create_task(audio.decode_in_thread(upload, 600))
    for _ in range(3):  # a few reads in: decoding, well short of the end
        await asyncio.to_thread(upload.reading.wait, 5)
        upload.reading.clear()
    await asyncio.to_thread(upload.reading.wait, 5)  # a read has just begun
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert upload.active == 0  # the thread is out of the file before the caller goes on
    upload.close()  # as the form does once the request is gone
    await asyncio.sleep(0.2)
    assert not upload.read_after_close
    whole = SlowUpload(MP3)
    await audio.decode_in_thread(whole, 600)
    assert upload.reads < whole.reads / 2  # it stopped, rather than decode it all


async def test_an_uncancelled_decode_is_the_same_as_decode() -> None:
    decoded = await audio.decode_in_thread(io.BytesIO(MP3), 600)
    assert decoded.duration == audio.decode(io.BytesIO(MP3), 600).duration
