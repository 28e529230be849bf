"""A batch line's `file_url` cannot reach the server's own network by an IPv6 address that
carries a private IPv4 one, written in the URL or answered by DNS, and what stops a download
tells the client nothing about that network: one answer, whatever happened."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.entrypoints.jobs import fetch
from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_bad_input import _audio_server, _run_lines

LOOPBACK_IN_IPV6 = [
    "64:ff9b::7f00:1",  # NAT64
    "64:ff9b:1::7f00:1",  # NAT64, local use
    "2002:7f00:1::1",  # 6to4
    "2001:0:7f00:1:8000:63bf:f5ff:fefe",  # Teredo, server 127.0.0.1, client 10.0.1.1
    "::7f00:1",  # IPv4-compatible
    "::ffff:7f00:1",  # IPv4-mapped
    "::ffff:0:7f00:1",  # IPv4-translated
]


def _one_answer(outputs: list[dict[str, Any]], *unsaid: str) -> None:
    """Each line a 400 about `file_url`, all with the same code and message, which names none
    of `unsaid` (addresses, ports)."""
    errors = [line["response"]["body"]["error"] for line in outputs]
    assert [line["response"]["status_code"] for line in outputs] == [400] * len(outputs)
    assert len({(error["param"], error["code"], error["message"]) for error in errors}) == 1, errors
    assert errors[0]["param"] == "file_url"
    assert errors[0]["code"] == "file_url_not_allowed"
    assert not [word for word in unsaid if word in errors[0]["message"]], errors[0]


async def test_ipv4_loopback_inside_ipv6_is_refused_written_or_resolved(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "qwen3_asr_server.entrypoints.jobs.fetch")
    server = _audio_server()
    written = [f"http://[{address}]:{server.port}/clip.wav" for address in LOOPBACK_IN_IPV6]
    try:
        async with app_before(StandIn(MODEL), batch_file_urls=True) as harness:
            outputs = await _run_lines(harness, [{"file_url": url} for url in written])
            _one_answer(outputs, str(server.port), "7f00", "127.0.0.1")
            refusals = [r.getMessage() for r in caplog.records if "not a public" in r.getMessage()]
            assert len(refusals) == len(LOOPBACK_IN_IPV6), caplog.text
            named = f"http://audio.example:{server.port}/clip.wav"
            for address in LOOPBACK_IN_IPV6:
                monkeypatch.setattr(fetch, "DefaultResolver", _answering(address))
                outputs += await _run_lines(harness, [{"file_url": named}])
                assert f"resolves to {address}, which is not public" in caplog.text
    finally:
        server.stop()
    _one_answer(outputs, str(server.port), "7f00", "127.0.0.1", "audio.example")


async def test_a_closed_port_an_unknown_name_and_a_refusal_answer_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client cannot tell which ports are open or which names resolve: the guard told that
    loopback is public lets the tests reach a closed port."""
    async with app_before(StandIn(MODEL), batch_file_urls=True) as harness:
        [refused] = await _run_lines(harness, [{"file_url": "http://169.254.169.254/latest"}])
        monkeypatch.setattr(fetch, "public", lambda address: True)
        port = free_port()
        closed, unknown = await _run_lines(
            harness,
            [{"file_url": f"http://127.0.0.1:{port}/a.wav"}, {"file_url": "http://nx.invalid/a"}],
        )
    _one_answer([refused, closed, unknown], str(port), "169.254", "nx.invalid")


def _answering(address: str) -> type:
    """A stand-in for the system's resolver that answers every name with `address`."""

    class Resolver:
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[dict[str, Any]]:
            return [
                {
                    "hostname": host,
                    "host": address,
                    "port": port,
                    "family": socket.AF_INET6,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            ]

        async def close(self) -> None:
            pass

    return Resolver
