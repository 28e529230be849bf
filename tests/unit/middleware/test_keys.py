"""The keys file: what it holds, what it refuses (in one line), and how a change is taken."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT, Keys, keyring, load
from qwen3_asr_server.errors import LaunchError

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
FILE = f"""
[[projects]]
name = "notes"
storage_quota_mb = 2048
webhook_url = "https://notes.example/hook"
webhook_secret = "{SECRET}"

[[projects]]
name = "calls"

[[keys]]
name = "notes-web"
project = "notes"
key = "sk-notes"
requests_per_minute = 600
max_sessions = 10

[[keys]]
name = "calls-batch"
project = "calls"
sha256 = "{hashlib.sha256(b"sk-calls").hexdigest()}"
admin = true
"""


def test_a_key_is_found_by_its_secret_or_the_digest_of_it() -> None:
    ring = keyring(FILE, None)
    notes = ring.find("sk-notes")
    assert notes is not None
    assert (notes.name, notes.project, notes.requests_per_minute, notes.max_sessions) == (
        "notes-web",
        "notes",
        600,
        10,
    )
    assert notes.admin is False
    calls = ring.find("sk-calls")
    assert calls is not None
    assert (calls.name, calls.project, calls.admin) == ("calls-batch", "calls", True)
    assert ring.find("sk-note") is None
    assert ring.find(hashlib.sha256(b"sk-calls").hexdigest()) is None  # the digest is no key
    assert ring.project(notes).storage_quota_mb == 2048
    assert ring.project(notes).webhook_url == "https://notes.example/hook"
    assert ring.project(None).name == DEFAULT
    assert "sk-notes" not in repr(notes)


def test_the_api_key_is_the_admin_key_of_the_default_project_beside_the_file() -> None:
    ring = keyring(FILE, SecretStr("sk-admin"))
    admin = ring.find("sk-admin")
    assert admin is not None
    assert (admin.name, admin.project, admin.admin) == (DEFAULT, DEFAULT, True)
    assert ring.find("sk-notes") is not None
    alone = keyring(None, SecretStr("sk-admin"))
    assert alone.closed
    assert [key.name for key in alone.keys.values()] == [DEFAULT]


def test_no_key_at_all_is_an_open_server_but_an_empty_file_closes_it() -> None:
    assert keyring(None, None).closed is False
    emptied = keyring("", None)
    assert emptied.closed
    assert emptied.find("") is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[keys]\nname = 'x'", "not TOML: "),
        ('[[keys]]\nname = "a"\nproject = "nobody"\nkey = "sk-a"', "unknown project 'nobody'"),
        ('[[keys]]\nname = "a"\nproject = "default"', "either as key or as sha256"),
        (
            '[[keys]]\nname = "a"\nproject = "default"\nkey = "sk-a"\nsha256 = "' + "0" * 64 + '"',
            "either as key or as sha256",
        ),
        ('[[keys]]\nname = "a"\nproject = "default"\nsha256 = "abc"', "keys.0.sha256: "),
        ('[[keys]]\nname = "a"\nproject = "default"\nkey = "ek_x"', "ephemeral"),
        ('[[keys]]\nname = "a b"\nproject = "default"\nkey = "sk-a"', "keys.0.name: "),
        (
            '[[keys]]\nname = "a"\nproject = "default"\nkey = "sk-a"\nrequests_per_minut = 5',
            "keys.0.requests_per_minut: Extra inputs are not permitted",
        ),
        (
            '[[keys]]\nname = "a"\nproject = "default"\nkey = "sk-a"\nrequests_per_minute = 0',
            "keys.0.requests_per_minute: ",
        ),
        (
            '[[keys]]\nname = "default"\nproject = "default"\nkey = "sk-a"',
            "'default' is taken",
        ),
        (
            '[[keys]]\nname = "a"\nproject = "default"\nkey = "sk-a"\n'
            '[[keys]]\nname = "b"\nproject = "default"\nkey = "sk-a"',
            "the same secret",
        ),
        ('[[projects]]\nname = "p"\n[[projects]]\nname = "p"', "'p' is named twice"),
        (
            '[[projects]]\nname = "default"\n[[projects]]\nname = "default"',
            "'default' is named twice",
        ),
        ('[[projects]]\nname = "p"\nwebhook_url = "https://x"', "go together"),
        (
            '[[projects]]\nname = "p"\nwebhook_url = "https://x"\nwebhook_secret = "s"',
            "Standard Webhooks secret",
        ),
    ],
)
def test_a_file_that_does_not_hold_together_is_refused_in_one_line(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    with pytest.raises(LaunchError) as refused:
        load(path, SecretStr("sk-default"))
    message = str(refused.value)
    assert message.startswith(f"--keys-file {path}: ")
    assert said in message
    assert "\n" not in message
    assert "sk-a" not in message


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match=r"keys\.toml: No such file or directory"):
        load(tmp_path / "keys.toml", None)


def test_a_change_in_place_or_by_symlink_is_taken_and_a_broken_one_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(FILE)
    link = tmp_path / "keys.toml"
    link.symlink_to(first)
    keys = Keys(link, None)
    assert keys.refresh() is False  # nothing changed
    assert keys.current.find("sk-notes") is not None

    first.write_text(FILE.replace("sk-notes", "sk-notes-2"))
    assert keys.refresh() is True
    assert keys.current.find("sk-notes") is None
    assert keys.current.find("sk-notes-2") is not None

    second.write_text(FILE.replace('[[projects]]\nname = "calls"', ""))  # calls-batch dangles
    link.unlink()
    link.symlink_to(second)  # as Kubernetes swaps a Secret's files
    with caplog.at_level(logging.ERROR):
        assert keys.refresh() is False
    assert "unknown project 'calls'" in caplog.text
    assert "the keys before it stay in force" in caplog.text
    assert keys.current.find("sk-notes-2") is not None

    second.write_text(FILE)
    assert keys.refresh() is True
    assert keys.current.find("sk-notes") is not None
