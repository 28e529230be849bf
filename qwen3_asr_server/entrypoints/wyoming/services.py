"""What the Wyoming port is served with: the few services of the app its listener and its
connections' handlers use, and nothing else of the app's state.

The app builds one (`app.app_state`), keeps it on its state and gives it to the listener,
which gives it to each connection's handler as `services`. A connection's seat is taken from
`connections`, a command's lease (`capacity.lease`) of `activity` and `drain`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...backend.activity import Activity
from ...capacity.drain import Drain
from ...capacity.seats import Seats
from ...model.catalog import Catalog
from ...observability.metrics import Metrics
from ...settings.composite import Settings
from ...speech.onnx_models import Shared
from ...speech.silero import SpeechModel
from ...transcription.service import TranscriptionService
from ..protocol.fields import Policy


@dataclass(frozen=True)
class WyomingServices:
    settings: Settings
    metrics: Metrics
    catalog: Catalog  # the model a `transcribe` names
    policy: Policy  # the context's limit, for the vocabulary
    speech_model: Shared[SpeechModel]  # Silero VAD, for endpointing
    transcription: TranscriptionService  # each command's utterance
    activity: Activity  # the ASR backend's: a command keeps the engine awake
    drain: Drain  # a command holds its place in it; none begins once it started
    connections: Seats  # at most --wyoming-max-connections open
