"""The model ids clients may use: the served id and its aliases (e.g. `gpt-transcribe`).

REST and Realtime sessions check a requested id against the same catalogue, so a model that
one refuses the other refuses too.
"""

from __future__ import annotations

from typing import Any

from .errors import APIError, invalid, model_not_found

# OpenAI's diarizing model: never an alias, since answering as it would promise speakers
DIARIZE = "gpt-4o-transcribe-diarize"


class Catalog:
    def __init__(self, served: str, aliases: list[str], created: float) -> None:
        self.served = served
        self.ids = [served, *(alias for alias in aliases if alias not in (served, DIARIZE))]
        self._created = int(created)  # the cards' `created`: when the server started

    def refusal(self, requested: str) -> APIError | None:
        """Why `requested` cannot be served (its `param` is `model`), or None if it can."""
        if requested in self.ids:
            return None
        if requested == DIARIZE:
            return invalid(
                f"The model {DIARIZE!r} is not available: Qwen3-ASR does not tell speakers "
                f"apart, so there is no diarization here. Use {self.served!r} or one of its "
                "aliases for transcripts without speaker labels.",
                "model",
                code="unsupported_value",
            )
        return model_not_found(requested)

    def resolve(self, requested: str | None) -> str:
        """The served id for a requested id (none given means the served model)."""
        error = None if requested is None else self.refusal(requested)
        if error is not None:
            raise error
        return self.served

    def card(self, model_id: str) -> dict[str, Any]:
        """An OpenAI model object."""
        if model_id not in self.ids:
            raise model_not_found(model_id)
        return {
            "id": model_id,
            "object": "model",
            "created": self._created,
            "owned_by": "qwen3-asr-server",
            "root": self.served,
        }

    def listing(self) -> dict[str, Any]:
        return {"object": "list", "data": [self.card(model_id) for model_id in self.ids]}
