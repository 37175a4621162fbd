"""The README's commands and Python examples work as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.scenario import load_scenario

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_opens_with_the_install_and_test_commands() -> None:
    bash_blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert bash_blocks[0].strip().startswith("pip install -e . && ")
    assert bash_blocks[1].strip() == 'pip install -e ".[dev]" && pytest'
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert ci.rstrip().endswith(bash_blocks[1].strip())


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"block {i}" for i in range(len(PYTHON_BLOCKS))])
def test_python_examples_run(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})


def test_yaml_guide_is_the_bundled_echo_42(tmp_path: Path) -> None:
    (block,) = re.findall(r"```yaml\n(.*?)```", README, flags=re.S)
    (tmp_path / "echo-42.yaml").write_text(block)
    bundled = Path(__file__).resolve().parents[1] / "scenarios" / "echo-42.yaml"
    assert load_scenario(tmp_path / "echo-42.yaml") == load_scenario(bundled)
