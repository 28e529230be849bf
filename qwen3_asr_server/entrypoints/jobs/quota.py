"""Files written within `--storage-quota-mb`: the room for them held in the store before a
byte is written, so that uploads and batch outputs arriving at once, in any process or
server, cannot pass the quota together; given back when the write fails or the file is not
kept. Uploads and a batch's output and error files take this one path; each counts against
the server's quota and against its project's, if the keys file gives it one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import BinaryIO

from ...errors import MIB
from ..middleware.keys import Project
from .files import FileStorage, OverQuota
from .store import Store


class Quota:
    def __init__(self, store: Store, storage: FileStorage, quota_mb: float) -> None:
        self.store = store
        self.storage = storage
        self.quota = int(quota_mb * MIB)

    async def write(
        self,
        sources: Mapping[str, tuple[BinaryIO, int]],
        project: Project,
        what: str = "this file has",
    ) -> dict[str, int]:
        """Each source (id: its bytes and their size) written as the project's file, all of
        them or none (`OverQuota` when they do not fit the server's quota or the project's);
        the sizes written. The files are not stored until the store keeps their rows (`keep`),
        which gives their room back as it does."""
        if not sources:
            return {}
        sizes = {file_id: size for file_id, (_, size) in sources.items()}
        own = project.storage_quota_mb
        quotas = (self.quota, int(own * MIB) if own is not None else None)
        full = await self.store.run(self.store.reserve, sizes, project.name, quotas)
        if full is not None:
            whose = "the project's storage_quota_mb" if full.project else "--storage-quota-mb"
            raise OverQuota(full.quota, full.stored, sum(sizes.values()), what, whose)
        written: dict[str, int] = {}
        try:
            for file_id, (source, _) in sources.items():
                written[file_id] = await asyncio.to_thread(self.storage.save, file_id, source)
        except BaseException:
            await self.discard(sizes)
            raise
        return written

    async def discard(self, file_ids: Iterable[str]) -> None:
        """Files written that will not be stored: their bytes removed, their room given back."""
        file_ids = list(file_ids)
        for file_id in file_ids:
            await asyncio.to_thread(self.storage.remove, file_id)
        await self.store.run(self.store.release, file_ids)
