"""The stored files' bytes, under `--data-dir`/files, one file per id. A file is written to a
temporary name beside its place, flushed to the disk and then renamed, so that a crash or a
full disk leaves either the whole file or none, and never touches what is already stored."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path
from typing import BinaryIO

from ...errors import MIB, APIError

CHUNK = MIB
# what a write past the disk's room fails with (EFBIG: past the process's `ulimit -f`)
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def disk_full() -> APIError:
    return APIError(
        507,
        "The server's disk is full: the file was not stored (nothing stored before is lost). "
        "Try again later, or delete files you no longer need.",
        code="insufficient_storage",
    )


def over_file_limit(limit: int, seen: int | None = None) -> APIError:
    read = f" ({seen} bytes sent)" if seen is not None else ""
    return APIError(
        413,
        f"The file is too large: a file may be at most {limit / MIB:g} MB{read} (--max-file-mb).",
        param="file",
        code="file_too_large",
        headers={"Connection": "close"},
    )


class OverQuota(APIError):
    """Files that `--storage-quota-mb` (or the project's quota) has no room for: an upload's
    413, or a batch's error."""

    def __init__(
        self,
        quota: int,
        stored: int,
        size: int,
        what: str = "this file has",
        whose: str = "--storage-quota-mb",
    ) -> None:
        super().__init__(
            413,
            f"The storage quota is full: {stored / MIB:.1f} of {quota / MIB:g} MB are stored and "
            f"{what} {size / MIB:.1f} MB ({whose}). Delete files you no longer need.",
            param="file",
            code="storage_quota_exceeded",
        )


class FileStorage:
    """The folder of stored files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, file_id: str) -> Path:
        return self.root / file_id

    def _partial(self, file_id: str) -> Path:
        return self.root / f".{file_id}.partial"

    def save(self, file_id: str, source: BinaryIO) -> int:
        """`source` copied to the file `file_id`, whole or not at all; its size in bytes."""
        self.root.mkdir(parents=True, exist_ok=True)
        partial = self._partial(file_id)
        try:
            with partial.open("wb") as target:
                shutil.copyfileobj(source, target, CHUNK)
                target.flush()
                os.fsync(target.fileno())
            partial.rename(self.path(file_id))
        except OSError as exc:
            partial.unlink(missing_ok=True)
            if exc.errno in FULL:
                raise disk_full() from exc
            raise
        return self.path(file_id).stat().st_size

    def remove(self, file_id: str) -> None:
        """The file, and what a writer that died left of it."""
        for path in (self.path(file_id), self._partial(file_id)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
