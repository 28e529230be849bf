"""What one chat completion asks for, with no HTTP and no wire model in it: the body passed
on to vLLM, and what the service reads of it.

The route fills one from the checked wire model
(`entrypoints.chat.protocol.ChatRequest.completion`), and so does a batch line
(`entrypoints.jobs.execute`), so that the service (`service.ChatService`) depends on neither
pydantic nor the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Request:
    # The checked body, sent on to vLLM; the service makes it ready in place (dropped fields
    # out, control tokens out of the messages, the backend's model id).
    body: dict[str, Any]
    requested_model: str | None  # the id the client asked for; answered under it
    stream: bool
    continue_final_message: bool  # the last (assistant) message is continued, not answered
    dropped: tuple[str, ...] = ()  # OpenAI's account fields the body holds: taken out
