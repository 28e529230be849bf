"""The Files and Batches routes' requests: what `POST /v1/files` and `POST /v1/batches` take,
checked field by field (a 400 naming the first that is wrong), as OpenAI's API takes them."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..protocol import fields
from ..protocol.fields import Between, OneOf
from .shapes import ENDPOINTS

HOUR, DAYS_30 = 3600, 30 * 86400  # the range OpenAI's expires_after takes
Seconds = Annotated[int, Between(HOUR, DAYS_30, whole=True)]


class ExpiresAfter(BaseModel):
    """OpenAI's `expires_after`: a number of seconds after the object's creation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    anchor: Annotated[str, OneOf(("created_at",))]
    seconds: Seconds


class FileUpload(BaseModel):
    """`POST /v1/files`'s form, but for the file itself."""

    model_config = ConfigDict(frozen=True)

    purpose: Annotated[str, OneOf(("batch", "user_data"))]
    expires_after: ExpiresAfter | None = None


class BatchCreate(BaseModel):
    """`POST /v1/batches`'s body."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_file_id: str
    endpoint: Annotated[str, OneOf(ENDPOINTS)]
    completion_window: Annotated[str, OneOf(("24h",))]
    metadata: dict[str, str] | None = Field(None)
    output_expires_after: ExpiresAfter | None = None

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and (
            len(value) > 16 or any(len(k) > 64 or len(v) > 512 for k, v in value.items())
        ):
            raise fields.problem(
                "invalid_value",
                "'{param}' takes at most 16 keys of up to 64 characters, values of up to 512.",
            )
        return value
