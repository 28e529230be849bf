"""GET /v1/models and /v1/models/{id}: the served model and its aliases."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from .state import State

router = APIRouter()


@router.get("/v1/models")
async def list_models(state: State) -> dict[str, Any]:
    return state.catalog.listing()


@router.get("/v1/models/{model_id:path}")
async def retrieve_model(model_id: str, state: State) -> dict[str, Any]:
    return state.catalog.card(model_id)
