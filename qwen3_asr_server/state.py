"""The one object that holds an app's state; routes reach it through `get_state`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from .silero import SharedModel

if TYPE_CHECKING:
    from .backend.aligner import Aligner
    from .backend.supervisor import BackendState
    from .backend.upstream import Upstream
    from .catalog import Catalog
    from .metrics import Metrics
    from .serving.drain import Drain
    from .settings import Settings


@dataclass
class AppState:
    settings: Settings
    metrics: Metrics
    catalog: Catalog
    supervisor: BackendState  # the ASR backend's
    upstream: Upstream
    drain: Drain
    aligner: Aligner | None = None  # word timestamps (--aligner-url)
    decoding: asyncio.Semaphore = field(init=False)  # uploads decoded or cut (CPU-bound)
    # Silero VAD, for Realtime turns and the pauses long uploads are cut at
    speech_model: SharedModel = field(default_factory=SharedModel)

    def __post_init__(self) -> None:
        self.decoding = asyncio.Semaphore(self.settings.decode_workers)


def get_state(connection: HTTPConnection) -> AppState:
    state: AppState = connection.app.state.asr
    return state


async def _state(request: Request) -> AppState:
    """`get_state` as a dependency. Async because FastAPI runs a plain `def` dependency in a
    worker thread: a thread hop on every request, for one attribute lookup."""
    return get_state(request)


State = Annotated[AppState, Depends(_state)]
