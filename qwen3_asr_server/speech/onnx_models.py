"""The neural networks that ship inside the package (`weights/`), run by ONNX Runtime: Silero
VAD (`silero`) and the CAM++ speaker embedding (`speakers.embedding`); and Smart Turn, the
end-of-turn model that ships in pipecat's wheel (`turn_end`, extra `[turn]`).

Each runs on one thread per inference, so that one caller never takes more than a core; ONNX
Runtime releases the GIL while it runs, and one session may be run from several threads at
once. Each is loaded once per process, by whichever caller needs it first: processes that
never use one never pay for it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def disable_telemetry() -> None:
    """Telemetry off. ONNX Runtime 1.32 on Linux, once imported, writes a device id and an
    event database under ~/.cache/Microsoft and a `.ses` file in the temp folder, for
    Microsoft's telemetry, unless ORT_DISABLE_TELEMETRY is set first; pyannote.audio 4 reports
    each pipeline run unless PYANNOTE_METRICS_ENABLED is false. A self-hosted server sends
    nothing anywhere; an operator who wants either on can set its variable.

    Called by the entry points before any thread starts: the models load in a worker thread,
    and setenv there would race getenv in the others (which can crash glibc).
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "false")


def session(name: str) -> Any:
    """An ONNX Runtime session of `weights/<name>`, on one thread."""
    return session_of(resources.files("qwen3_asr_server").joinpath("weights", name).read_bytes())


def session_of(model: bytes | str) -> Any:
    """An ONNX Runtime session of a model (its bytes, or the path of its file), on one thread."""
    import onnxruntime  # here: processes that never run a network never load it

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


class Shared(Generic[T]):
    """The process's one instance of a network, loaded on first use, from any thread."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._value: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._load()
            return self._value
