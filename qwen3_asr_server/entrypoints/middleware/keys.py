"""The keys a server answers, and the projects they belong to: `--api-key`, and the TOML file
`--keys-file` names, read again whenever it changes. No HTTP.

A key is found by the SHA-256 of the token a request carries: one hash and one dictionary
lookup, however many keys the file holds, and nothing learned from the time it takes (an
attacker cannot choose a token whose digest lands near a key's), then compared in constant
time. The file may hold either the secret (`key`) or its digest (`sha256`), so that the secrets
themselves need not be kept where the server runs. `--api-key` is the key `default` of the
project `default`, an admin key, beside the file's or alone.

A file that cannot be read or does not hold together stops the server at start, with one line;
changed into such a file later, it is refused with one line in the log and the keys before it
stay in force (`Keys.refresh`), so that a typo never locks everybody out.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import tomllib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from ...errors import LaunchError
from ...settings.jobs import standard_secret

logger = logging.getLogger(__name__)

DEFAULT = "default"  # the project, and the name of the key, that `--api-key` is
RELOAD_SECONDS = 1.0  # how often the file is looked at: a change holds within 5 s
_NAME = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


@dataclass(frozen=True)
class Project:
    """Who owns files and batches; where its batches' events go."""

    name: str
    storage_quota_mb: float | None = None  # its files and batch outputs; None: the server's
    webhook_url: str | None = None  # None: the server's (--webhook-url)
    webhook_secret: SecretStr | None = None


@dataclass(frozen=True)
class Key:
    """One key: its name (in logs, metrics and usage; never the secret), its project and its
    limits. `digest` is the SHA-256 of the secret."""

    name: str
    project: str
    digest: bytes = field(repr=False)
    requests_per_minute: int | None = None
    max_sessions: int | None = None  # its Realtime sessions and calls at once
    admin: bool = False  # reads the organization's usage


def digest_of(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True)
class Keyring:
    """The keys in force, by digest, and their projects. Not `closed`: a server with neither
    `--api-key` nor `--keys-file`, open to anyone (its work is the `default` project's). A keys
    file that holds no key (emptied while being written, say) closes the server to everyone."""

    keys: Mapping[bytes, Key] = field(default_factory=dict)
    projects: Mapping[str, Project] = field(default_factory=lambda: {DEFAULT: Project(DEFAULT)})
    closed: bool = False

    def find(self, token: str) -> Key | None:
        """The key `token` is; None when it is none of them."""
        digest = digest_of(token)
        key = self.keys.get(digest)
        if key is None or not hmac.compare_digest(key.digest, digest):
            return None
        return key

    def named(self, name: str) -> Key | None:
        """The key called `name` (an ephemeral key names the key that minted it)."""
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, Key]:
        return {key.name: key for key in self.keys.values()}  # `load` keeps names unique

    def project(self, key: Key | None) -> Project:
        """The project whose work a caller with `key` does (the `default` one without)."""
        return self.named_project(key.project if key is not None else DEFAULT)

    def named_project(self, name: str | None) -> Project:
        """The project `name` (None: written before there were projects, the `default` one);
        one with no quota or webhook of its own once the file no longer names it."""
        name = name or DEFAULT
        return self.projects.get(name) or Project(name)


class _ProjectEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: _NAME
    storage_quota_mb: float | None = Field(None, gt=0)
    webhook_url: str | None = Field(None, pattern=r"^https?://")
    webhook_secret: SecretStr | None = None

    @model_validator(mode="after")
    def _webhook(self) -> _ProjectEntry:
        if (self.webhook_url is None) != (self.webhook_secret is None):
            raise ValueError("webhook_url and webhook_secret go together")
        if self.webhook_secret and not standard_secret(self.webhook_secret.get_secret_value()):
            raise ValueError("webhook_secret is a Standard Webhooks secret: whsec_ and base64")
        return self


