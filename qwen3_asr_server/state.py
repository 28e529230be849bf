"""The one object that holds an app's state; routes reach it through `get_state`.

The live doors' sessions never see it: the routes and the Wyoming listener hand them the
narrow services they use (`realtime.services`, `wyoming.services`), built once with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from .backend.aligner import Aligner
    from .backend.supervisor import BackendState
    from .backend.upstream import Upstream
    from .capacity.drain import Drain
    from .capacity.seats import Seats
    from .chat.service import ChatService
    from .jobs.service import Jobs
    from .metrics import Metrics
    from .model.catalog import Catalog
    from .protocol.fields import Policy
    from .realtime.services import RealtimeServices
    from .settings.composite import Settings
    from .speech.onnx_models import Shared
    from .speech.silero import SpeechModel
    from .transcription.service import TranscriptionService
    from .wyoming.services import WyomingServices


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
    seats: Seats  # Realtime sessions open, at most --max-sessions
    jobs: Jobs  # files and batches (--data-dir, --jobs-db)
    # what the live doors' sessions are served with, handed down by their routes and listener
    realtime: RealtimeServices  # the diarizer and Smart Turn (--smart-turn) too
    wyoming: WyomingServices  # its connections' seats (--wyoming-max-connections) too
    aligner: Aligner | None = None  # word timestamps (--aligner, --aligner-url)


def get_state(connection: HTTPConnection) -> AppState:
    state: AppState = connection.app.state.asr
    return state


async def _state(request: Request) -> AppState:
    """`get_state` as a dependency. Async because FastAPI runs a plain `def` dependency in a
    worker thread: a thread hop on every request, for one attribute lookup."""
    return get_state(request)


State = Annotated[AppState, Depends(_state)]
