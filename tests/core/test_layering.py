"""`sim/core` imports only the standard library, pydantic and itself."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import sim.core

CORE = Path(sim.core.__file__).parent
ALLOWED_THIRD_PARTY = {"pydantic", "pydantic_core"}


def imported_top_levels(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_core_imports_only_stdlib_pydantic_and_core() -> None:
    offenders = {}
    for path in sorted(CORE.glob("*.py")):
        bad = {
            name
            for name in imported_top_levels(path)
            if not name.startswith("sim.core")
            and name.split(".")[0] not in sys.stdlib_module_names | ALLOWED_THIRD_PARTY | {"__future__"}
        }
        if bad:
            offenders[path.name] = sorted(bad)
    assert offenders == {}
    assert len(list(CORE.glob("*.py"))) >= 8
