"""The command line: the settings' flags (pydantic-settings), and every other flag left for
vLLM."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_settings import CliSettingsSource

from .settings import Settings
from .wyoming import discovery


def parse_args(argv: Sequence[str]) -> tuple[Settings, list[str]]:
    """Parse the command line; return the settings and the arguments meant for vLLM."""
    parser = argparse.ArgumentParser(
        prog="server.py",
        allow_abbrev=False,
        description="OpenAI-compatible speech-to-text server for Qwen3-ASR. Flags not listed "
        "here are passed to vLLM unchanged (e.g. --enforce-eager, --tensor-parallel-size 2).",
    )
    cli: CliSettingsSource[Settings] = CliSettingsSource(Settings, root_parser=parser)
    namespace, vllm_args = parser.parse_known_args(_named_zeroconf(argv))
    try:
        settings = Settings(_cli_settings_source=cli(parsed_args=namespace))  # type: ignore[call-arg]
    except ValidationError as exc:
        parser.error("; ".join(_problem(error) for error in exc.errors()))  # exits with 2
    return settings, vllm_args


def _named_zeroconf(argv: Sequence[str]) -> list[str]:
    """`argv` with a bare `--wyoming-zeroconf` (last, or before another flag) given the default
    name: its NAME is optional, which a pydantic-settings flag cannot say."""
    flag = "--wyoming-zeroconf"
    return [
        f"{flag}={discovery.default_name()}"
        if arg == flag and (index + 1 == len(argv) or argv[index + 1].startswith("-"))
        else arg
        for index, arg in enumerate(argv)
    ]


def _problem(error: Any) -> str:
    """One of pydantic's errors as a line about the flag (env variables have the same name)."""
    message = str(error["msg"]).removeprefix("Value error, ")
    if not error["loc"]:
        return message
    return f"--{str(error['loc'][0]).replace('_', '-')}: {message}"