class _KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: _NAME
    project: _NAME
    key: SecretStr | None = Field(None, min_length=1)
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    requests_per_minute: int | None = Field(None, ge=1)
    max_sessions: int | None = Field(None, ge=0)
    admin: bool = False

    @model_validator(mode="after")
    def _one_secret(self) -> _KeyEntry:
        if (self.key is None) == (self.sha256 is None):
            raise ValueError("give the key either as key or as sha256, not both")
        if self.key is not None and self.key.get_secret_value().startswith("ek_"):
            raise ValueError("a key may not start with ek_ (the ephemeral keys' prefix)")
        return self

    def digest(self) -> bytes:
        if self.key is not None:
            return digest_of(self.key.get_secret_value())
        return bytes.fromhex(self.sha256 or "")


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    projects: list[_ProjectEntry] = []
    keys: list[_KeyEntry] = []


def keyring(text: str | None, api_key: SecretStr | None) -> Keyring:
    """The keyring of a keys file's `text` (None: no file) beside `--api-key`; a ValueError
    whose message is one line when it does not hold together."""
    found = _File()
    if text is not None:
        try:
            found = _File.model_validate(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"not TOML: {exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where}: {first['msg']}") from None
    projects = {DEFAULT: Project(DEFAULT)}
    named = [entry.name for entry in found.projects]
    for entry in found.projects:
        if named.count(entry.name) > 1:
            raise ValueError(f"the project {entry.name!r} is named twice")
        projects[entry.name] = Project(
            entry.name, entry.storage_quota_mb, entry.webhook_url, entry.webhook_secret
        )
    keys: dict[bytes, Key] = {}
    if api_key is not None:
        keys[digest_of(api_key.get_secret_value())] = Key(
            DEFAULT, DEFAULT, digest_of(api_key.get_secret_value()), admin=True
        )
    names = {key.name for key in keys.values()}
    for each in found.keys:
        if each.project not in projects:
            raise ValueError(f"the key {each.name!r} names an unknown project {each.project!r}")
        if each.name in names:
            raise ValueError(f"the key name {each.name!r} is taken (--api-key's is 'default')")
        digest = each.digest()
        if digest in keys:
            raise ValueError(f"the key {each.name!r} is the same secret as another key")
        names.add(each.name)
        keys[digest] = Key(
            each.name,
            each.project,
            digest,
            each.requests_per_minute,
            each.max_sessions,
            each.admin,
        )
    return Keyring(keys, projects, closed=text is not None or api_key is not None)


def load(path: Path | None, api_key: SecretStr | None) -> Keyring:
    """The keyring of `--keys-file` and `--api-key`; a LaunchError of one line naming the file
    when it cannot be read or does not hold together."""
    try:
        text = path.read_text() if path is not None else None
        return keyring(text, api_key)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LaunchError(f"--keys-file {path}: {reason}") from None


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when the file does: written in place, or a symlink (Kubernetes' Secret
    volumes swap one) pointed at another file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size)


class Keys:
    """The keyring in force in this process, read again from its file when the file changes
    (every worker of `--workers N` watches the file itself)."""

    def __init__(self, path: Path | None, api_key: SecretStr | None) -> None:
        self.path = path
        self.api_key = api_key
        self._seen = _stamp(path) if path is not None else None
        self.current = load(path, api_key)

    def refresh(self) -> bool:
        """Read the file again if it changed; whether the keyring did. A file that no longer
        holds together is logged and the keys before it stay in force."""
        if self.path is None:
            return False
        stamp = _stamp(self.path)
        if stamp == self._seen:
            return False
        self._seen = stamp
        try:
            self.current = load(self.path, self.api_key)
        except LaunchError as exc:
            logger.error("%s: the keys before it stay in force", exc)
            return False
        logger.info("--keys-file %s read again: %d keys", self.path, len(self.current.keys))
        return True

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """The file looked at every `RELOAD_SECONDS` while in the block (if there is one)."""
        watcher = asyncio.create_task(self._watch()) if self.path is not None else None
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(RELOAD_SECONDS)
            await asyncio.to_thread(self.refresh)
