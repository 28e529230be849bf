#!/usr/bin/env python3
"""What the jobs' store costs a batch line by itself, without the server around it.

  python scripts/store_cost.py [--lines 1000] [--jobs-db postgresql://...]

One batch of --lines lines through `qwen3_asr_server.entrypoints.jobs.store.Store`, calling it as
the runner does for each line (claimed, its file looked up, its answer kept) and for the batch
(added, claimed, its lines queued; then its answers read back and the batch ended), in this
process, on SQLite in a scratch folder (or the PostgreSQL database --jobs-db names: use an
empty one). Prints the CPU and wall milliseconds per line, and each call's share.
`scripts/batch_throughput.py` runs it beside its batches.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.entrypoints.jobs import shapes  # noqa: E402
from qwen3_asr_server.entrypoints.jobs.database import engine_for  # noqa: E402
from qwen3_asr_server.entrypoints.jobs.shapes import TRANSCRIPTIONS  # noqa: E402
from qwen3_asr_server.entrypoints.jobs.store import Store  # noqa: E402
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT  # noqa: E402
from tests.fixtures.process import cpu_seconds  # noqa: E402

MODEL = "qwen3-asr"
OWNER = "store-cost"
BATCH = "batch_store_cost"


def batch_input(file_ids: list[str]) -> bytes:
    """A batch's JSONL: a transcription of each file, one line each."""
    rows = [
        {
            "custom_id": f"line-{index}",
            "method": "POST",
            "url": TRANSCRIPTIONS,
            "body": {"file": file_id, "model": MODEL},
        }
        for index, file_id in enumerate(file_ids)
    ]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


class Clock:
    """CPU seconds of this process spent in each kind of call."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def __call__(self, kind: str, call: Callable[..., Any], *args: Any) -> Any:
        start = time.process_time()
        try:
            return call(*args)
        finally:
            self.spent[kind] = self.spent.get(kind, 0.0) + time.process_time() - start


def one_batch(store: Store, count: int, clock: Clock) -> None:
    """A batch of `count` lines, every one answered, as the runner takes it through."""
    now = int(time.time())
    file_row = {"id": "file-x", "purpose": "user_data", "filename": "x.wav", "bytes": 1,
                "created_at": now, "expires_at": now + 3600, "project": DEFAULT}  # fmt: skip
    store.add_file(file_row)
    rows, _ = shapes.read_input(batch_input(["file-x"] * count).splitlines(), TRANSCRIPTIONS)
    batch = {"id": BATCH, "endpoint": TRANSCRIPTIONS, "input_file_id": "file-x",
             "completion_window": "24h", "status": "validating", "created_at": now,
             "expires_at": now + 86400, "project": DEFAULT}  # fmt: skip
    clock("batch", store.add_batch, batch)
    clock("batch", store.claim_batch, OWNER, 30)
    clock("batch", store.start_batch, BATCH, OWNER, rows, now)
    while (line := clock("claim_line", store.claim_line, OWNER, 30)) is not None:
        clock("file", store.file, line["body"]["file"], line["project"])
        output = shapes.answered(line, 200, "batch_req_x", {"text": "Hello world."})
        clock("finish_line", store.finish_line, BATCH, line["idx"], OWNER, False, output)
    clock("batch", store.claim_batch, OWNER, 30)
    clock("batch", store.done_lines, BATCH)
    clock("batch", store.end_batch, BATCH, OWNER, {"status": "completed"}, [], None)


def store_cost(
    url: str | None, data_dir: Path, count: int, database_pid: int | None = None
) -> dict[str, Any]:
    """One batch of `count` lines through the store: CPU and wall ms per line, each call's
    CPU ms per line, and (given PostgreSQL's postmaster) the database's CPU ms per line."""
    store = Store(engine_for(url, data_dir))
    clock = Clock()
    database = cpu_seconds(database_pid) if database_pid else 0.0
    cpu, wall = time.process_time(), time.monotonic()
    one_batch(store, count, clock)
    figures: dict[str, Any] = {
        "cpu_ms_per_line": round((time.process_time() - cpu) * 1000 / count, 3),
        "wall_ms_per_line": round((time.monotonic() - wall) * 1000 / count, 3),
        "cpu_ms_per_line_by_call": {
            kind: round(spent * 1000 / count, 3) for kind, spent in clock.spent.items()
        },
    }
    if database_pid:
        spent = cpu_seconds(database_pid) - database
        figures["database_cpu_ms_per_line"] = round(spent * 1000 / count, 3)
    store.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1000, help="of the batch (default: 1000)")
    parser.add_argument("--jobs-db", metavar="URL", help="an empty PostgreSQL database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        figures = store_cost(args.jobs_db, Path(scratch), args.lines)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
