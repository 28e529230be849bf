"""GET /health (real readiness of the backends), GET /livez (the process is well) and GET
/metrics; all open (see `entrypoints.middleware.auth`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from ..backend.supervisor import SERVING, BackendState, status
from ..errors import RETRY_AFTER_SECONDS
from .state import State

router = APIRouter()


def _backend(supervisor: BackendState) -> dict[str, Any]:
    return {
        "status": status(supervisor),
        "backend": supervisor.flavour,
        "device": supervisor.device,
        "restarts": supervisor.restarts,
    }


@router.get("/health")
async def health(state: State) -> Response:
    """The ASR backend's state at the top level (as before there was an aligner); with an
    aligner its own under `aligner`. 200 only when every backend is ready: a server started
    for word timestamps is not ready without them. A sleeping backend (--idle-sleep) is
    ready: its next request waits for it to wake, and is served."""
    supervisors: list[BackendState] = [state.supervisor]
    body: dict[str, Any] = {"model": state.catalog.served, **_backend(state.supervisor)}
    if state.aligner is not None:
        supervisors.append(state.aligner.supervisor)
        body["aligner"] = _backend(state.aligner.supervisor)
    unready = [each for each in supervisors if status(each) not in SERVING]
    if state.drain.draining:
        body["status"] = "stopping"
    elif unready:
        body["status"] = status(unready[0])
    if body["status"] in SERVING:
        return JSONResponse(body)
    return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


@router.get("/livez")
async def livez() -> Response:
    """200 for as long as this process serves HTTP, whatever vLLM is doing: a liveness probe
    on /health would have a pod killed while vLLM merely loads or restarts (the supervisor
    restarts it, and ends the server when it cannot)."""
    return JSONResponse({"status": "alive"})


@router.get("/metrics")
async def metrics(state: State) -> Response:
    payload, content_type = state.metrics.render()
    return Response(payload, media_type=content_type)
