"""The jobs of one app: its store (opened when first needed, or at start when it holds
work), the stored files, the runner, and what the Files and Batches routes ask of them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from ...errors import APIError, invalid
from ..middleware.keys import Keys, Project
from . import shapes, usage
from .database import engine_of, existing
from .execute import Services
from .files import FileStorage
from .quota import Quota
from .runner import Runner, owner_name
from .shapes import Row
from .store import Store
from .webhooks import Webhooks, event

if TYPE_CHECKING:
    from ...settings.composite import Settings

logger = logging.getLogger(__name__)
SWEEP_SECONDS = 60.0  # how often expired files are deleted
USAGE_SECONDS = 5.0  # how often a process adds the usage it tallied to the store
COMPLETION_WINDOW = 24 * 3600


# the keys, projects and models a usage query is narrowed to (none: all of them)
Named = tuple[Sequence[str], Sequence[str], Sequence[str]]


def not_found(kind: str, object_id: str, param: str) -> APIError:
    return APIError(404, f"No such {kind} object: {object_id}", param=param, code=None)


class Jobs:
    """What the Files and Batches routes ask, each for a project: a file or batch of another
    project answers as one that does not exist."""

    def __init__(self, settings: Settings, services: Services, keys: Keys) -> None:
        self.services = services
        self.settings = settings
        self.keys = keys  # the projects, with their quotas and webhooks
        self.storage = FileStorage(self.settings.data_path / "files")
        self._store: Store | None = None
        self.runner: Runner | None = None
        self.quota: Quota | None = None
        self.webhooks: Webhooks | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._sender: asyncio.Task[None] | None = None
        self._keeping: asyncio.Task[None] | None = None  # the usage tallied, kept
        self._opening = asyncio.Lock()

    async def store(self) -> Store:
        """The store, opened (and the runner started) the first time work is asked for."""
        async with self._opening:
            if self._store is None:
                await self._open()
        assert self._store is not None
        return self._store

    async def _open(self) -> None:
        self._store = await asyncio.to_thread(Store, engine_of(self.settings))
        self.quota = Quota(self._store, self.storage, self.settings.storage_quota_mb)
        owner = owner_name()
        self.webhooks = Webhooks(self._store, self._destination, self.services.metrics, owner)
        self.runner = Runner(
            self.settings,
            self.services,
            self._store,
            self.storage,
            owner,
            self.keys,
            self._announce,
            self._sent,
        )
        self._tasks = [
            asyncio.create_task(self.runner.run(), name="batch runner"),
            asyncio.create_task(self._sweep(), name="file sweeper"),
        ]
        projects = self.keys.current.projects.values()
        if self.settings.webhook_url or any(project.webhook_url for project in projects):
            self._sent()  # events left unsent by the last run

    def _destination(self, project: str | None) -> tuple[str, str] | None:
        """Where a project's events go: its own webhook, else the server's, else nowhere."""
        own = self.keys.current.named_project(project)
        url, secret = own.webhook_url, own.webhook_secret
        if url is None or secret is None:
            url, secret = self.settings.webhook_url, self.settings.webhook_secret
        return (url, secret.get_secret_value()) if url and secret else None

    def _announce(self, kind: str, batch_id: str, project: str | None) -> Row | None:
        """The event announcing a batch's end, when its project's events go somewhere."""
        if self._destination(project) is None:
            return None
        return event(kind, batch_id, int(time.time()), project)

    def _sent(self) -> None:
        """An event was stored: the sender (started with the first) sends it now."""
        assert self.webhooks is not None
        if self._sender is None:
            self._sender = asyncio.create_task(self.webhooks.run(), name="webhooks")
            self._tasks.append(self._sender)
        self.webhooks.poke()

    async def start(self) -> None:
        """At the app's start: the store opened if it holds work, and usage kept from now."""
        if existing(self.settings):
            await self.store()
        self._keeping = asyncio.create_task(self._keep_usage(), name="usage")

    async def _keep_usage(self) -> None:
        while True:
            await asyncio.sleep(USAGE_SECONDS)
            await self.keep_usage()

    async def keep_usage(self) -> None:
        """The usage this process tallied added to the store; never on a server without keys,
        whose usage nobody could read."""
        tally = self.services.metrics.usage
        minutes = tally.drain()
        if not minutes or not self.keys.current.closed:
            return
        try:
            store = await self.store()
            await store.run(store.add_usage, minutes, self.settings.served_name)
        except Exception as exc:  # the database away or unwritable: kept when it is back
            tally.restore(minutes)
            logger.warning("the usage could not be kept (%s); trying again", type(exc).__name__)

    async def usage(self, query: usage.Asked, start: int, named: Named) -> Row:
        """A page of usage: this process's, up to now, with what every process kept."""
        await self.keep_usage()
        store = await self.store()
        rows = await store.run(store.usage, query.start, query.end, *named)
        return usage.page(query, rows, start)

    async def aclose(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeping
            with contextlib.suppress(Exception):
                await self.keep_usage()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.webhooks is not None:
            await self.webhooks.aclose()
        if self._store is not None:
            self._store.close()

    async def _sweep(self) -> None:
        """Expired files deleted, rows first: a file is never listed without its bytes; and
        what writers that died left (the room held for their files, their bytes) removed."""
        assert self._store is not None
        store = self._store
        while True:
            try:
                for file_id in await store.run(store.expired_files, time.time()):
                    await store.run(store.delete_file, file_id, None)
                    await asyncio.to_thread(self.storage.remove, file_id)
                for file_id in await store.run(store.lapsed_reservations, time.time()):
                    await asyncio.to_thread(self.storage.remove, file_id)
            except Exception:
                logger.exception("deleting expired files failed; trying again")
            await asyncio.sleep(SWEEP_SECONDS)

    # files

    async def add_file(
        self,
        project: Project,
        source: BinaryIO,
        size: int,
        filename: str,
        purpose: str,
        expires_after: int | None,
    ) -> Row:
        store = await self.store()
        assert self.quota is not None
        now = int(time.time())
        keep = expires_after or int(self.settings.file_retention_days * 86400)
        file_id = shapes.new_id("file-")
        written = await self.quota.write({file_id: (source, size)}, project)
        row = {
            "id": file_id,
            "purpose": purpose,
            "filename": filename,
            "bytes": written[file_id],
            "created_at": now,
            "expires_at": now + keep,
            "project": project.name,
        }
        try:
            await store.run(store.add_file, row)
        except BaseException:
            await self.quota.discard([file_id])
            raise
        return row

    async def file(self, project: Project, file_id: str) -> Row:
        store = await self.store()
        row = await store.run(store.file, file_id, project.name)
        if row is None:
            raise not_found("File", file_id, "file_id")
        return row

    async def files(
        self, project: Project, purpose: str | None, after: str | None, limit: int, asc: bool
    ) -> Row:
        store = await self.store()
        rows = await store.run(store.files, project.name, purpose, after, limit + 1, asc)
        return shapes.page([shapes.file_object(row) for row in rows], limit)

    async def delete_file(self, project: Project, file_id: str) -> Row:
        store = await self.store()
        if not await store.run(store.delete_file, file_id, project.name):
            raise not_found("File", file_id, "file_id")
        await asyncio.to_thread(self.storage.remove, file_id)
        return {"id": file_id, "object": "file", "deleted": True}

    # batches

    async def add_batch(self, project: Project, key: str | None, asked: dict[str, Any]) -> Row:
        store = await self.store()
        source = await store.run(store.file, asked["input_file_id"], project.name)
        if source is None:
            raise not_found("File", asked["input_file_id"], "input_file_id")
        if source["purpose"] != "batch":
            message = (
                f"The input file {source['id']} has purpose {source['purpose']!r}, not 'batch'."
            )
            raise invalid(message, "input_file_id")
        now = int(time.time())
        row = {
            "id": shapes.new_id("batch_"),
            "endpoint": asked["endpoint"],
            "input_file_id": source["id"],
            "completion_window": asked["completion_window"],
            "metadata": asked.get("metadata"),
            "output_expires_after": asked.get("output_expires_after"),
            "status": "validating",
            "created_at": now,
            "expires_at": now + COMPLETION_WINDOW,
            "project": project.name,
            "api_key": key,
        }
        carrier: dict[str, str] = {}
        self.services.transcription.tracing.inject(carrier)  # its lines' traces link to this
        row["traceparent"] = carrier.get("traceparent")
        await store.run(store.add_batch, row)
        assert self.runner is not None
        self.runner.poke()
        return await self.batch(project, row["id"])

    async def batch(self, project: Project, batch_id: str) -> Row:
        store = await self.store()
        row = await store.run(store.batch, batch_id, project.name)
        if row is None:
            raise not_found("Batch", batch_id, "batch_id")
        return shapes.batch_object(row)

    async def batches(self, project: Project, after: str | None, limit: int) -> Row:
        store = await self.store()
        rows = await store.run(store.batches, project.name, after, limit + 1)
        return shapes.page([shapes.batch_object(row) for row in rows], limit)

    async def cancel(self, project: Project, batch_id: str) -> Row:
        """The batch, cancelling (or cancelled already: a cancel asked again, or by several
        clients at once, is answered as the first was); a 409 once it ended otherwise."""
        store = await self.store()
        if await store.run(store.cancel, batch_id, project.name, int(time.time())):
            assert self.runner is not None
            self.runner.poke()
        batch = await self.batch(project, batch_id)
        if batch["status"] not in ("cancelling", "cancelled"):
            message = f"Cannot cancel a batch with status {batch['status']!r}."
            raise APIError(409, message, param="batch_id", code="batch_not_cancellable")
        return batch
