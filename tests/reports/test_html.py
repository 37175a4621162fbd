"""The HTML report of each command: it parses, holds its sections and texts, escapes what recordings say,
and fetches nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sim.cli import app
from sim.core.loop import RunEnding
from sim.reports.build import fuzzed
from sim.reports.html import render, steps
from sim.scenario.schema import Scenario
from sim.testing.campaign import ExampleRun, FuzzReport
from sim.testing.invariants import Violation

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "</pre><script>alert(1)</script>{{ 7*7 }}<b>bold</b>"


class Page(HTMLParser):
    """The page's tags, texts and the attributes that could fetch something."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.texts: list[str] = []
        self.fetching: list[str] = []
        self.open_details = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.fetching += [f"{tag} {k}={v}" for k, v in attrs if k in ("src", "href", "action", "srcset")]
        if tag == "details" and any(k == "open" for k, _ in attrs):
            self.open_details += 1

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)


def run(*args: str | Path) -> Page:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    out = next(Path(a) for a in args if str(a).endswith(".html"))
    return Page(out.read_text())


def self_contained(page: Page) -> None:
    assert page.fetching == []
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags


def test_play_report_passing_and_failing(tmp_path: Path) -> None:
    failing = tmp_path / "fails.yaml"
    failing.write_text("prompt: p\nreplies:\n  - content: hello\nexpect: {final_text: goodbye}\n")
    page = run("play", ROOT / "scenarios" / "echo-42.yaml", failing, "--report", tmp_path / "play.html")
    self_contained(page)
    assert "1 passed" in page.text and "1 failed" in page.text
    assert "Outcomes" in page.text and "completed" in page.text
    assert "expect.final_text: expected 'goodbye', got 'hello'" in page.text
    assert page.open_details == 1  # the failed file opens, the passed one stays collapsed
    assert 'call call_1: shell {"command":"echo 42"}' in page.text  # short arguments read on one line


def test_long_call_arguments_are_laid_out() -> None:
    long = '{"command":"pytest tests/test_module.py -x -q --maxfail=1","timeout":30}'
    (short, laid_out) = steps(['  call call_1: shell {"command":"ls"}', f"  call call_2: shell {long}"])
    assert short.detail is None
    assert laid_out.kind == "call" and laid_out.detail == json.dumps(json.loads(long), indent=2)


def test_replay_report_shows_a_divergence_side_by_side_and_escapes_it(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "cassettes" / "responses" / "echo-42.yaml").read_text())
    data["sim"]["prompt"] = HOSTILE
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "replay.html"
    page = run("replay", ROOT / "cassettes" / "echo-42.yaml", hostile, "--report", out)
    self_contained(page)
    assert "First difference: input[0].content" in page.text
    assert "recorded request" in page.text and "request now" in page.text
    assert page.tags.count("mark") == 2
    html = out.read_text()
    assert "<script>" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;{{ 7*7 }}" in html  # shown as text, never run


def test_check_report_lists_findings(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("prompt: p\nrepliez: []\n")
    page = run("check", ROOT / "cassettes", bad, "--report", tmp_path / "check.html")
    self_contained(page)
    assert "8 passed, 1 failed" in " ".join(page.text.split())
    assert "unknown key 'repliez'" in page.text


def test_show_html_for_a_scenario_and_a_cassette(tmp_path: Path) -> None:
    for source in (
        ROOT / "scenarios" / "echo-42.yaml",
        ROOT / "cassettes" / "responses" / "parallel-calls.yaml",
    ):
        page = run("show", source, "--html", tmp_path / f"{source.stem}.html")
        self_contained(page)
        assert "user:" in page.text or "+ user:" in page.text


def test_fuzz_report_shows_the_counterexample_and_how_to_reproduce_it(tmp_path: Path) -> None:
    scenario = Scenario.model_validate({"prompt": "p", "replies": [{"content": HOSTILE}]})
    failure = ExampleRun(scenario, RunEnding(None, None), [Violation("pairing", "call_1 left unanswered")])
    report = FuzzReport(runs=40, failure=failure, saved=tmp_path / "fuzz-0.yaml")
    page = Page(render(fuzzed(report, None)))
    self_contained(page)
    assert "pairing: call_1 left unanswered" in page.text
    assert f"sim play {tmp_path / 'fuzz-0.yaml'}" in page.text
    assert "<script>" not in render(fuzzed(report, None))


def test_a_passing_fuzz_campaign_report(tmp_path: Path) -> None:
    page = run("fuzz", "--examples", "20", "--seed", "3", "--report", tmp_path / "fuzz.html")
    self_contained(page)
    assert "every invariant held" in page.text and "20 runs" in page.text


def test_pytest_writes_one_report_for_scenario_and_cassette_items(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("cases")
    (folder / "ok.yaml").write_text((ROOT / "scenarios" / "echo-42.yaml").read_text())
    (folder / "fails.yaml").write_text("prompt: p\nreplies:\n  - content: hi\nexpect: {final_text: bye}\n")
    recorded = pytester.mkdir("recorded")
    (recorded / "echo.yaml").write_text((ROOT / "cassettes" / "responses" / "echo-42.yaml").read_text())
    result = pytester.runpytest("--sim-scenarios=cases", "--sim-cassettes=recorded", "--sim-report=out.html")
    result.assert_outcomes(passed=2, failed=1)
    page = Page((pytester.path / "out.html").read_text())
    self_contained(page)
    assert "2 passed" in page.text and "1 failed" in page.text
    assert "expect.final_text: expected 'bye', got 'hi'" in page.text and "echo.yaml" in page.text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    CHROMIUM is None, reason="needs a headless Chromium (Debian's chromium package), not here"
)
def test_the_page_renders_in_a_headless_browser(tmp_path: Path) -> None:
    out = tmp_path / "play.html"
    run("play", ROOT / "scenarios", "--report", out)
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--dump-dom", out.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "22 passed" in done.stdout
    assert not re.search(r"CONSOLE\(\d+\)|Uncaught", done.stderr)
