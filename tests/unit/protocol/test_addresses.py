"""Which addresses a `file_url` download may reach: every IPv6 form that carries an IPv4
address judged as that IPv4 address, for loopback, a private network, the cloud metadata
service and a public host."""

from __future__ import annotations

from ipaddress import IPv4Address

import pytest

from qwen3_asr_server.entrypoints.protocol.addresses import public

INNER = {
    "127.0.0.1": False,
    "10.1.2.3": False,
    "169.254.169.254": False,
    "224.0.0.1": False,
    "8.8.8.8": True,
}


def _hex(ipv4: str) -> str:
    """The IPv4 address as the last two groups of an IPv6 address (`7f00:1`)."""
    value = int(IPv4Address(ipv4))
    return f"{value >> 16:x}:{value & 0xFFFF:x}"


def _teredo(server: str, client: str) -> str:
    """A Teredo address (RFC 4380): its server's IPv4, then its client's obfuscated."""
    obfuscated = int(IPv4Address(client)) ^ 0xFFFFFFFF
    return f"2001:0:{_hex(server)}:8000:63bf:{obfuscated >> 16:x}:{obfuscated & 0xFFFF:x}"


FORMS = {
    "NAT64": lambda ipv4: f"64:ff9b::{_hex(ipv4)}",
    "NAT64, dotted": lambda ipv4: f"64:ff9b::{ipv4}",
    "6to4": lambda ipv4: f"2002:{_hex(ipv4)}::1",
    "IPv4-mapped": lambda ipv4: f"::ffff:{ipv4}",
    "IPv4-mapped, hex": lambda ipv4: f"::ffff:{_hex(ipv4)}",
    "IPv4-translated": lambda ipv4: f"::ffff:0:{_hex(ipv4)}",
    "IPv4-compatible": lambda ipv4: f"::{_hex(ipv4)}",
    "Teredo, server": lambda ipv4: _teredo(ipv4, "8.8.4.4"),
    "Teredo, client": lambda ipv4: _teredo("8.8.4.4", ipv4),
    "plain IPv4": lambda ipv4: ipv4,
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("ipv4", INNER)
def test_an_ipv6_form_is_judged_as_the_ipv4_it_carries(form: str, ipv4: str) -> None:
    address = FORMS[form](ipv4)
    assert public(address) is INNER[ipv4], address


@pytest.mark.parametrize("ipv4", INNER)
def test_the_local_use_nat64_prefix_is_refused_whatever_it_carries(ipv4: str) -> None:
    for address in (f"64:ff9b:1::{_hex(ipv4)}", f"64:ff9b:1:{_hex(ipv4)}::", "64:ff9b:1::"):
        assert not public(address), address


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("::1", False),
        ("::", False),
        ("fe80::1%eth0", False),
        ("fd00::1", False),
        ("ff02::1", False),
        ("2001:db8::1", False),
        ("2606:4700:4700::1111", True),
        ("0.0.0.0", False),
        ("100.64.0.1", False),
        ("192.168.1.1", False),
        ("1.1.1.1", True),
    ],
)
def test_other_addresses_are_judged_by_their_own_range(address: str, allowed: bool) -> None:
    assert public(address) is allowed


def test_a_name_is_no_address() -> None:
    with pytest.raises(ValueError, match="does not appear to be"):
        public("example.com")
