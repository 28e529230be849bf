"""What a person is told about each setting, in `--help` and in the configuration reference:
its flag, placeholder, variables, default and meaning, worked out from its declaration."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

ENV_PREFIX = "QWEN3_ASR_"


@dataclass(frozen=True)
class Flag:
    name: str  # the field's
    flag: str
    placeholder: str | None  # None: an on/off flag (`--x`, `--no-x`), which takes no value
    env: tuple[str, ...]  # the prefixed variable, then the extra name if the field has one
    default: str | None  # None: no value
    default_is_value: bool  # as one would type it; else words (a default worked out later)
    description: str


def flags(group: type[BaseModel]) -> Iterator[Flag]:
    """The group's flags, in the order they are declared."""
    for name, field in group.model_fields.items():
        yield described(name, field)


def described(name: str, field: FieldInfo) -> Flag:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    env = (ENV_PREFIX + name.upper(), *([str(extra["env"])] if "env" in extra else []))
    text = extra.get("default_text")
    return Flag(
        name=name,
        flag="--" + name.replace("_", "-"),
        placeholder=_placeholder(field, extra),
        env=env,
        default=_typed(field.default) if text is None else str(text),
        default_is_value=text is None,
        description=field.description or "",
    )


def help_text(flag: Flag) -> str:
    """The lines of `--help` under the flag (not yet escaped for argparse's `%`): what it
    means, then its default and its variables."""
    default = f"(default: {flag.default}) " if flag.default is not None else ""
    return f"{flag.description}\n{default}[env: {', '.join(flag.env)}]"


def _placeholder(field: FieldInfo, extra: dict[str, Any]) -> str | None:
    if field.annotation is bool:
        return None
    if typing.get_origin(field.annotation) is typing.Literal:
        return "{" + ",".join(map(str, typing.get_args(field.annotation))) + "}"
    return str(extra["metavar"])  # every other field declares one


def _typed(value: Any) -> str | None:
    """A default as its flag's value would be typed: a list comma-separated, a whole float
    without its `.0`, on/off for a switch; None for no value (None, "", [])."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        value = ",".join(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value) if value not in (None, "") else None
