"""The rules for text sim did not write: `visible` for a terminal or a page, `json_text` for JSON. What acts
or hides is written out, what a reader reads is kept, and JSON reads back the same."""

from __future__ import annotations

import json

from sim.core.transcript import Line, LineKind
from sim.core.untrusted import json_text, visible
from sim.host.access_log import AccessLog, Answered
from sim.reports.html import Report, render, section

UNSEEN = ("\u200b", "\u200e", "\u200f", "\u00ad", "\u2028", "\u202e", "\x1b", "\x85", "\n", "\x7f", "\ufeff")
NAME = "she" + "ll".join(UNSEEN)
"""A tool name holding each of them."""


def raw_in(text: str, allowed: str = "") -> list[str]:
    """The characters of UNSEEN that `text` holds as they are (`allowed` aside)."""
    return [char for char in UNSEEN if char in text and char not in allowed]


def test_the_rules_write_out_what_acts_or_hides_and_keep_the_rest() -> None:
    assert raw_in(visible(NAME)) == [] and all(visible(char) in visible(NAME) for char in UNSEEN)
    assert visible("naïve 漢字 \u00a0tab") == "naïve 漢字 \u00a0tab"  # letters and spaces are shown
    assert visible("a\U000e0041b") == "a\\U000e0041b"  # a tag character, past the basic plane
    data = {"name": NAME, "tag": "\U000e0041", "kept": "naïve"}
    for indent in (None, 2):
        text = json_text(data, indent=indent)
        assert json.loads(text) == data and raw_in(text, allowed="\n" if indent else "") == []
        assert "naïve" in text


def test_a_page_and_a_json_access_log_line_write_out_what_they_are_given() -> None:
    page = render(
        Report(
            f"sim show {NAME}",
            sections=[section(NAME, False, NAME, [NAME], [Line(LineKind.call, f"call c1: {NAME}")])],
        )
    )
    assert (
        raw_in(page, allowed="\n") == [] and page.count(visible(NAME)) == 6
    )  # title, h1, path, headline, problem, step
    lines: list[str] = []
    AccessLog(lines.append, as_json=True)(Answered(NAME, 1, 400, f"sim_replay_mismatch: {NAME}"))
    (line,) = lines
    assert raw_in(line) == [] and json.loads(line)["said"].endswith(NAME)
