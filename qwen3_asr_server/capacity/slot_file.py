"""A file of fixed-size slots that every worker of `--workers N` maps: a slot per name (a key's),
found by a hash of the name, read and changed under an flock, which the kernel lets go when
its holder dies, so that a worker killed at any moment never wedges the rest. What a slot holds
after its first 8 bytes (the name's mark) is its user's (`capacity.rates`,
`capacity.key_seats`)."""

from __future__ import annotations

import hashlib
import mmap
import os
from contextlib import AbstractContextManager
from pathlib import Path

from .table import exclusive

MARK_BYTES = 8


class SlotFile:
    """`slots` slots of `slot_bytes` each in the file `path`, made (zeroed) if missing: each
    worker opens it alike."""

    def __init__(self, path: Path, slots: int, slot_bytes: int) -> None:
        self.slots, self.slot_bytes = slots, slot_bytes
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        size = slots * slot_bytes
        with self.locked():
            if os.fstat(self._fd).st_size < size:
                os.ftruncate(self._fd, size)
        self.map = mmap.mmap(self._fd, size)

    def locked(self) -> AbstractContextManager[None]:
        return exclusive(self._fd)

    def find(self, name: str) -> int:
        """The offset of `name`'s slot (hold `locked()`): its own, else the first free one
        after its place (marked as its own: zeroed otherwise), else its place (two names then
        share a slot, which makes a limit stricter, never looser)."""
        mark = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
        mark = mark or 1  # 0 marks a free slot
        start = mark % self.slots
        for step in range(self.slots):
            offset = ((start + step) % self.slots) * self.slot_bytes
            found = int.from_bytes(self.map[offset : offset + MARK_BYTES], "little")
            if found == mark:
                return offset
            if found == 0:
                self.map[offset : offset + MARK_BYTES] = mark.to_bytes(MARK_BYTES, "little")
                return offset
        return start * self.slot_bytes

    def close(self) -> None:
        self.map.close()
        os.close(self._fd)
