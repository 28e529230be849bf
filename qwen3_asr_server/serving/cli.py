"""The command line: the settings' flags (pydantic-settings), and every other flag left for
vLLM."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_settings import CliSettingsSource

from ..entrypoints.wyoming import discovery
from ..settings.composite import GROUPS, Settings
from ..settings.flags import Flag, flags, help_text


def parse_args(argv: Sequence[str]) -> tuple[Settings, list[str]]:
    """Parse the command line; return the settings and the arguments meant for vLLM."""
    parser = argparse.ArgumentParser(
        prog="server.py",
        usage="%(prog)s [FLAG ...] [vLLM FLAG ...]",
        allow_abbrev=False,
        formatter_class=_Formatter,
        description="OpenAI-compatible speech-to-text server for Qwen3-ASR. Flags not listed "
        "here are passed to vLLM unchanged (e.g. --enforce-eager, --tensor-parallel-size 2). "
        "Each flag can be given as the environment variable after it instead; the flag wins.",
    )
    cli: CliSettingsSource[Settings] = CliSettingsSource(
        Settings, root_parser=parser, add_argument_method=_in_groups(parser)
    )
    namespace, vllm_args = parser.parse_known_args(_named_zeroconf(argv))
    try:
        settings = Settings(_cli_settings_source=cli(parsed_args=namespace))  # type: ignore[call-arg]
    except ValidationError as exc:
        parser.error("; ".join(_problem(error) for error in exc.errors()))  # exits with 2
    return settings, vllm_args


def _in_groups(parser: argparse.ArgumentParser) -> Callable[..., argparse.Action]:
    """How pydantic-settings adds a flag: into the group of the class that declares its field
    (its own groups are for nested models only, and these are mixins), with our placeholder
    and help. Only what `--help` shows changes: each flag parses as pydantic-settings made it."""
    homes: dict[str, tuple[argparse._ArgumentGroup, Flag]] = {}
    for title, group in GROUPS:
        section = parser.add_argument_group(title)
        homes.update((flag.name, (section, flag)) for flag in flags(group))

    def add(_: object, *names: str, **kwargs: Any) -> argparse.Action:
        section, flag = homes[kwargs["dest"]]
        kwargs["help"] = help_text(flag).replace("%", "%%")
        if flag.placeholder is not None:
            kwargs["metavar"] = flag.placeholder
        return section.add_argument(*names, **kwargs)

    return add


class _Formatter(argparse.HelpFormatter):
    """Help broken into lines at spaces only, so a model id or a comma-separated default stays
    whole for copying, and at every newline of a help, so its variables get a line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return [
            line
            for paragraph in text.splitlines()
            for line in textwrap.wrap(
                paragraph, width, break_long_words=False, break_on_hyphens=False
            )
        ]


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
