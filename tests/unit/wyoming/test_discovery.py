"""`--wyoming-zeroconf [NAME]`: which address is advertised, which is refused, and the name."""

from __future__ import annotations

import socket

import pytest

from qwen3_asr_server.entrypoints.wyoming.discovery import advertised_address, default_name
from qwen3_asr_server.serving.cli import parse_args

PORT = ["--wyoming-port", "10300"]


@pytest.mark.parametrize(
    ("host", "advertised"),
    [("0.0.0.0", None), ("::", None), ("192.168.1.20", "192.168.1.20")],
)
def test_a_port_on_every_interface_or_a_lan_address_is_advertised(
    host: str, advertised: str | None
) -> None:
    assert advertised_address(host) == advertised


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ("127.0.0.1", "no other machine can reach"),
        ("::1", "no other machine can reach"),
        ("fd00::2", "advertises an IPv4 address"),
        ("ha-box.lan", "give --wyoming-host as one, not 'ha-box.lan'"),
    ],
)
def test_what_no_other_machine_could_connect_to_is_refused(host: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        advertised_address(host)


def test_the_default_name_is_the_host_name_in_one_dns_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "kitchen.home.arpa")
    assert default_name() == "qwen3-asr-kitchen"
    monkeypatch.setattr(socket, "gethostname", lambda: "é" * 60)
    name = default_name()
    assert len(name.encode()) <= 63
    assert name.startswith("qwen3-asr-é")


@pytest.mark.parametrize(
    ("args", "name", "rest"),
    [
        (["--wyoming-zeroconf"], default_name(), []),
        (["--wyoming-zeroconf", "--enforce-eager"], default_name(), ["--enforce-eager"]),
        (["--wyoming-zeroconf", "kitchen"], "kitchen", []),
        (["--wyoming-zeroconf=kitchen", "--enforce-eager"], "kitchen", ["--enforce-eager"]),
        ([], None, []),
    ],
)
def test_the_name_is_optional_and_off_by_default(
    args: list[str], name: str | None, rest: list[str]
) -> None:
    settings, vllm_args = parse_args([*PORT, "--wyoming-host", "0.0.0.0", *args])
    assert settings.wyoming_zeroconf == name
    assert vllm_args == rest
