"""The Wyoming port's settings (`--wyoming-*`, `--hass-*`), a part of `Settings`.

Declared here, with the other groups, and mixed into `composite.Settings`, so each is still one
flag, one variable and one default.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import NoDecode


class WyomingSettings(BaseModel):
    wyoming_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Also serve the Wyoming protocol (Home Assistant's speech-to-text) on this "
        "TCP port (off by default). Wyoming has no authentication: see --wyoming-host.",
        json_schema_extra={"metavar": "PORT"},
    )
    wyoming_host: str = Field(
        "127.0.0.1",
        description="Interface the Wyoming port listens on: loopback by default, since anyone "
        "who reaches it can use the model (no --api-key there).",
        json_schema_extra={"metavar": "HOST"},
    )
    wyoming_prompt: str | None = Field(
        None,
        description="Context for the model in every Wyoming command: names, terms, a topic "
        "(as the HTTP API's `prompt`).",
        json_schema_extra={"metavar": "TEXT"},
    )
    wyoming_keywords: Annotated[list[str], NoDecode] = Field(
        [],
        description="Comma-separated words or names to expect in every Wyoming command (as "
        "the HTTP API's `keywords`).",
        json_schema_extra={"metavar": "WORD,..."},
    )
    hass_url: str | None = Field(
        None,
        description="Home Assistant's URL (`http://homeassistant.local:8123`): its entity, "
        "area and floor names go into the context of Wyoming commands (needs --hass-token).",
        json_schema_extra={"metavar": "URL"},
    )
    hass_token: SecretStr | None = Field(
        None,
        description="A long-lived access token of a Home Assistant user, for --hass-url; "
        "better given as the environment variable than as a flag.",
        json_schema_extra={"metavar": "TOKEN"},
    )
    hass_max_tokens: int = Field(
        512,
        gt=0,
        description="Most tokens of Home Assistant names in a Wyoming command's context "
        "(estimated at one token per 3 bytes); past it the last tiers are left out.",
        json_schema_extra={"metavar": "TOKENS"},
    )
    wyoming_endpointing: bool = Field(
        True,
        description="End a Wyoming command at the pause after its speech, heard here "
        "(`--no-wyoming-endpointing`: only at `audio-stop`, and info asks for the client's "
        "VAD).",
    )
    # Wyoming has no authentication: these bound what anyone who reaches the port can hold
    wyoming_max_connections: int = Field(
        32,
        ge=1,
        description="Wyoming connections open at once, over the whole server (every worker); "
        "one beyond it is closed as soon as it is accepted, and counted in "
        'qwen3_asr_rejected_total{reason="wyoming_connection_limit"}.',
        json_schema_extra={"metavar": "N"},
    )
    wyoming_idle_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds a Wyoming connection may send no event before it is closed.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    wyoming_event_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds a Wyoming event (header, data and payload) has to arrive whole "
        "once it has begun; then an `error` event and the connection is closed.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    wyoming_max_audio_seconds: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Most seconds of audio one Wyoming command may hold (with or without "
        "endpointing; at most 600); beyond it the command ends with an `error` event "
        "(audio-too-long).",
        json_schema_extra={"metavar": "SECONDS"},
    )
    wyoming_zeroconf: str | None = Field(
        None,
        min_length=1,
        max_length=63,
        description="Advertise the Wyoming port over zeroconf (mDNS, `_wyoming._tcp`) under "
        "this name, for Home Assistant to discover (off by default; the bare flag: "
        "qwen3-asr-HOSTNAME). Needs --wyoming-host 0.0.0.0 or a LAN address.",
        json_schema_extra={"metavar": "[NAME]"},
    )

    @model_validator(mode="after")
    def _home_assistant(self) -> WyomingSettings:
        if self.hass_url is None:
            return self
        if urlsplit(self.hass_url).scheme not in ("http", "https"):
            raise ValueError("--hass-url must be an http:// or https:// URL")
        if self.hass_token is None:
            raise ValueError("--hass-url needs --hass-token (QWEN3_ASR_HASS_TOKEN)")
        if self.wyoming_port is None:
            raise ValueError("--hass-url biases Wyoming commands: it needs --wyoming-port")
        return self

    @model_validator(mode="after")
    def _advertised_port(self) -> WyomingSettings:
        if self.wyoming_zeroconf is None:
            return self
        if self.wyoming_port is None:
            raise ValueError("--wyoming-zeroconf advertises --wyoming-port: give that too")
        advertised_address(self.wyoming_host)  # a ValueError when it cannot be
        return self


def advertised_address(host: str) -> str | None:
    """The IPv4 address to advertise for a port listening on `host`. None when it listens on
    every interface (0.0.0.0 or ::): the library then picks the one whose route carries mDNS,
    as Home Assistant's own Wyoming servers do. A ValueError for a host that no other machine
    can reach (loopback) or that the library cannot advertise (a name, an IPv6 address)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            f"--wyoming-zeroconf advertises an address: give --wyoming-host as one, not {host!r}"
        ) from None
    if address.is_unspecified:
        return None
    if address.is_loopback:
        raise ValueError(
            f"--wyoming-zeroconf would advertise a port no other machine can reach "
            f"(--wyoming-host {host}): use --wyoming-host 0.0.0.0, or this machine's LAN address"
        )
    if address.version != 4:
        raise ValueError(
            "--wyoming-zeroconf advertises an IPv4 address: give --wyoming-host 0.0.0.0, :: or "
            "an IPv4 address of this machine"
        )
    return host
