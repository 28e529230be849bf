"""The log's settings: how much it says, and whether what was said is in it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LoggingSettings(BaseModel):
    log_transcripts: bool = Field(
        False, description="Log the text of transcripts (off: only ids, sizes and timings)."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="Log level of the server (vLLM's own output is relayed as is); keys and "
        "tokens stay out of the log at every level.",
    )
