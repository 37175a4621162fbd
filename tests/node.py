"""Node programs for the tests: the npm `openai` package installed once per test session into a temporary
folder, beside a copy of tests/programs_node/ (an ES module finds its imports from where the file is, so the
programs run from there). pytest-xdist's workers share the install (a lock file in the session's shared
temporary folder). Where `node` or `npm` is absent, or the install fails (offline, say), the tests that ask
for `node_programs` skip, saying why."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs_node"
"""The Node programs (ES modules) and the scenario they are served, as the repository holds them."""
OPENAI_PACKAGE = {22: "openai@7"}
"""The npm package installed, by the least Node major version it needs (openai@7 says `engines: node>=22`);
older Node gets `FALLBACK_PACKAGE`, the last major that names no engines (its README asks for Node 20; these
programs pass on Node 18 too, Debian 12's, which .ci/run installs)."""
FALLBACK_PACKAGE = "openai@6"
INSTALL_SECONDS = 300.0
READY = "ready"
"""The file that says the folder is done: empty when it is ready, else why it cannot be."""


@dataclass(frozen=True, slots=True)
class NodePrograms:
    """The programs, copied beside an installed `openai` package, and the `node` that runs them."""

    folder: Path
    node: str
    package: str
    """What was installed, e.g. `openai@7.59.0`."""

    def command(self, program: str, *arguments: str) -> list[str]:
        """The command that runs `program` (a file name in tests/programs_node/) with `arguments`."""
        return [self.node, str(self.folder / program), *arguments]


def node_major(node: str) -> int | None:
    """The major version of `node` (`v20.20.2` is 20), or None where it does not say."""
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    version = done.stdout.strip().removeprefix("v").split(".")[0]
    return int(version) if done.returncode == 0 and version.isdigit() else None


def package_for(major: int) -> str:
    """The npm package spec that Node `major` can run."""
    fitting = [spec for least, spec in sorted(OPENAI_PACKAGE.items()) if major >= least]
    return fitting[-1] if fitting else FALLBACK_PACKAGE


def install(folder: Path, path: str | None = None) -> str:
    """Installs the `openai` package into `folder` and copies the programs there; why it could not (one
    line), or "" when it did. `path` is the PATH to find `node` and `npm` on (this process's by default)."""
    node, npm = shutil.which("node", path=path), shutil.which("npm", path=path)
    if node is None or npm is None:
        return f"Node tests need node and npm on PATH ({'node' if node is None else 'npm'} is absent)"
    major = node_major(node)
    if major is None:
        return f"{node} --version did not say its version"
    spec = package_for(major)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"private": true, "type": "module"}\n')
    options = ["--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", "--prefer-offline",
               "--fetch-retries=1", "--fetch-timeout=30000", "--loglevel=error"]  # fmt: skip
    try:
        done = subprocess.run(
            [npm, "install", *options, "--prefix", str(folder), spec],
            capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False, cwd=folder,
            env={**os.environ, "PATH": path or os.environ.get("PATH", "")},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"npm install {spec} took more than {INSTALL_SECONDS:g} s"
    if done.returncode != 0:
        return f"npm install {spec} failed (exit {done.returncode}): {one_line(done.stderr or done.stdout)}"
    for program in PROGRAMS.iterdir():
        if program.is_file():
            shutil.copy(program, folder / program.name)
    check = "import('openai').then((m) => console.log(m.VERSION ?? ''))"
    imported = subprocess.run(
        [node, "--input-type=module", "-e", check], capture_output=True, text=True, timeout=60, cwd=folder
    )
    if imported.returncode != 0:
        return f"node {major} cannot import the installed {spec}: {one_line(imported.stderr)}"
    return ""


def one_line(text: str) -> str:
    """What a tool printed, as one line of at most 300 printable characters (its control characters, such
    as a colour's escapes, shown escaped, never sent to the terminal)."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))
    return shown[:300]


@contextmanager
def locked(lock: Path) -> Iterator[None]:
    """Holds an exclusive lock on the file `lock` (made if missing) while the block runs."""
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def installed(shared: Path) -> NodePrograms:
    """The programs installed under `shared` (done by the first caller, under a lock; the others wait and
    read what it found); skips the test, saying why, where they cannot be."""
    folder = shared / "node-programs"
    with locked(shared / "node-programs.lock"):
        ready = folder / READY
        if not ready.exists():
            folder.mkdir(parents=True, exist_ok=True)
            ready.write_text(install(folder))
        reason = ready.read_text()
    if reason:
        pytest.skip(reason)
    node = shutil.which("node")
    assert node is not None
    package = json.loads((folder / "node_modules" / "openai" / "package.json").read_text())
    return NodePrograms(folder, node, f"openai@{package.get('version', '?')}")


@pytest.fixture(scope="session")
def node_programs(tmp_path_factory: pytest.TempPathFactory) -> NodePrograms:
    """The Node programs, ready to run once per session (shared by pytest-xdist's workers); skips where
    Node or the package cannot be had."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a folder of the session's: their parent is the session's
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return installed(shared)
