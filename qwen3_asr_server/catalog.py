"""The model ids clients may use: the served id and its aliases (e.g. `whisper-1`)."""

from __future__ import annotations

import time
from typing import Any

from .errors import model_not_found


class Catalog:
    def __init__(self, served: str, aliases: list[str]) -> None:
        self.served = served
        self.ids = [served, *(alias for alias in aliases if alias != served)]
        self._created = int(time.time())

    def resolve(self, requested: str | None) -> str:
        """The served id for a requested id (none given means the served model)."""
        if requested is None or requested in self.ids:
            return self.served
        raise model_not_found(requested)

    def card(self, model_id: str) -> dict[str, Any]:
        """An OpenAI model object."""
        self.resolve(model_id)
        return {
            "id": model_id,
            "object": "model",
            "created": self._created,
            "owned_by": "qwen3-asr-server",
            "root": self.served,
        }

    def listing(self) -> dict[str, Any]:
        return {"object": "list", "data": [self.card(model_id) for model_id in self.ids]}
