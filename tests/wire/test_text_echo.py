"""The Responses API's `text` (format and verbosity) as the API takes and echoes it: an unknown verbosity
refused in the API's words (the spec's `Verbosity` has three values, so a response echoing a fourth could
never be sent), only the spec's fields echoed, and type errors worded as the API words them ("but got a
string instead")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.host.in_process import post, simulator
from tests.spec import untolerated

SCRIPT = "prompt: p\nreplies:\n  - {content: '{\"a\": 1}'}\n"
PATH = "/v1/responses"


def _ask(tmp_path: Path, body: dict[str, Any], path: str = PATH) -> Any:
    sim = simulator(tmp_path, SCRIPT)
    (response,) = post(sim, body, path=path)
    return sim, response


@pytest.mark.parametrize(
    ("verbosity", "message", "code"),
    [
        ("extreme", "Invalid value: 'extreme'. Supported values are: 'low', 'medium', and 'high'.",
         "invalid_value"),
        (5, "Invalid type for 'text.verbosity': expected a string, but got an integer instead.",
         "invalid_type"),
    ],
)  # fmt: skip
def test_a_verbosity_the_spec_does_not_have_is_refused(
    tmp_path: Path, verbosity: Any, message: str, code: str
) -> None:
    """Before: served 200, echoing `verbosity: "extreme"`, which the spec's `Verbosity` enum refuses."""
    sim, response = _ask(tmp_path, {"model": "m", "input": "p", "text": {"verbosity": verbosity}})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["message"], error["param"], error["code"]) == (message, "text.verbosity", code)
    assert untolerated("ErrorResponse", response.json()) == []
    assert sim.answerer.answered == 0


@pytest.mark.parametrize("verbosity", ["low", "medium", "high"])
def test_each_verbosity_the_spec_has_is_echoed(tmp_path: Path, verbosity: str) -> None:
    _, response = _ask(tmp_path, {"model": "m", "input": "p", "text": {"verbosity": verbosity}})
    assert response.status_code == 200, response.text
    assert response.json()["text"] == {"format": {"type": "text"}, "verbosity": verbosity}
    assert untolerated("Response", response.json()) == []


def test_the_echo_carries_only_the_fields_the_spec_has(tmp_path: Path) -> None:
    """Before: a key the request put in `text` beside `format` came back in the response's `text`, a field
    the spec's `ResponseTextParam` does not have (and the untrusted value with it)."""
    text = {"format": {"type": "json_object"}, "note": "<script>x</script>", "verbosity": "low"}
    _, response = _ask(tmp_path, {"model": "m", "input": "Answer in JSON.", "text": text})
    assert response.status_code == 200, response.text
    assert response.json()["text"] == {"format": {"type": "json_object"}, "verbosity": "low"}


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "p"}], "response_format": "json"},
         "/v1/chat/completions",
         "Invalid type for 'response_format': expected an object, but got a string instead."),
        ({"model": "m", "input": "p", "text": ["json"]}, PATH,
         "Invalid type for 'text': expected an object, but got an array instead."),
        ({"model": "m", "input": "p", "text": {"format": {"type": "json_schema", "name": "x", "schema": {},
                                                          "strict": "yes"}}}, PATH,
         "Invalid type for 'text.format.strict': expected a boolean, but got a string instead."),
    ],
)  # fmt: skip
def test_type_errors_are_worded_as_the_api_words_them(
    tmp_path: Path, body: dict[str, Any], path: str, message: str
) -> None:
    """Before: "but got string instead" (the API says "but got a string instead", e.g. "Invalid type for
    'messages[0].content[1].image_url': expected an object, but got a string instead.")."""
    _, response = _ask(tmp_path, body, path)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"] == message
