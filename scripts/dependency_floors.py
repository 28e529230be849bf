"""The lower bounds pyproject.toml declares, for scripts/dependency-floors.sh.

    python scripts/dependency_floors.py python       the Python floor's interpreter ("python3.11")
    python scripts/dependency_floors.py constraints  pip constraints: each dependency at its floor
    python scripts/dependency_floors.py check        fail unless this Python and its packages are
                                                     at their floors

The server's dependencies and its test extra are floored here; the engine extras are not (the
engine tests install the one vLLM CPU release they were written for).
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
EXTRAS = ("test",)


def floor(specifier: SpecifierSet) -> Version | None:
    """The version a `>=` in `specifier` allows as the lowest, if it has one."""
    bounds = [Version(spec.version) for spec in specifier if spec.operator == ">="]
    return max(bounds) if bounds else None


def floors(project: dict[str, Any], extras: tuple[str, ...] = EXTRAS) -> dict[str, Version | None]:
    """Each direct dependency of the server and of `extras`, by canonical name, with its floor."""
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    found: dict[str, Version | None] = {}
    for line in requirements:
        requirement = Requirement(line)
        found[canonicalize_name(requirement.name)] = floor(requirement.specifier)
    return found


def python_floor(project: dict[str, Any]) -> Version:
    lowest = floor(SpecifierSet(str(project["requires-python"])))
    if lowest is None:
        raise SystemExit("requires-python declares no floor")
    return lowest


def main(command: str) -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    declared = floors(project)
    unfloored = sorted(name for name, version in declared.items() if version is None)
    if unfloored:
        raise SystemExit(f"no lower bound declared for {', '.join(unfloored)}")
    python = python_floor(project)
    if command == "python":
        print(f"python{python.major}.{python.minor}")
    elif command == "constraints":
        print("\n".join(f"{name}=={version}" for name, version in sorted(declared.items())))
    elif command == "check":
        running = Version(f"{sys.version_info.major}.{sys.version_info.minor}")
        wrong = [f"python {running} (the floor is {python})"] if running != python else []
        for name, version in sorted(declared.items()):
            installed = Version(metadata.version(name))
            if installed != version:
                wrong.append(f"{name} {installed} (the floor is {version})")
        if wrong:
            raise SystemExit("not the declared floors: " + "; ".join(wrong))
        print(f"python {python} and {len(declared)} packages at their declared floors")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
