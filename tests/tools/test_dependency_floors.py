"""The declared lower bounds: each one is there, the linters agree with the Python floor, and
none is below what the code is known to need. scripts/dependency-floors.sh runs the tests that
lean on the dependencies with each one at its floor."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.fixtures.process import import_script

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# What the code uses, and the first release that has it. A floor under one of these is a user's
# crash: Python 3.10 has no Task.uncancel() (the disconnect listener) or asyncio.timeout.
NEEDS = {
    "python": (Version("3.11"), "Task.uncancel() and asyncio.timeout"),
    "uvicorn": (Version("0.52.1"), "WebSocket refusals with their headers once (sansio)"),
    "av": (Version("18.1"), "a decoder that refuses a 0-bit WAV instead of segfaulting"),
    "openai": (Version("3.57"), "the 2026 audio types the tests check answers against"),
    "wyoming": (Version("1.10"), "AsrProgram.requires_external_vad in the info event"),
}


floors = import_script("scripts/dependency_floors.py")


def test_floor_is_the_highest_lower_bound() -> None:
    assert floors.floor(SpecifierSet(">=1.2,<2")) == Version("1.2")
    assert floors.floor(SpecifierSet(">=1.2,>=1.4")) == Version("1.4")
    assert floors.floor(SpecifierSet("<2")) is None
    assert floors.floor(SpecifierSet("==1.0")) is None


def test_floors_cover_the_server_and_its_tests_but_not_the_engine_extras() -> None:
    project: dict[str, Any] = {
        "dependencies": ["uvicorn[standard]>=0.44", "Pydantic_Settings>=2.7"],
        "optional-dependencies": {"test": ["pytest>=8.4"], "gpu": ["vllm>=0.32"]},
    }
    assert floors.floors(project) == {
        "uvicorn": Version("0.44"),
        "pydantic-settings": Version("2.7"),
        "pytest": Version("8.4"),
    }


def test_every_dependency_declares_a_floor() -> None:
    declared = floors.floors(PYPROJECT["project"])
    assert declared, "no dependencies read"
    assert [name for name, version in declared.items() if version is None] == []


def test_the_linters_check_for_the_python_floor() -> None:
    python = floors.python_floor(PYPROJECT["project"])
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py{python.major}{python.minor}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"{python.major}.{python.minor}"


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_no_floor_is_below_what_the_code_needs(name: str) -> None:
    needed, why = NEEDS[name]
    project = PYPROJECT["project"]
    declared = floors.python_floor(project) if name == "python" else floors.floors(project)[name]
    assert declared >= needed, f"{name} >= {declared} is declared, but {why} needs {needed}"
