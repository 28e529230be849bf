#!/usr/bin/env python3
"""What a batch costs against the same work sent synchronously, on the same server.

  python scripts/batch_throughput.py [--clips 1000] [--clip-seconds 5] [--long 10]
      [--long-seconds 3600] [--concurrency 16] [--model-ms 0] [--rounds 1]
      [--no-postgres] [--store-lines 1000] [--json OUT]

Starts the stand-in vLLM (tests/fixtures; --model-ms makes each answer take that long, as a
model on a GPU would) and `server.py --backend-url` in front of it with `--batch-concurrency
C` (--concurrency) and SQLite in a fresh --data-dir; unless --no-postgres, also a throwaway
PostgreSQL on loopback (tests/fixtures/postgres.py) and a second such server with `--jobs-db`
on it. The work: --clips clips of --clip-seconds of speech as 16 kHz mono 16-bit WAV, and
--long recordings of --long-seconds as MP3 (speech 4 s, pause 1 s), made with numpy and PyAV.
Then, each round in turn (every other round in the reverse order):
1. sync: every recording POSTed to /v1/audio/transcriptions by C clients at once;
2. batch: every recording uploaded (POST /v1/files, purpose user_data, C at once: timed and
   measured apart), a JSONL of one line each, POST /v1/batches, polled until it ends; its
   counts and output checked (every line answered 200);
3. the same batch on the PostgreSQL server.
Each step reads the CPU of the server's process (and the upstream's, and the database's)
from /proc before and after. Last, the store alone (`scripts/store_cost.py`): a batch of
--store-lines lines through it, called as the runner calls it, in this process, on SQLite
and on PostgreSQL: its own CPU per line. Prints a table; --json writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from store_cost import batch_input, store_cost  # noqa: E402

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from qwen3_asr_server.entrypoints.jobs.shapes import TRANSCRIPTIONS  # noqa: E402
from tests.fixtures import containers  # noqa: E402
from tests.fixtures.postgres import PostgresServer  # noqa: E402
from tests.fixtures.process import cpu_seconds, proxy_argv, running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"
POLL = 0.25  # seconds between looks at a batch's status
FINAL = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class Recording:
    name: str
    audio: bytes
    seconds: float


@dataclass(frozen=True)
class Server:
    label: str
    url: str
    pid: int
    database_pid: int | None  # PostgreSQL's postmaster: its CPU, the store's other half


def work(args: argparse.Namespace) -> list[Recording]:
    """The long recordings first (so that none is the tail of a run), then the clips; the
    bytes are made once and shared by every recording of a kind."""
    clip = containers.encode(spoken([(args.clip_seconds, True)]), 16000, "wav")
    pattern = [(4.0, True), (1.0, False)] * int(args.long_seconds // 5)
    long = containers.encode(spoken(pattern), 16000, "mp3") if args.long else b""
    return [
        *(Recording(f"long-{i:03}.mp3", long, 5.0 * len(pattern) / 2) for i in range(args.long)),
        *(Recording(f"clip-{i:05}.wav", clip, args.clip_seconds) for i in range(args.clips)),
    ]


async def each(concurrency: int, items: list[Any], job: Any) -> list[Any]:
    """`job(item)` for every item, `concurrency` at once; the answers in order."""
    answers: list[Any] = [None] * len(items)
    left = iter(enumerate(items))

    async def worker() -> None:
        for index, item in left:
            answers[index] = await job(item)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answers


@contextlib.contextmanager
def measured(server: Server, upstream_pid: int, figures: dict[str, Any]) -> Iterator[None]:
    """Wall time and the CPU seconds of the server, the upstream and the database, into
    `figures`."""
    pids = {"server": server.pid, "upstream": upstream_pid, "database": server.database_pid}
    before = {name: cpu_seconds(pid) for name, pid in pids.items() if pid is not None}
    start = time.monotonic()
    yield
    figures["wall_s"] = round(time.monotonic() - start, 3)
    for name, spent in before.items():
        pid = pids[name]
        assert pid is not None
        figures[f"{name}_cpu_s"] = round(cpu_seconds(pid) - spent, 3)


async def sync(server: Server, recordings: list[Recording], concurrency: int) -> int:
    """Every recording transcribed synchronously: how many were not answered 200."""
    async with httpx.AsyncClient(base_url=server.url, timeout=7200) as client:

        async def post(recording: Recording) -> bool:
            answer = await client.post(
                "/v1/audio/transcriptions",
                files={"file": (recording.name, recording.audio)},
                data={"model": MODEL},
            )
            return answer.status_code == 200

        done = await each(concurrency, recordings, post)
    return done.count(False)


async def upload(client: httpx.AsyncClient, name: str, content: bytes, purpose: str) -> str:
    answer = await client.post(
        "/v1/files", files={"file": (name, content)}, data={"purpose": purpose}
    )
    answer.raise_for_status()
    file_id: str = answer.json()["id"]
    return file_id


async def until_done(client: httpx.AsyncClient, batch_id: str) -> dict[str, Any]:
    while True:
        answer = await client.get(f"/v1/batches/{batch_id}")
        answer.raise_for_status()
        batch: dict[str, Any] = answer.json()
        if batch["status"] in FINAL:
            return batch
        await asyncio.sleep(POLL)


async def batch(
    server: Server, recordings: list[Recording], concurrency: int, upstream_pid: int
) -> dict[str, Any]:
    """Every recording uploaded, then transcribed as one batch: the upload's and the batch's
    figures, and what the batch answered."""
    figures: dict[str, Any] = {"upload": {}}
    async with httpx.AsyncClient(base_url=server.url, timeout=7200) as client:
        with measured(server, upstream_pid, figures["upload"]):
            file_ids = await each(
                concurrency,
                recordings,
                lambda recording: upload(client, recording.name, recording.audio, "user_data"),
            )
            source = await upload(client, "input.jsonl", batch_input(file_ids), "batch")
        with measured(server, upstream_pid, figures):
            created = await client.post(
                "/v1/batches",
                json={
                    "input_file_id": source,
                    "endpoint": TRANSCRIPTIONS,
                    "completion_window": "24h",
                },
            )
            created.raise_for_status()
            ended = await until_done(client, created.json()["id"])
        figures["status"] = ended["status"]
        figures["request_counts"] = ended["request_counts"]
        output = ended.get("output_file_id")
        answered = await client.get(f"/v1/files/{output}/content") if output else None
        outputs = answered.text.splitlines() if answered is not None else []
        figures["answered_200"] = sum(
            json.loads(line)["response"]["status_code"] == 200 for line in outputs
        )
        for file_id in [*file_ids, source, output, ended.get("error_file_id")]:
            if file_id:
                await client.delete(f"/v1/files/{file_id}")
    return figures


def per_audio(figures: dict[str, Any], audio_seconds: float) -> None:
    """Throughput and CPU per audio second, beside the raw figures."""
    figures["audio_s_per_wall_s"] = round(audio_seconds / figures["wall_s"], 2)
    figures["server_cpu_ms_per_audio_s"] = round(figures["server_cpu_s"] * 1000 / audio_seconds, 4)


def start_servers(
    stack: contextlib.ExitStack, args: argparse.Namespace, scratch: Path, longest: int
) -> tuple[int, list[Server], PostgresServer | None]:
    """The stand-in, the SQLite server and (unless --no-postgres) PostgreSQL with its server:
    the stand-in's pid, the servers, PostgreSQL."""
    upstream_port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    argv, env = stand_in_vllm(upstream_port, MODEL, args.model_ms)
    upstream_pid = stack.enter_context(running(argv, env, upstream, 60))
    extra = ["--batch-concurrency", str(args.concurrency)]
    extra += ["--max-upload-mb", str(max(25, longest // 2**20 + 1))]
    stores: list[tuple[str, list[str], int | None]] = [
        ("sqlite", ["--data-dir", str(scratch / "sqlite")], None)
    ]
    postgres = None
    if args.postgres:
        postgres = PostgresServer().start()
        stack.callback(postgres.stop)
        url = postgres.url(postgres.create_database())
        postmaster = int((postgres.data / "postmaster.pid").read_text().split()[0])
        options = ["--data-dir", str(scratch / "postgresql"), "--jobs-db", url]
        stores.append(("postgresql", options, postmaster))
    servers = []
    for label, options, database_pid in stores:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = proxy_argv(upstream, port, MODEL, *extra, *options)
        pid = stack.enter_context(running(argv, {}, url, 60))
        servers.append(Server(label, url, pid, database_pid))
    return upstream_pid, servers, postgres


async def one_round(
    order: list[tuple[str, Server]], recordings: list[Recording], args: argparse.Namespace,
    upstream_pid: int,
) -> dict[str, Any]:  # fmt: skip
    figures: dict[str, Any] = {}
    for name, server in order:
        if name == "sync":
            figures[name] = {}
            with measured(server, upstream_pid, figures[name]):
                failed = await sync(server, recordings, args.concurrency)
            figures[name]["failed"] = failed
        else:
            figures[name] = await batch(server, recordings, args.concurrency, upstream_pid)
    return figures


def summary(rounds: list[dict[str, Any]], audio_seconds: float, lines: int) -> dict[str, Any]:
    """Each mode over every round: throughput and CPU per audio second, and each batch
    against sync (the ratio of their throughputs and CPU, the CPU it added per line)."""
    audio, count = audio_seconds * len(rounds), lines * len(rounds)
    total: dict[str, Any] = {}
    for name in rounds[0]:
        keys = ("wall_s", "server_cpu_s", "upstream_cpu_s", "database_cpu_s")
        total[name] = {
            key: round(sum(each[name][key] for each in rounds), 3)
            for key in keys
            if key in rounds[0][name]
        }
        per_audio(total[name], audio)
    sync_figures = total["sync"]
    sync_figures["failed"] = sum(each["sync"]["failed"] for each in rounds)
    for name in total:
        if name == "sync":
            continue
        figures = total[name]
        figures["lines_completed"] = sum(
            each[name]["request_counts"]["completed"] for each in rounds
        )
        figures["lines"] = count
        upload = [each[name]["upload"] for each in rounds]
        figures["upload_wall_s"] = round(sum(each["wall_s"] for each in upload), 3)
        figures["upload_server_cpu_ms_per_audio_s"] = round(
            sum(each["server_cpu_s"] for each in upload) * 1000 / audio, 4
        )
        spent = sync_figures["server_cpu_s"]  # none at all: too little work to tell
        added = figures["server_cpu_s"] - spent
        figures["vs_sync"] = {
            "throughput_ratio": round(
                figures["audio_s_per_wall_s"] / sync_figures["audio_s_per_wall_s"], 3
            ),
            "cpu_ratio": round(figures["server_cpu_s"] / spent, 3) if spent else None,
            "added_cpu_ms_per_line": round(added * 1000 / count, 3),
        }
    return total


def table(figures: dict[str, Any]) -> str:
    rows = ["mode | wall s | audio s / wall s | server CPU ms / audio s | vs sync"]
    for name, each in figures["summary"].items():
        versus = each.get("vs_sync")
        against = (
            f"throughput x{versus['throughput_ratio']}, CPU x{versus['cpu_ratio']}, "
            f"{versus['added_cpu_ms_per_line']:+} ms CPU per line"
            if versus
            else "-"
        )
        rows.append(
            f"{name} | {each['wall_s']} | {each['audio_s_per_wall_s']} | "
            f"{each['server_cpu_ms_per_audio_s']} | {against}"
        )
    for name, each in figures["store"].items():
        rows.append(f"store alone, {name}: {each}")
    return "\n".join(rows)


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    recordings = work(args)
    audio_seconds = sum(recording.seconds for recording in recordings)
    longest = max(len(recording.audio) for recording in recordings)
    with contextlib.ExitStack() as stack:
        upstream_pid, servers, postgres = start_servers(stack, args, scratch, longest)
        steps = [("sync", servers[0])] + [(f"batch_{each.label}", each) for each in servers]
        for server in servers:  # warm: pools, the store opened and its runner started
            warm = [("sync", server), ("batch", server)]
            asyncio.run(one_round(warm, recordings[-1:], args, upstream_pid))
        rounds = []
        for index in range(args.rounds):
            order = steps if index % 2 == 0 else steps[::-1]
            rounds.append(asyncio.run(one_round(order, recordings, args, upstream_pid)))
        store = {"sqlite": store_cost(None, scratch / "store", args.store_lines, None)}
        if postgres is not None:
            url = postgres.url(postgres.create_database())
            store["postgresql"] = store_cost(
                url, scratch, args.store_lines, servers[-1].database_pid
            )
    return {
        "upstream": f"stand-in, {args.model_ms} ms",
        "concurrency": args.concurrency,
        "clips": {"count": args.clips, "seconds": args.clip_seconds, "format": "wav"},
        "long": {"count": args.long, "seconds": args.long_seconds, "format": "mp3"},
        "audio_seconds": audio_seconds,
        "lines": len(recordings),
        "rounds": rounds,
        "summary": summary(rounds, audio_seconds, len(recordings)),
        "store": store,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=1000, help="short clips (default: 1000)")
    parser.add_argument("--clip-seconds", type=float, default=5.0, help="each (default: 5)")
    parser.add_argument("--long", type=int, default=10, help="long recordings (default: 10)")
    parser.add_argument("--long-seconds", type=float, default=3600.0, help="each (3600)")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="clients, and --batch-concurrency (16)"
    )
    parser.add_argument(
        "--model-ms", type=float, default=0.0, help="the stand-in's time per answer (default: 0)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="of every step (default: 1)")
    parser.add_argument("--no-postgres", dest="postgres", action="store_false", help="SQLite only")
    parser.add_argument(
        "--store-lines", type=int, default=1000, help="lines of the store alone (1000)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    if args.long and args.long_seconds < 5:
        parser.error("--long-seconds is at least 5")
    with tempfile.TemporaryDirectory() as scratch:
        figures = measure(args, Path(scratch))
    print(json.dumps(figures["summary"], indent=2))
    print(table(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    failed = figures["summary"]["sync"]["failed"]
    incomplete = any(
        each["lines_completed"] != each["lines"]
        for name, each in figures["summary"].items()
        if name != "sync"
    )
    return 1 if failed or incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
