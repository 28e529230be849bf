"""The manual's Architecture page holds the module map: it names every module and sub-package
(`backend/`), and only those."""

from __future__ import annotations

import re

from tests.fixtures.process import REPO

PACKAGE = REPO / "qwen3_asr_server"
ARCHITECTURE = REPO / "docs" / "development" / "architecture.md"


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
    """The first column of the page's "Module map" section, up to the next section."""
    page = ARCHITECTURE.read_text()
    section = page[page.index("\n## Module map\n") :]
    after = section.find("\n## ", 1)
    section = section if after == -1 else section[:after]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w/]+)`", row.split("|")[1])}


def test_the_architecture_page_maps_every_module() -> None:
    assert _modules() - _mapped() == set(), f"modules missing from {ARCHITECTURE.name}'s map"


def test_the_architecture_page_maps_no_module_that_is_gone() -> None:
    assert _mapped() - _modules() == set(), f"{ARCHITECTURE.name}'s module map names these"


def test_every_sub_package_says_what_it_is_for() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        if init.parent.name != "__pycache__":
            assert init.read_text().startswith('"""'), f"{init.parent.name}/ has no docstring"
