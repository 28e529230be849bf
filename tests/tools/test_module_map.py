"""The README's Development table is the module map: it names every module and sub-package
(`backend/`), and only those."""

from __future__ import annotations

import re

from tests.fixtures.process import REPO

PACKAGE = REPO / "qwen3_asr_server"


def _modules() -> set[str]:
    """Modules as `folder/module`, sub-packages as `folder/`."""
    return {
        f"{path.parent.relative_to(PACKAGE).as_posix()}/"
        if path.name == "__init__.py"
        else path.relative_to(PACKAGE).with_suffix("").as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.parent != PACKAGE or path.name != "__init__.py"
    }


def _mapped() -> set[str]:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Development\n") : readme.index("## Troubleshooting\n")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w/]+)`", row.split("|")[1])}


def test_the_readme_maps_every_module() -> None:
    assert _modules() - _mapped() == set(), "modules missing from the README's Development table"


def test_the_readme_maps_no_module_that_is_gone() -> None:
    assert _mapped() - _modules() == set(), "the README's Development table names these"


def test_every_sub_package_says_what_it_is_for() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        if init.parent.name != "__pycache__":
            assert init.read_text().startswith('"""'), f"{init.parent.name}/ has no docstring"
