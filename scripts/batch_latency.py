#!/usr/bin/env python3
"""What a running batch does to an interactive request's latency, on the same server.

  python scripts/batch_latency.py [--probes 40] [--lines 400] [--line-seconds 60]
      [--model-ms 200] [--max-concurrent 4] [--batch-concurrency 8] [--json OUT]

Starts the stand-in vLLM with --model-ms per answer (a model on a GPU) and `server.py
--backend-url` in front of it, whose engine takes --max-concurrent requests at once (so that
a batch can fill it) and runs --batch-concurrency batch lines. Then, one after the other:
1. idle: --probes 5 s clips transcribed one at a time, each latency timed;
2. busy: a batch of --lines recordings of --line-seconds each (cut into pieces that take
   every slot of the engine) is created, and once its lines run, the same probes are sent.
Prints each step's median and 95th percentile and their ratio (issue 46's target: the busy
latency within 1.5x of the idle one), and how far the batch got; --json writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batch_throughput import upload  # noqa: E402
from store_cost import batch_input  # noqa: E402

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from qwen3_asr_server.entrypoints.jobs.shapes import TRANSCRIPTIONS  # noqa: E402
from tests.fixtures import containers  # noqa: E402
from tests.fixtures.process import proxy_argv, running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"


async def probes(client: httpx.AsyncClient, clip: bytes, count: int) -> list[float]:
    """`count` clips transcribed one after the other: each one's latency in ms."""
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        answer = await client.post(
            "/v1/audio/transcriptions", files={"file": ("probe.wav", clip)}, data={"model": MODEL}
        )
        answer.raise_for_status()
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def spread(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered), 1), "p95_ms": round(p95, 1)}


async def measure(args: argparse.Namespace, url: str) -> dict[str, Any]:
    clip = containers.encode(spoken([(5.0, True)]), 16000, "wav")
    pattern = [(4.0, True), (1.0, False)] * int(args.line_seconds // 5)
    line = containers.encode(spoken(pattern), 16000, "wav")
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        await probes(client, clip, 3)  # warm
        idle = await probes(client, clip, args.probes)
        file_id = await upload(client, "line.wav", line, "user_data")
        source = await upload(client, "in.jsonl", batch_input([file_id] * args.lines), "batch")
        body = {"input_file_id": source, "endpoint": TRANSCRIPTIONS, "completion_window": "24h"}
        created = (await client.post("/v1/batches", json=body)).json()
        for _ in range(600):  # until its lines are queued
            if (await client.get(f"/v1/batches/{created['id']}")).json()["status"] != "validating":
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # its lines running, their pieces in every slot
        busy = await probes(client, clip, args.probes)
        batch = (await client.get(f"/v1/batches/{created['id']}")).json()
        await client.post(f"/v1/batches/{created['id']}/cancel")
    figures = {"idle": spread(idle), "busy": spread(busy), "batch": batch["request_counts"]}
    figures["ratio"] = {
        key: round(figures["busy"][key] / figures["idle"][key], 2) for key in figures["idle"]
    }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=40, help="clips timed a step (40)")
    parser.add_argument("--lines", type=int, default=400, help="the batch's lines (400)")
    parser.add_argument("--line-seconds", type=float, default=60.0, help="each line's audio (60)")
    parser.add_argument("--model-ms", type=float, default=200.0, help="per answer (200)")
    parser.add_argument("--max-concurrent", type=int, default=4, help="engine slots (4)")
    parser.add_argument("--batch-concurrency", type=int, default=8, help="lines at once (8)")
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    upstream_port, port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    argv, env = stand_in_vllm(upstream_port, MODEL, args.model_ms)
    with tempfile.TemporaryDirectory() as scratch, running(argv, env, upstream, 60):
        extra = ["--max-concurrent", str(args.max_concurrent), "--data-dir", scratch]
        extra += ["--batch-concurrency", str(args.batch_concurrency)]
        url = f"http://127.0.0.1:{port}"
        with running(proxy_argv(upstream, port, MODEL, *extra), {}, url, 60):
            figures = asyncio.run(measure(args, url))
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
