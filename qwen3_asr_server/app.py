"""The app factory: wires settings, state, routes, middleware and the lifespan together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI

from . import __version__
from .backend import launch, roles
from .backend.aligner import Aligner
from .backend.supervisor import BackendState, Supervisor
from .backend.upstream import Upstream
from .capacity.admission import Admission, Slots, limit_of
from .capacity.budget import AudioBudget, LocalLedger, budget_seconds
from .capacity.drain import Drain
from .capacity.key_seats import Counts, LocalKeySeats
from .capacity.rates import LocalRates, Rates
from .capacity.seats import WYOMING, LocalSeats, Seats
from .entrypoints import health, models
from .entrypoints.alignments import routes as alignments
from .entrypoints.audio import routes as audio
from .entrypoints.chat import routes as chat
from .entrypoints.chat.service import ChatService
from .entrypoints.jobs import routes as jobs
from .entrypoints.jobs.execute import Services
from .entrypoints.jobs.fetch import Downloads
from .entrypoints.jobs.files import over_file_limit
from .entrypoints.jobs.service import Jobs
from .entrypoints.middleware.access_log import AccessLogMiddleware
from .entrypoints.middleware.auth import Authentication
from .entrypoints.middleware.body_limits import FORM_OVERHEAD, BodyLimit, Cap, body_caps
from .entrypoints.middleware.disconnect import CancelOnDisconnect
from .entrypoints.middleware.drain import DrainMiddleware
from .entrypoints.middleware.early_close import CloseEarlyAnswers
from .entrypoints.middleware.error_guard import ErrorGuard
from .entrypoints.middleware.errors import install as install_error_handlers
from .entrypoints.middleware.keys import Keys
from .entrypoints.middleware.metrics import MetricsMiddleware
from .entrypoints.middleware.origin import OriginCheck
from .entrypoints.middleware.rate_limit import RateLimit
from .entrypoints.middleware.request_id import RequestIdMiddleware
from .entrypoints.middleware.tracing import TraceRequests
from .entrypoints.protocol.fields import Policy
from .entrypoints.realtime import call, offers
from .entrypoints.realtime import routes as realtime
from .entrypoints.realtime.cors import RealtimeCORS
from .entrypoints.realtime.services import RealtimeServices
from .entrypoints.state import AppState
from .entrypoints.ui import routes as ui
from .entrypoints.wyoming import discovery
from .entrypoints.wyoming.listener import Listener
from .entrypoints.wyoming.services import WyomingServices
from .errors import MIB, LaunchError
from .model import alignment, prompt
from .model.catalog import Catalog
from .observability import log_format, tracing
from .observability.metrics import Metrics
from .observability.tracing import OFF, Tracing
from .settings.composite import Settings
from .speakers import pyannote
from .speakers.diarize import Diarizer, SpeakerFinder
from .speakers.embedding import SpeakerModel
from .speech.onnx_models import Shared
from .speech.silero import SpeechModel
from .speech.turn_end import TurnEnd, model_path
from .stages import registry
from .transcription.service import TranscriptionService

logger = logging.getLogger(__name__)


def _log_fatal(message: str) -> None:
    logger.error("vLLM backend failed: %s", message)


@dataclass
class Backends:
    """The backends as this process knows them, with the metrics and the admission limits."""

    metrics: Metrics
    asr: BackendState
    aligner: BackendState | None
    admission: Slots
    seats: Seats
    connections: Seats  # to the Wyoming port
    budget: AudioBudget
    tracing: Tracing  # --otlp-traces-endpoint's, or OFF
    supervisors: list[Supervisor] = field(default_factory=list)  # those this process runs
    rates: Rates = field(default_factory=LocalRates)  # the keys' requests per minute
    key_seats: Counts = field(default_factory=LocalKeySeats)  # the keys' sessions open
    started: float = field(default_factory=time.time)  # when the server did, as /v1/models says


def own_backends(
    settings: Settings, vllm_args: Sequence[str], on_fatal: Callable[[str], None]
) -> Backends:
    """Supervisors of this process's own: the one server process of the default `--workers 1`."""
    metrics = Metrics()
    traces = tracing.start(settings.otlp_traces_endpoint, metrics)
    supervisors = [
        Supervisor(backend, settings, metrics, on_fatal, tracing=traces)
        for backend in roles.every(settings, vllm_args)
    ]
    admission = Admission(limit_of(settings), settings.max_queue, settings.queue_timeout, metrics)
    return Backends(
        metrics=metrics,
        asr=supervisors[0],
        aligner=supervisors[1] if len(supervisors) > 1 else None,
        admission=admission,
        seats=LocalSeats(settings.max_sessions, metrics),
        connections=LocalSeats(settings.wyoming_max_connections, metrics, WYOMING),
        budget=AudioBudget(
            LocalLedger(), budget_seconds(settings), settings.queue_timeout, metrics
        ),
        supervisors=supervisors,
        tracing=traces,
    )


