"""The package's import graph has no circles, and the core loads no web framework.

Which floor may import which is import-linter's to check (`lint-imports`, its contracts in
`pyproject.toml`, run with the lints); what it cannot see is checked here.

Read from the source (every `import` and `from ... import`, those under `TYPE_CHECKING`
included: a circle there is still two modules that cannot be understood one without the
other), module by module; `from .pkg import name` counts as importing the module `pkg.name`
when there is one, else the package `pkg`. And, for the core, done for real: imported in a
fresh interpreter, it loads no web framework.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.fixtures.process import REPO

PACKAGE = REPO / "qwen3_asr_server"
ROOT = PACKAGE.name
# the core: what a transcription is made of, whichever front door it came through, and the
# engine behind it
CORE = ("transcription", "stages", "speech", "model", "speakers", "capacity", "backend")
# what no module of the core may load, however indirectly
WEB_FRAMEWORKS = ("fastapi", "starlette")


def _name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(module: str) -> Iterator[str]:
    path = MODULES[module]
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _graph() -> dict[str, set[str]]:
    return {
        module: {each for each in _imports(module) if each in MODULES and each != module}
        for module in MODULES
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for each in graph[node]:
            if each not in index:
                visit(each)
                low[node] = min(low[node], low[each])
            elif each in stack:
                low[node] = min(low[node], index[each])
        if low[node] == index[node]:
            component = []
            while True:
                each = stack.pop()
                component.append(each)
                if each == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_itself_back() -> None:
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Imports each module in turn; prints the first that loaded a web framework, and which.
_IMPORT_EACH = """
import importlib, sys
import qwen3_asr_server
print(qwen3_asr_server.__file__)
for name in sys.argv[1:]:
    importlib.import_module(name)
    web = sorted({{m.partition(".")[0] for m in sys.modules}} & set({web!r}))
    if web:
        print(name, "loaded", ", ".join(web))
        break
"""


def test_the_core_loads_no_web_framework() -> None:
    """Every module of the core imported, for real, in a fresh interpreter: neither FastAPI
    nor Starlette is loaded, through whatever chain of imports (the package's `__init__`s, a
    module outside the core, a third party), which the reading above does not follow."""
    modules = sorted(m for m in MODULES if m.split(".")[1:2] and m.split(".")[1] in CORE)
    assert len(modules) > len(CORE), "no core modules found"
    script = _IMPORT_EACH.format(web=WEB_FRAMEWORKS)
    done = subprocess.run(
        [sys.executable, "-c", script, *modules],
        cwd=REPO,  # this checkout's package, whatever else is installed
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    where, *loaded = done.stdout.splitlines()
    assert Path(where).resolve() == PACKAGE / "__init__.py"
    assert loaded == []
