"""OpenAI's Batches API for the audio routes and chat: `POST /v1/batches`,
`GET /v1/batches`, `GET /v1/batches/{id}` and `POST /v1/batches/{id}/cancel`. The work is
the runner's (`jobs.runner`); these routes only write and read the store."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ..protocol import jobs as protocol
from ..protocol.body import json_body, read
from ..state import State

router = APIRouter()


@router.post("/v1/batches")
async def create_batch(request: Request, state: State) -> dict[str, Any]:
    body = await json_body(request)
    asked: protocol.BatchCreate = read(protocol.BatchCreate, body, text=False)
    values = asked.model_dump()
    expires = asked.output_expires_after
    values["output_expires_after"] = expires.seconds if expires else None
    return await state.jobs.add_batch(values)


@router.get("/v1/batches")
async def list_batches(
    state: State,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    return await state.jobs.batches(after, limit)


@router.get("/v1/batches/{batch_id}")
async def retrieve_batch(batch_id: str, state: State) -> dict[str, Any]:
    return await state.jobs.batch(batch_id)


@router.post("/v1/batches/{batch_id}/cancel")
async def cancel_batch(batch_id: str, state: State) -> dict[str, Any]:
    return await state.jobs.cancel(batch_id)
