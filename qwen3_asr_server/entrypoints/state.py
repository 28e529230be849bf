"""What the routes are served with, kept on the app's state (`app.py` builds it all).

`AppState` holds what every door shares (the settings, the policy, the backends' clients, the
transcription service); routes reach it through `State` (or `get_state`). A front door with
services of its own (chat, jobs, Realtime) has them kept under its name, and only its routes
read them, through `doors.slice_services`: so no door's services are in reach of another's, and
this module imports none of them. The live doors' sessions see neither: their routes and the
Wyoming listener hand them the narrow services they use (`entrypoints.realtime.services`,
`entrypoints.wyoming.services`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from ..observability.tracing import OFF, Tracing

if TYPE_CHECKING:
    from ..backend.aligner import Aligner
    from ..backend.supervisor import BackendState
    from ..backend.upstream import Upstream
    from ..capacity.drain import Drain
    from ..model.catalog import Catalog
    from ..observability.metrics import Metrics
    from ..settings.composite import Settings
    from ..speech.onnx_models import Shared
    from ..speech.silero import SpeechModel
    from ..transcription.service import TranscriptionService
    from .middleware.keys import Keys
    from .protocol.fields import Policy


@dataclass
class AppState:
    settings: Settings
    metrics: Metrics
    catalog: Catalog
    policy: Policy  # what requests are checked against
    supervisor: BackendState  # the ASR backend's
    upstream: Upstream
    drain: Drain
    keys: Keys  # --api-key and --keys-file's, as last read
    transcription: TranscriptionService
    # Silero VAD, for Realtime turns and the pauses long uploads are cut at
    speech_model: Shared[SpeechModel]
    aligner: Aligner | None = None  # word timestamps (--aligner, --aligner-url)
    tracing: Tracing = OFF  # --otlp-traces-endpoint's


def get_state(connection: HTTPConnection) -> AppState:
    state: AppState = connection.app.state.asr
    return state


async def _state(request: Request) -> AppState:
    """`get_state` as a dependency. Async because FastAPI runs a plain `def` dependency in a
    worker thread: a thread hop on every request, for one attribute lookup."""
    return get_state(request)


State = Annotated[AppState, Depends(_state)]
