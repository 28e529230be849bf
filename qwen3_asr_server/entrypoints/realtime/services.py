"""What a Realtime session (a WebSocket's, a WebRTC call's) is served with: the few services of
the app its parts use, and nothing else of the app's state.

The app builds one (`app.app_state`) and keeps it on its state; the routes hand it down to the
connection or the call, each session's parts take it as `services`. What a session holds of
the server's capacity (its seat, the engine awake, its place in the drain) is not here: the
route takes it as the session's lease (`capacity.lease`), and a call's task holds it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ...backend.supervisor import BackendState
from ...backend.upstream import Upstream
from ...capacity.drain import Drain
from ...capacity.key_seats import Counts
from ...capacity.seats import Seats
from ...observability.metrics import Metrics
from ...settings.composite import Settings
from ...speakers.diarize import SpeakerFinder
from ...speech.onnx_models import Shared
from ...speech.silero import SpeechModel
from ...speech.turn_end import TurnEnd
from ...transcription.service import TranscriptionService
from ..middleware.keys import Keys
from ..protocol.fields import Policy


@dataclass(frozen=True)
class RealtimeServices:
    settings: Settings
    metrics: Metrics
    policy: Policy  # what a session.update is checked against; the context's limit
    transcription: TranscriptionService  # each committed utterance's (`transcriber`)
    speech_model: Shared[SpeechModel]  # Silero VAD, for the turns
    diarizer: SpeakerFinder | None  # a diarizing session's speakers; None: --diarizer none
    turn_end: TurnEnd | None  # Smart Turn, for semantic_vad sessions (--smart-turn)
    supervisor: BackendState  # the ASR backend: its URL and activity (--vllm-realtime)
    upstream: Upstream  # the model's id at that backend (--vllm-realtime)
    drain: Drain  # once it starts, each session closes itself when settled
    seats: Seats  # sessions and calls open, at most --max-sessions (the routes' leases)
    keys: Keys  # which keys mint and open ephemeral keys
    key_seats: Counts  # each key's sessions and calls open, at most its max_sessions
    # WebRTC calls, each serving past the POST that made it (`call`)
    calls: set[asyncio.Task[None]] = field(default_factory=set)
