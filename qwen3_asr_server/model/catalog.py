"""The model ids clients may use: the served id, its aliases (e.g. `gpt-transcribe`), and
OpenAI's diarizing model, which is the served model with the diarizer after it.

REST and Realtime sessions check a requested id against the same catalogue, so a model that
one refuses the other refuses too; only the transcriptions route and Realtime sessions label
speakers, so only they take the diarizing model.
"""

from __future__ import annotations

from typing import Any

from ..errors import APIError, invalid, model_not_found

# OpenAI's diarizing model: never a plain alias, since answering as it promises speakers
DIARIZE = "gpt-4o-transcribe-diarize"


class Catalog:
    def __init__(
        self, served: str, aliases: list[str], created: float, diarizes: bool = False
    ) -> None:
        self.served = served
        self.diarizes = diarizes  # a diarizer runs: DIARIZE is served by the audio routes
        plain = [alias for alias in aliases if alias not in (served, DIARIZE)]
        self.ids = [served, *plain, *([DIARIZE] if diarizes else [])]
        self._created = int(created)  # the cards' `created`: when the server started

    def refusal(self, requested: str, speakers: bool = False) -> APIError | None:
        """Why `requested` cannot be served (its `param` is `model`), or None if it can;
        `speakers`: the caller labels speakers, so it may take the diarizing model."""
        if requested == DIARIZE and not (self.diarizes and speakers):
            where = (
                "This endpoint does not label speakers: /v1/audio/transcriptions does "
                "(response_format diarized_json), and so do Realtime sessions."
                if self.diarizes
                else "This server was started with --diarizer none."
            )
            return invalid(
                f"The model {DIARIZE!r} is not available here. {where} Use {self.served!r} "
                "or one of its aliases for transcripts without speaker labels.",
                "model",
                code="unsupported_value",
            )
        if requested in self.ids:
            return None
        return model_not_found(requested)

    def resolve(self, requested: str | None, speakers: bool = False) -> str:
        """The served id for a requested id (none given means the served model)."""
        error = None if requested is None else self.refusal(requested, speakers)
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
