"""A request's JSON body, and a body checked against its model: one reading for every route
that takes JSON, so that each refuses a bad body with the same 400.

The body must say it is JSON (`Content-Type: application/json`, as the SDKs send it): a page
of another site may send `text/plain` or a form to any server without a CORS preflight, but
not `application/json`, so a JSON route cannot be driven by such a "simple" request."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from ...errors import APIError, invalid
from . import fields

JSON = "application/json"


async def json_body(request: Request) -> Any:
    """The body parsed; a 415 for a body not sent as JSON, a 400 `invalid_json` for one that
    does not parse (nesting too deep to parse is one too)."""
    sent = request.headers.get("content-type", "")
    if sent.partition(";")[0].strip().lower() != JSON:
        raise APIError(
            415,
            f"The body must be sent as {JSON} (Content-Type: {JSON}), not {sent or 'untyped'}.",
            code="unsupported_media_type",
        )
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
