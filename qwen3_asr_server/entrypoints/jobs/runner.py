"""The batches' worker, one per server process: it validates new batches, runs their lines
on what the engine has to spare (`--batch-concurrency` at once), and writes each finished
batch's output and error files. Every step is claimed in the store with a lease, renewed
while it runs, so that a server that dies leaves its work to whichever server (or restart)
comes next, and so that several servers on one PostgreSQL share a queue."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...capacity.admission import BACKGROUND
from ...errors import ServerError
from ...observability.usage import CALLER, Caller
from ..middleware.keys import DEFAULT, Keys
from . import shapes
from .execute import Retry, Services, answer
from .files import FileStorage, OverQuota
from .quota import Quota
from .shapes import Row
from .store import Store

if TYPE_CHECKING:
    from ...settings.composite import Settings

logger = logging.getLogger(__name__)
IDLE_POLL = 1.0  # seconds between looks at the queue when it seemed empty
SPARE_POLL = 0.1  # seconds between looks for a spare slot while the engine is busy
RETRY_DELAY = 5.0  # seconds before a line the engine could not take is tried again
FINAL = {
    "completed": "completed_at",
    "expired": "expired_at",
    "cancelled": "cancelled_at",
    "failed": "failed_at",
}
EXPIRED = "This request could not be run before the batch's completion window ended."
# (event type, batch id, its project) -> an event row, or none
Announce = Callable[[str, str, str | None], Row | None]
Announced = Callable[[], None]  # told when an event has been stored, to send it now


def owner_name() -> str:
    """This process among the servers that share a queue."""
    return f"{socket.gethostname()}:{os.getpid()}:{shapes.new_id('')[:8]}"


class Runner:
    def __init__(
        self,
        settings: Settings,
        services: Services,
        store: Store,
        storage: FileStorage,
        owner: str,
        keys: Keys,
        announce: Announce,
        announced: Announced,
    ) -> None:
        self.settings = settings
        self.services = services
        self.store = store
        self.storage = storage
        self.quota = Quota(store, storage, settings.storage_quota_mb)
        self.keys = keys  # the projects: their quotas for the output files
        self.announce = announce
        self.announced = announced
        self.owner = owner
        self.lease = settings.jobs_lease
        self.wake = asyncio.Event()

    def poke(self) -> None:
        """New work (a batch created here): look at once instead of at the next poll."""
        self.wake.set()

    async def run(self) -> None:
        """Forever: the batches' steps, and the lines, side by side."""
        workers = [self._lines() for _ in range(self.settings.batch_concurrency)]
        await asyncio.gather(self._batches(), *workers)

    async def _idle(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), IDLE_POLL)
        self.wake.clear()

    async def _batches(self) -> None:
        while True:
            try:
                batch = await self.store.run(self.store.claim_batch, self.owner, self.lease)
                if batch is None:
                    await self._count()
                    await self._idle()
                elif batch["status"] == "validating":
                    await self._validate(batch)
                else:
                    await self._finalize(batch)
            except asyncio.CancelledError:
                raise
            except Exception:  # the database away, a disk error: logged, tried again
                logger.exception("batch step failed; trying again")
                await asyncio.sleep(IDLE_POLL)

    async def _count(self) -> None:
        counts = await self.store.run(self.store.queued_lines)
        for state in ("queued", "running"):
            self.services.metrics.batch_queue.labels(state=state).set(counts.get(state, 0))

    async def _validate(self, batch: Row) -> None:
        now = int(time.time())
        if batch["attempts"] > self.settings.batch_max_attempts:
            message = (
                f"The batch was taken up for validation {batch['attempts']} times and never "
                f"got through (--batch-max-attempts {self.settings.batch_max_attempts}); "
                "the servers' logs say why."
            )
            problem = shapes.batch_error("too_many_attempts", None, message, None)
            await self._end(batch, "failed", now, errors=[problem])
            return
        project = batch["project"] or DEFAULT
        stored = await self.store.run(self.store.file, batch["input_file_id"], project)
        if stored is None:
            message = f"The input file {batch['input_file_id']} is gone."
            problem = shapes.batch_error("file_not_found", None, message, "input_file_id")
            await self._end(batch, "failed", now, errors=[problem])
            return
        path = self.storage.path(stored["id"])
        rows, errors = await asyncio.to_thread(_read_input, path, batch["endpoint"])
        if errors:
            await self._end(batch, "failed", now, errors=errors)
            return
        await self.store.run(self.store.start_batch, batch["id"], self.owner, rows, now)
        self.wake.set()

    async def _finalize(self, batch: Row) -> None:
        now = int(time.time())
        if batch["status"] == "cancelling":
            final = "cancelled"
        elif batch["expires_at"] <= now and batch["status"] == "in_progress":
            final = "expired"
            expired = lambda line: shapes.not_run(line, "batch_expired", EXPIRED)  # noqa: E731
            await self.store.run(self.store.expire_open_lines, batch["id"], expired)
        else:
            final = "completed"
        done = await self.store.run(self.store.done_lines, batch["id"])
        contents = await asyncio.to_thread(_outputs, done)
        ids = {name: shapes.new_id("file-") for name in contents}
        sources = {ids[name]: (io.BytesIO(text), len(text)) for name, text in contents.items()}
        try:
            project = self.keys.current.named_project(batch["project"])
            sizes = await self.quota.write(sources, project, "the batch's output files have")
        except OverQuota as exc:  # its answers are lost: the batch fails, nothing is stored
            problem = {"code": exc.code, "line": None, "param": None, "message": exc.message}
            await self._end(batch, "failed", now, errors=[problem], finalizing_at=now)
            return
        keep = batch["output_expires_after"] or int(self.settings.file_retention_days * 86400)
        added = [
            {
                "id": file_id,
                "purpose": "batch_output",
                "bytes": sizes[file_id],
                "filename": f"{batch['id']}_{name}.jsonl",
                "created_at": now,
                "expires_at": now + keep,
                "project": batch["project"],
            }
            for name, file_id in ids.items()
        ]
        names = {f"{name}_file_id": file_id for name, file_id in ids.items()}
        await self._end(batch, final, now, added=added, **names, finalizing_at=now)

    async def _end(
        self, batch: Row, final: str, now: int, added: list[Row] | None = None, **values: Any
    ) -> None:
        values = {"status": final, FINAL[final]: now, **values}
        event = self.announce(f"batch.{final}", batch["id"], batch["project"])
        ended = await self.store.run(
            self.store.end_batch, batch["id"], self.owner, values, added or [], event
        )
        if not ended:  # another server took it over meanwhile: its files are not ours
            await self.quota.discard(row["id"] for row in added or [])
        elif event is not None:
            self.announced()
        logger.info("batch %s %s", batch["id"], final)

    async def _lines(self) -> None:
        while True:
            try:
                if not self.services.admission.spare():  # interactive requests first
                    await asyncio.sleep(SPARE_POLL)
                    continue
                line = await self.store.run(self.store.claim_line, self.owner, self.lease)
                if line is None:
                    await self._idle()
                else:
                    await self._line(line)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("batch line failed; trying again")
                await asyncio.sleep(IDLE_POLL)

    async def _line(self, line: Row) -> None:
        if line["attempts"] > self.settings.batch_max_attempts:
            await self._give_up(line)
            return
        request_id = shapes.new_id("batch_req_")
        background = contextvars.copy_context()  # its requests wait for spare slots
        background.run(BACKGROUND.set, True)
        background.run(CALLER.set, Caller(line["api_key"], line["project"] or DEFAULT))
        work = asyncio.create_task(self._traced(line, request_id), context=background)
        try:
            held = await self._held(line, work)
        except asyncio.CancelledError:  # the server stops: the line is free for the next one
            work.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(self._release(line, 0.0))
            raise
        if not held:
            return
        try:
            status, body = work.result()
        except Retry:
            self.services.metrics.batch_lines.labels(outcome="retried").inc()
            await self._release(line, RETRY_DELAY)
            return
        except Exception as exc:  # a bug: the line fails, not the queue (it would run again)
            logger.exception("batch line %s of %s failed", line["idx"], line["batch_id"])
            status, body = 500, ServerError(f"The line could not be run: {exc!r}").body()
        outcome = "failed" if status >= 400 else "completed"
        self.services.metrics.batch_lines.labels(outcome=outcome).inc()
        output = shapes.answered(line, status, request_id, body)
        await self.store.run(
            self.store.finish_line, line["batch_id"], line["idx"], self.owner, status >= 400, output
        )
        self.wake.set()  # its batch may be done: finalize it now

    async def _traced(self, line: Row, request_id: str) -> tuple[int, Any]:
        """The line's answer, as a trace of its own linked to the request that made its
        batch (when tracing is on)."""
        attributes = {"qwen3_asr.batch_id": line["batch_id"], "qwen3_asr.line": line["idx"]}
        attributes["qwen3_asr.request_id"] = request_id
        if line["api_key"]:
            attributes["qwen3_asr.key"] = line["api_key"]
        made = line.get("traceparent")
        with self.services.transcription.tracing.span(
            "batch line",
            attributes=attributes,
            carrier={},  # a root, whatever started the runner
            linked={"traceparent": made} if made else None,
        ):
            return await answer(self.services, self.store, self.storage, line, request_id)

    async def _give_up(self, line: Row) -> None:
        """A line taken up more often than --batch-max-attempts (each time, its server died or
        lost it before it had an answer): it fails alone, not every server after it."""
        tries = line["attempts"] - 1
        message = (
            f"This request was started {tries} times and never finished (--batch-max-attempts "
            f"{self.settings.batch_max_attempts}): its server stopped each time."
        )
        logger.error("batch line %s of %s given up: %s", line["idx"], line["batch_id"], message)
        self.services.metrics.batch_lines.labels(outcome="failed").inc()
        output = shapes.not_run(line, "too_many_attempts", message)
        await self.store.run(
            self.store.finish_line, line["batch_id"], line["idx"], self.owner, True, output
        )
        self.wake.set()

    async def _release(self, line: Row, delay: float) -> None:
        await self.store.run(
            self.store.release_line, line["batch_id"], line["idx"], self.owner, delay
        )

    async def _held(self, line: Row, task: asyncio.Task[Any]) -> bool:
        """Wait for the line's work, renewing its lease; False (the work cancelled) when this
        server lost it or its batch ended meanwhile."""
        while True:
            done, _ = await asyncio.wait({task}, timeout=self.lease / 3)
            if done:
                return True
            renewed = await self.store.run(
                self.store.renew_line, line["batch_id"], line["idx"], self.owner, self.lease
            )
            if not renewed:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                return False


def _read_input(path: Path, endpoint: str) -> tuple[list[Row], list[Row]]:
    """The input file read line by line (in a thread: it may hold millions of lines)."""
    with path.open("rb") as handle:
        return shapes.read_input(handle, endpoint)


def _outputs(done: list[Row]) -> dict[str, bytes]:
    """A batch's output and error files' contents, those it has (encoded in a thread: they
    may hold 50,000 lines)."""
    contents = {}
    for failed, name in ((False, "output"), (True, "error")):
        outputs = [line["output"] for line in done if bool(line["failed"]) is failed]
        if outputs:
            contents[name] = shapes.jsonl(outputs)
    return contents
