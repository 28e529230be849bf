"""GET /health (real readiness of the backend) and GET /metrics; both without auth."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from ..errors import RETRY_AFTER_SECONDS
from ..state import State

router = APIRouter()


@router.get("/health")
async def health(state: State) -> Response:
    supervisor = state.supervisor
    body = {
        "status": "stopping" if state.drain.draining else supervisor.status,
        "model": state.catalog.served,
        "backend": supervisor.flavour,
        "device": supervisor.device,
        "restarts": supervisor.restarts,
    }
    if supervisor.ready and not state.drain.draining:
        return JSONResponse(body)
    return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


@router.get("/metrics")
async def metrics(state: State) -> Response:
    payload, content_type = state.metrics.render()
    return Response(payload, media_type=content_type)