def _aligner(
    settings: Settings, backend: BackendState | None, metrics: Metrics, traces: Tracing
) -> Aligner | None:
    if backend is None:
        return None
    # A launched checkpoint says how long its bins are; one given by URL is the released one.
    # A config.json that cannot say ends the server: its supervisor cannot launch it.
    segment_time = alignment.SEGMENT_TIME
    if settings.aligner:
        with contextlib.suppress(LaunchError):
            segment_time = launch.aligner_config(settings.aligner).segment_time
    timeout, wake = settings.request_timeout, settings.wake_timeout
    return Aligner(backend, segment_time, timeout, wake, metrics, traces)


def _diarizer(source: str) -> SpeakerFinder | None:
    """The diarizer `--diarizer` names; a LaunchError when a pyannote pipeline cannot load."""
    if source == "none":
        return None
    if source == "campplus":
        return Diarizer(Shared(SpeakerModel))
    return pyannote.load(source)


def _turn_end(settings: Settings) -> TurnEnd | None:
    """Smart Turn (`--smart-turn`), loaded at start: a missing model file ends the server."""
    return TurnEnd(model_path(settings.smart_turn_model)) if settings.smart_turn else None


class _App(FastAPI):
    """FastAPI, with the audio routes (plain Starlette ones, see `entrypoints.named`) and their
    answers' models in its schema."""

    def openapi(self) -> dict[str, Any]:
        schema = super().openapi()
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        for module in (audio, alignments):
            schema["paths"].update(module.openapi_paths)
            schemas.update(module.openapi_schemas)
        return schema


@dataclass(frozen=True)
class Doors:
    """What the app builds for the front doors with services of their own: each is kept on
    `app.state` under its name, where only that slice's routes read it
    (`entrypoints.doors.slice_services`), and the Wyoming listener is handed its own."""

    chat: ChatService
    jobs: Jobs
    realtime: RealtimeServices  # its sessions' and calls': the seats, the diarizer, Smart Turn
    wyoming: WyomingServices  # its connections': their seats (--wyoming-max-connections)


def app_state(settings: Settings, parts: Backends) -> tuple[AppState, Doors]:
    """The state of one app (its clients of the backends, its policy, the services every
    door shares) and its front doors' own services."""
    traces = parts.tracing
    log_format.follow(traces.ids)  # JSON lines carry the trace
    upstream = Upstream(settings, parts.asr, parts.admission, parts.metrics, traces)
    diarizer = _diarizer(settings.diarizer)
    catalog = Catalog(settings.served_name, settings.model_aliases, parts.started, bool(diarizer))
    aligner = _aligner(settings, parts.aligner, parts.metrics, traces)
    speech_model = Shared(SpeechModel)
    stages = registry.every(settings, aligner, speech_model, diarizer)
    policy = Policy(
        catalog,
        context_limit=prompt.context_limit(settings.max_model_len, settings.segment_seconds),
        upload_limit=settings.upload_bytes,
        allow_remote_audio_urls=settings.allow_remote_audio_urls,
    )
    transcription = TranscriptionService(
        settings, upstream, stages, speech_model, parts.metrics, parts.budget, traces
    )
    chat_service = ChatService(upstream, catalog)
    drain = Drain(upstream.abort, settings.shutdown_timeout)
    keys = Keys(settings.keys_file, settings.api_key)
    state = AppState(
        settings=settings,
        metrics=parts.metrics,
        catalog=catalog,
        policy=policy,
        supervisor=parts.asr,
        upstream=upstream,
        drain=drain,
        keys=keys,
        transcription=transcription,
        speech_model=speech_model,
        aligner=aligner,
        tracing=traces,
    )
    return state, Doors(
        chat=chat_service,
        jobs=_jobs(settings, parts, policy, transcription, chat_service, keys),
        realtime=RealtimeServices(
            settings,
            parts.metrics,
            policy,
            transcription,
            speech_model,
            diarizer,
            _turn_end(settings),
            parts.asr,
            upstream,
            drain,
            parts.seats,
            keys,
            parts.key_seats,
        ),
        wyoming=_wyoming(state, parts),
    )


def _wyoming(state: AppState, parts: Backends) -> WyomingServices:
    """The Wyoming connections' services: the app's, and their seats."""
    return WyomingServices(
        state.settings,
        state.metrics,
        state.catalog,
        state.policy,
        state.speech_model,
        state.transcription,
        parts.asr.activity,
        state.drain,
        parts.connections,
    )


