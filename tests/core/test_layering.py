"""`sim/core` imports only the standard library, pydantic and itself; no circle between the packages of `sim`,
and the simulator imports on its own."""

from __future__ import annotations

import ast
import subprocess
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


def _unit(module: str) -> str:
    """The package (or top-level module) of `sim` a module belongs to: `sim.cassette`, `sim.cli`."""
    return ".".join(module.split(".")[:2])


def package_imports() -> dict[str, set[str]]:
    """Which units of `sim` each unit imports (anywhere in its files, lazily imported names included)."""
    root = CORE.parent
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        me = _unit(".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"))
        others = {_unit(name) for name in imported_top_levels(path) if name.startswith("sim.")}
        graph.setdefault(me, set()).update(others - {me})
    return graph


def test_no_circle_between_packages() -> None:
    graph = package_imports()
    circles = []

    def visit(unit: str, path: list[str]) -> None:
        for other in sorted(graph.get(unit, ())):
            if other in path:
                circles.append(" -> ".join([*path[path.index(other) :], other]))
            elif len(path) < len(graph):
                visit(other, [*path, other])

    for unit in sorted(graph):
        visit(unit, [unit])
    assert circles == []
    assert {"sim.core", "sim.cassette", "sim.server", "sim.scenario", "sim.fuzz"} <= set(graph)


FRONT_ENDS = {"sim.cli", "sim.pytest_plugin"}


def test_front_ends_sit_above_everything_and_reports_take_plain_data() -> None:
    """Nothing imports the command line or the pytest plugin (the plugin may use the command line's
    pages); the report pages import nothing of sim but core: the front ends turn results into pages."""
    graph = package_imports()
    above = {unit: sorted(others & FRONT_ENDS) for unit, others in graph.items() if unit not in FRONT_ENDS}
    assert {unit: found for unit, found in above.items() if found} == {}
    assert graph["sim.reports"] <= {"sim.core"}
    assert "sim.cli" in graph and "sim.pytest_plugin" in graph


def test_the_package_users_import_first_imports_on_its_own() -> None:
    """In a fresh interpreter, as a user's `from sim.scenario.answerer import scenario_host` does: a circle between two
    packages fails only when the wrong one is imported first (the walk above finds any circle)."""
    done = subprocess.run(
        [sys.executable, "-c", "from sim.scenario.answerer import scenario_host"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
