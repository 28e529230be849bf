"""The Realtime API's settings (`/v1/realtime`), a part of `Settings`.

Declared here, with the other groups, and mixed into `composite.Settings`, so each is still one
flag, one variable and one default; the engine reads one of them (`--vllm-realtime`) without
importing the Realtime API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field
from pydantic_settings import NoDecode


class RealtimeSettings(BaseModel):
    vllm_realtime: bool = Field(
        False,
        description="Start vLLM with Qwen3-ASR's realtime architecture and stream realtime "
        "sessions' speech into its /v1/realtime as it is spoken (sessions without language, "
        "prompt or logprobs).",
    )
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        [],
        description="Comma-separated web origins (`https://app.example.com`, or `*` for any) "
        "whose pages may open /v1/realtime, besides the server's own, and mint client secrets "
        "and make WebRTC calls with CORS; without --api-key, the only pages besides the "
        "server's own that may POST or DELETE anything; clients that send no `Origin` (SDKs, "
        "servers) are not affected.",
        json_schema_extra={"metavar": "ORIGIN,..."},
    )
    max_sessions: int = Field(
        64,
        ge=1,
        description="Realtime sessions open at once, over the whole server (every worker); "
        "beyond it a handshake gets 429 session_limit_reached with Retry-After (or a close with "
        "1013).",
        json_schema_extra={"metavar": "N"},
    )
    smart_turn: bool = Field(
        False,
        description="With semantic_vad, ask Smart Turn v3.2 (an end-of-turn model, extra "
        "`[turn]`) at each pause whether the speaker is done, and end the turn there if so; "
        "off by default, as measured (docs: Performance, End-of-turn model).",
    )
    smart_turn_model: Path | None = Field(
        None,
        description="The Smart Turn ONNX file for --smart-turn; by default the one in the "
        "installed pipecat-ai wheel.",
        json_schema_extra={"metavar": "PATH"},
    )
