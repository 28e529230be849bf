"""The one object that holds an app's state; routes reach it through `get_state`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from .backend.aligner import Aligner
    from .backend.supervisor import BackendState
    from .backend.upstream import Upstream
    from .capacity.seats import Seats
    from .chat.service import ChatService
    from .jobs.service import Jobs
    from .metrics import Metrics
    from .model.catalog import Catalog
    from .protocol.fields import Policy
    from .serving.drain import Drain
    from .settings.composite import Settings
    from .speakers.diarize import SpeakerFinder
    from .speech.onnx_models import Shared
    from .speech.silero import SpeechModel
    from .speech.turn_end import TurnEnd
    from .transcription.service import TranscriptionService


@dataclass
class AppState:
    settings: Settings
    metrics: Metrics
    catalog: Catalog
    policy: Policy  # what requests are checked against
    supervisor: BackendState  # the ASR backend's
    upstream: Upstream
    drain: Drain
    transcription: TranscriptionService
    chat: ChatService
    # Silero VAD, for Realtime turns and the pauses long uploads are cut at
    speech_model: Shared[SpeechModel]
    diarizer: SpeakerFinder | None  # None: --diarizer none
    seats: Seats  # Realtime sessions open, at most --max-sessions
    connections: Seats  # Wyoming connections open, at most --wyoming-max-connections
    jobs: Jobs  # files and batches (--data-dir, --jobs-db)
    aligner: Aligner | None = None  # word timestamps (--aligner, --aligner-url)
    turn_end: TurnEnd | None = None  # Smart Turn, for semantic_vad sessions (--smart-turn)
    # WebRTC calls, each serving past the POST that made it (`realtime.call`)
    calls: set[asyncio.Task[None]] = field(default_factory=set)


def get_state(connection: HTTPConnection) -> AppState:
    state: AppState = connection.app.state.asr
    return state


async def _state(request: Request) -> AppState:
    """`get_state` as a dependency. Async because FastAPI runs a plain `def` dependency in a
    worker thread: a thread hop on every request, for one attribute lookup."""
    return get_state(request)


State = Annotated[AppState, Depends(_state)]
