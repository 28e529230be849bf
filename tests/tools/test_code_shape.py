"""The package stays readable in pieces: no module over 400 lines, no function over 60."""

from __future__ import annotations

import ast

from tests.fixtures.process import REPO

PACKAGE = REPO / "qwen3_asr_server"
MODULE_LINES = 400
FUNCTION_LINES = 60


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(REPO)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {
        f"{path.relative_to(REPO)}:{node.lineno} {node.name}": length
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > FUNCTION_LINES
    }
    assert long == {}
