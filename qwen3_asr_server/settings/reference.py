"""The configuration reference, docs/operations/configuration.md, written from the settings'
declarations so that it cannot drift from them (a test compares the committed page):

    python -m qwen3_asr_server.settings.reference > docs/operations/configuration.md
"""

from __future__ import annotations

from .composite import GROUPS
from .flags import Flag, flags

INTRO = """\
# Configuration

<!-- Written by `python -m qwen3_asr_server.settings.reference > docs/operations/configuration.md`
from the settings' declarations (qwen3_asr_server/settings/): change those, not this page. -->

Every setting is a flag of `server.py`, an environment variable, or its default; a flag wins
over its variable, and the `QWEN3_ASR_*` name over a setting's extra name. **Flags the server
does not know are passed to vLLM unchanged**, e.g. `python server.py --enforce-eager
--tensor-parallel-size 2`. An on/off setting is `--flag` or `--no-flag`, or its variable set
to `true` or `false`; a list is comma-separated. `python server.py --help` says the same, in
the same groups.
"""


def page() -> str:
    sections = [INTRO]
    for title, group in GROUPS:
        rows = "".join(_row(flag) for flag in flags(group))
        sections.append(
            f"## {title[0].upper()}{title[1:]}\n\n"
            "| flag | environment | default | meaning |\n|---|---|---|---|\n" + rows
        )
    return "\n".join(sections)


def _row(flag: Flag) -> str:
    env = " / ".join(f"`{name}`" for name in flag.env)
    default = flag.default or ""
    if flag.default is not None and flag.default_is_value:
        default = f"`{default}`"
    meaning = flag.description.replace("|", "\\|")
    return f"| `{flag.flag}` | {env} | {default} | {meaning} |\n"


if __name__ == "__main__":
    print(page(), end="")
