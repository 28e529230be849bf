"""The vLLM processes behind the API, described once so that one supervisor can run each.

There is always the ASR model's. Word timestamps add Qwen3-ForcedAligner's: `--aligner`
launches it beside the ASR one, `--aligner-url` names one already running. A backend given
by URL is only watched; a launched one is also started, restarted and stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from . import launch

ASR = "asr"
ALIGNER = "aligner"


class RoleSettings(launch.LaunchSettings, Protocol):
    """What the backends are made of: what launches them, and the URLs of those already
    running (`--backend-url`, `--aligner-url`) with the headers sent to the first."""

    backend_url: str | None
    aligner_url: str | None

    @property
    def backend_headers(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class Backend:
    role: str  # ASR or ALIGNER: its name in logs, /health and metric labels
    model: str  # the checkpoint it serves (or, for one given by URL, what we call it)
    url: str | None  # a backend already running there; None: launch one
    command: Callable[[int], launch.Launch] | None  # the launch on a loopback port
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request
    # The id requests must name. None: whatever the backend lists first.
    served_name: str | None = None


def asr(settings: RoleSettings, vllm_args: Sequence[str]) -> Backend:
    args = list(vllm_args)
    return Backend(
        role=ASR,
        model=settings.model,
        url=settings.backend_url,
        command=None if settings.backend_url else lambda port: launch.build(settings, port, args),
        headers=settings.backend_headers,
        served_name=settings.served_name,
    )


def every(settings: RoleSettings, vllm_args: Sequence[str]) -> list[Backend]:
    """The ASR backend, then the aligner's when there is one."""
    found = aligner(settings)
    return [asr(settings, vllm_args)] + ([] if found is None else [found])


def aligner(settings: RoleSettings) -> Backend | None:
    if settings.aligner_url:
        return Backend(
            role=ALIGNER, model=settings.aligner_url, url=settings.aligner_url, command=None
        )
    if settings.aligner:
        return Backend(
            role=ALIGNER,
            model=settings.aligner,
            url=None,
            command=lambda port: launch.build_aligner(settings, port),
            served_name=settings.aligner,
        )
    return None
