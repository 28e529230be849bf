"""The client of the aligner's vLLM: Qwen3-ForcedAligner served as a pooling model.

One POST /pooling per piece of audio (at most alignment.MAX_SECONDS): the audio as a chat
`input_audio` part, the transcript's units with their `<timestamp>` tokens as a text part. vLLM
answers one row of bin scores per `<timestamp>` token; asked for its bytes encoding it sends
them as float16, about a third of the JSON's size, described by a `metadata` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pybase64

from ..model import alignment
from ..model.alignment import Word
from ..model.languages import Language
from ..observability.metrics import Metrics
from ..observability.tracing import OFF, Tracing
from .activity import awake
from .client import Client
from .failures import failed, reaching
from .roles import ALIGNER
from .supervisor import BackendState, check_ready

POOLING_PATH = "/pooling"
BACKEND = "The aligner"  # how errors name it


class Aligner:
    """Word times for a piece of audio and its transcript."""

    def __init__(
        self,
        supervisor: BackendState,
        segment_time: float,
        timeout: float,
        wake_timeout: float,
        metrics: Metrics,
        tracing: Tracing = OFF,
    ) -> None:
        self.supervisor = supervisor  # of the aligner's vLLM: its URL, model id and readiness
        self.segment_time = segment_time  # seconds per bin (the checkpoint's, 80 ms)
        self.timeout = timeout
        self.wake_timeout = wake_timeout  # for a sleeping aligner to wake (--idle-sleep)
        self.metrics = metrics
        self.tracing = tracing
        # the body is written with orjson, so the client does not know it is JSON; vLLM insists
        headers = {"Content-Type": "application/json", **supervisor.backend.headers}
        self._client = Client(supervisor.url, headers, timeout)

    def check_ready(self) -> None:
        check_ready(self.supervisor, "The aligner (word timestamps)")

    async def align(
        self, wav: bytes, text: str, language: Language | None, offset: float = 0.0
    ) -> list[Word]:
        """The units of `text` with their times in the recording (`offset`: where `wav`
        begins in it); no request for a text with no word in it."""
        units = alignment.units(text, language)
        if not units:
            return []
        audio = {"data": pybase64.b64encode_as_string(wav), "format": "wav"}
        content = [
            {"type": "input_audio", "input_audio": audio},
            {"type": "text", "text": alignment.aligner_text(units)},
        ]
        self.check_ready()
        body = {
            "task": "token_classify",
            "encoding_format": "bytes",
            "embed_dtype": "float16",
            "endianness": "little",
            "messages": [{"role": "user", "content": content}],
        }
        if self.supervisor.upstream_model is not None:  # else vLLM takes the one it serves
            body["model"] = self.supervisor.upstream_model
        status, headers, raw = await self._pool(orjson.dumps(body))
        if status >= 400:
            raise failed(BACKEND, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
        bins = _bins(headers, raw)
        if len(bins) != 2 * len(units):
            raise failed(BACKEND, f"{len(bins)} rows for {2 * len(units)} timestamps.")
        return alignment.words(units, bins, self.segment_time, offset)

    async def _pool(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        """POST /pooling once the aligner is awake, keeping it awake meanwhile: its span
        covers the wait for a wake, as the speech model's requests' do."""
        activity = self.supervisor.activity
        activity.enter()
        try:
            attributes = {"http.request.method": "POST"}
            with self.tracing.span(f"POST {POOLING_PATH}", "client", attributes):
                waits = self.metrics.wake_waits.labels(ALIGNER)
                await awake(activity, self.wake_timeout, BACKEND, waits, self.tracing)
                headers: dict[str, str] = {}
                self.tracing.inject(headers)  # the aligner's vLLM's span goes under this one
                with reaching(BACKEND, self.timeout):
                    async with await self._client.post(POOLING_PATH, body, headers) as response:
                        return response.status, response.headers, await response.read()
        finally:
            activity.leave()

    async def aclose(self) -> None:
        await self._client.aclose()


def _bins(headers: Mapping[str, str], content: bytes) -> list[int]:
    """The best bin of every row of vLLM's bytes answer, found through its `metadata`."""
    try:
        metadata: dict[str, Any] = orjson.loads(headers["metadata"])
        item = metadata["data"][0]
        rows, classes = (int(size) for size in item["shape"])
        data = content[int(item["start"]) : int(item["end"])]
        return alignment.best_bins(data, (rows, classes))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise failed(BACKEND, f"an answer that is not vLLM's bytes encoding ({exc!r}).") from exc
