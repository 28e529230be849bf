"""A request's JSON body, and a body checked against its model: one reading for every route
that takes JSON, so that each refuses a bad body with the same 400."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from ..errors import invalid
from . import fields


async def json_body(request: Request) -> Any:
    """The body parsed, or a 400 `invalid_json` (nesting too deep to parse is one too)."""
    try:
        return await request.json()
    except (ValueError, RecursionError) as exc:
        raise invalid("The request body is not valid JSON.", None, code="invalid_json") from exc


def read(model: type[BaseModel], values: Any, text: bool) -> Any:
    """`values` as `model`, or the 400 for the first field that is wrong (`text`: they came
    in a multipart form, as text)."""
    if not isinstance(values, dict):
        raise invalid("The request body must be a JSON object.", None)
    try:
        return model.model_validate(values, context={fields.TEXT: text})
    except ValidationError as exc:
        raise fields.api_error(exc) from None
