"""The Wyoming port opened beyond loopback: `server.py` says at start that anyone who reaches
it can use the model (Wyoming has no authentication)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.wyoming import start_wyoming

WARNING = "the protocol has no authentication, so anyone who can reach this port can use"


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_a_wyoming_port_open_beyond_loopback_says_so_at_start(
    tmp_path: Path, host: str, warned: bool
) -> None:
    wyoming = start_wyoming(tmp_path, {}, "--wyoming-host", host)
    wyoming.server.stop()
    said = [line for line in wyoming.server.output().splitlines() if WARNING in line]
    assert bool(said) is warned
    assert all(" WARNING " in line for line in said)  # at the level an operator watches
