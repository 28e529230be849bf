"""The app factory: wires settings, state, routes, middleware and the lifespan together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI

from . import __version__, alignment, errors
from .backend import launch, roles
from .backend.aligner import Aligner
from .backend.supervisor import Supervisor
from .backend.upstream import Upstream
from .catalog import Catalog
from .metrics import Metrics
from .middleware.access_log import AccessLogMiddleware
from .middleware.body_limits import MIB, BodyLimit, body_caps
from .middleware.disconnect import CancelOnDisconnect
from .middleware.drain import Drain, DrainMiddleware
from .middleware.error_guard import ErrorGuard
from .middleware.metrics import MetricsMiddleware
from .middleware.request_id import RequestIdMiddleware
from .routes import audio, chat, health, models, realtime
from .settings import Settings
from .state import AppState

logger = logging.getLogger(__name__)


def _log_fatal(message: str) -> None:
    logger.error("vLLM backend failed: %s", message)


def _aligner(
    settings: Settings, metrics: Metrics, on_fatal: Callable[[str], None]
) -> Aligner | None:
    backend = roles.aligner(settings)
    if backend is None:
        return None
    supervisor = Supervisor(backend, settings, metrics, on_fatal)
    # A launched checkpoint says how long its bins are; one given by URL is the released one.
    # A config.json that cannot say ends the server: its supervisor cannot launch it.
    segment_time = alignment.SEGMENT_TIME
    if settings.aligner:
        with contextlib.suppress(launch.LaunchError):
            segment_time = launch.aligner_config(settings.aligner).segment_time
    return Aligner(supervisor, segment_time, timeout=settings.request_timeout)


def create_app(
    settings: Settings,
    vllm_args: Sequence[str] = (),
    on_fatal: Callable[[str], None] = _log_fatal,
) -> FastAPI:
    """Build an independent app; `on_fatal` is told when the backend cannot be made to serve."""
    metrics = Metrics()
    supervisor = Supervisor(roles.asr(settings, vllm_args), settings, metrics, on_fatal)
    upstream = Upstream(settings, supervisor)
    state = AppState(
        settings=settings,
        metrics=metrics,
        catalog=Catalog(settings.served_name, settings.model_aliases),
        supervisor=supervisor,
        upstream=upstream,
        upload_limit=int(settings.max_upload_mb * MIB),
        drain=Drain(upstream, settings.shutdown_timeout),
        aligner=_aligner(settings, metrics, on_fatal),
    )
    supervisors = [supervisor] + ([state.aligner.supervisor] if state.aligner else [])

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for each in supervisors:
            each.start()
        try:
            yield
        finally:
            await upstream.aclose()
            if state.aligner is not None:
                await state.aligner.aclose()
            await asyncio.gather(*(each.stop() for each in supervisors))

    app = FastAPI(title="qwen3-asr-server", version=__version__, lifespan=lifespan)
    app.state.asr = state
    errors.install(app)
    for module in (audio, chat, models, health, realtime):
        app.include_router(module.router)
    # Added last is outermost: metrics see every answer, each carries its request id; the
    # access log sees the id and the final status (an unexpected error's 500 included).
    json_limit = int(settings.max_json_mb * MIB)
    app.add_middleware(BodyLimit, caps=body_caps(state.upload_limit, json_limit))
    app.add_middleware(CancelOnDisconnect)
    app.add_middleware(DrainMiddleware, drain=state.drain)
    app.add_middleware(ErrorGuard)
    app.add_middleware(AccessLogMiddleware)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