def _jobs(
    settings: Settings,
    parts: Backends,
    policy: Policy,
    transcription: TranscriptionService,
    chat: ChatService,
    keys: Keys,
) -> Jobs:
    """Files and batches, whose lines are run by the synchronous endpoints' own services."""
    downloads = Downloads(
        settings.data_path / "downloads", settings.upload_bytes, settings.request_timeout
    )
    services = Services(
        policy,
        transcription,
        chat,
        parts.admission,
        parts.metrics,
        downloads if settings.batch_file_urls else None,
    )
    return Jobs(settings, services, keys)


def create_app(
    settings: Settings,
    vllm_args: Sequence[str] = (),
    on_fatal: Callable[[str], None] = _log_fatal,
    backends: Backends | None = None,
    wyoming: socket.socket | None = None,
) -> FastAPI:
    """Build an independent app; `on_fatal` is told when the backend cannot be made to serve.

    A worker process of `--workers N` passes `backends`: the main process's, which it only
    reads (see `workers`); otherwise the app runs supervisors of its own in its lifespan.
    `wyoming`: the bound socket of `--wyoming-port`, served for the app's lifespan, and
    advertised (`--wyoming-zeroconf`) by the one process of the default `--workers 1` only.
    """
    parts = backends or own_backends(settings, vllm_args, on_fatal)
    state, doors = app_state(settings, parts)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for each in parts.supervisors:
            each.start()
        listener = Listener(wyoming, doors.wyoming) if wyoming is not None else None
        if listener is not None:
            await listener.start()
        await doors.jobs.start()  # work left by the last run, or a queue shared with others
        # a worker's port is advertised by its main process (`serving.manager`)
        advertised = discovery.advertised(settings) if backends is None else None
        try:
            async with advertised or contextlib.nullcontext(), state.keys.watching():
                yield
        finally:
            await call.end_all(doors.realtime.calls)
            if listener is not None:
                await listener.close()
            await doors.jobs.aclose()
            await state.upstream.aclose()
            if state.aligner is not None:
                await state.aligner.aclose()
            await asyncio.gather(*(each.stop() for each in parts.supervisors))
            await asyncio.to_thread(state.tracing.shutdown)  # the last spans sent

    # No /docs nor /redoc: FastAPI's pages load their scripts from a public CDN, which on the
    # playground's origin could read the key it keeps, and which an air-gapped box lacks.
    app = _App(
        title="qwen3-asr-server",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.asr = state
    app.state.chat, app.state.jobs, app.state.realtime = doors.chat, doors.jobs, doors.realtime
    install_error_handlers(app)
    app.router.routes.extend(audio.routes + alignments.routes)
    if settings.ui:
        app.router.routes.extend(ui.playground())
    for module in (chat, models, health, realtime, jobs):
        app.router.routes.extend(module.router.routes)
    _wrap(app, state, parts.rates)
    return app


def _wrap(app: FastAPI, state: AppState, rates: Rates) -> None:
    """The middleware. Added last is outermost: metrics see every answer, each carries its
    request id; the access log sees the id and the final status (an unexpected error's 500
    included); a draining server refuses before another site's page and the key are looked
    at, the key (then its rate) before the body is read; the Realtime routes' CORS headers go
    on every answer of theirs, an error's included; any answer given before the body is in
    closes its connection."""
    settings = state.settings
    file_limit = int(settings.max_file_mb * MIB)
    caps = {
        **body_caps(settings),
        "/v1/files": Cap(
            file_limit + FORM_OVERHEAD, lambda seen: over_file_limit(file_limit, seen)
        ),
        offers.PATH: Cap(offers.MAX_OFFER_BYTES, offers.offer_too_large),
    }
    app.add_middleware(BodyLimit, caps=caps)
    app.add_middleware(CancelOnDisconnect)
    app.add_middleware(RateLimit, rates=rates, metrics=state.metrics)
    app.add_middleware(Authentication, keys=state.keys, routes=app.router.routes)
    app.add_middleware(
        OriginCheck,
        allowed=settings.allowed_origins,
        keyless=settings.keyless,
        always=(offers.PATH,),  # a page may send an offer as a form, with no preflight
    )
    app.add_middleware(DrainMiddleware, drain=state.drain)
    app.add_middleware(ErrorGuard)
    app.add_middleware(RealtimeCORS, allowed=settings.allowed_origins)
    app.add_middleware(AccessLogMiddleware)
    if state.tracing is not OFF:  # off, a request pays nothing for it
        app.add_middleware(TraceRequests, tracing=state.tracing)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    app.add_middleware(CloseEarlyAnswers)
