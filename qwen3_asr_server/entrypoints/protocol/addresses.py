"""Addresses a client names for the server to reach: which a `file_url` download may connect to
(`public`: those anyone on the internet could reach), and what an IPv6 address carries, for a
WebRTC caller's candidates too (`entrypoints.realtime.ice`). An IPv6 address that carries an IPv4
one reaches that IPv4 host through a translator or tunnel (NAT64 on an IPv6-only cluster, 6to4,
Teredo, a dual-stack socket), so it is judged as the IPv4 it carries, not by the IPv6 range it
sits in: `64:ff9b::7f00:1` is loopback.

The local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215) is refused whole: its translator may use
any of RFC 6052's prefix lengths (/48 to /96), each reading the IPv4 from other bits of the same
address, and which one the operator chose cannot be told from the address, so no reading of it
is safe to trust; and it only ever names the operator's own translator. Operators' own
network-specific NAT64 prefixes cannot be known at all: a private address behind one of those is
for the network's egress policy to refuse."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address

NAT64 = IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix
NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")  # RFC 8215
COMPATIBLE = IPv6Network("::/96")  # IPv4-compatible, deprecated (RFC 4291)
TRANSLATED = IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765)


def carried(address: IPv6Address) -> tuple[IPv4Address, ...] | None:
    """The IPv4 addresses `address` reaches through (Teredo: its server's and its client's),
    or None for an address that carries none."""
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    if any(address in prefix for prefix in (NAT64, COMPATIBLE, TRANSLATED)):
        return (IPv4Address(int(address) & 0xFFFFFFFF),)
    return None


def public(address: str) -> bool:
    """Whether `address` (an IP address as text, an IPv6 zone allowed) is one anyone on the
    internet could reach: not loopback, private, link-local (the cloud metadata service),
    multicast nor reserved, nor any IPv6 form of those. A ValueError for what is no address."""
    parsed = ip_address(address.split("%")[0])
    if isinstance(parsed, IPv6Address):
        if parsed in NAT64_LOCAL:
            return False
        inside = carried(parsed)
        if inside is not None:
            return all(_global(each) for each in inside)
    return _global(parsed)


def _global(address: IPv4Address | IPv6Address) -> bool:
    """Python's `is_global` counts multicast as global: it is no one host to download from."""
    return address.is_global and not address.is_multicast
