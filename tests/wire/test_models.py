"""The models endpoint: its paths, and the one-model list it answers."""

from __future__ import annotations

from openai.types import Model

from sim.wire.models import PATHS, model_list


def test_the_list_holds_the_one_model_as_the_sdk_reads_it() -> None:
    listed = model_list("gpt-sim")
    assert listed["object"] == "list"
    assert [Model.model_validate(entry).id for entry in listed["data"]] == ["gpt-sim"]


def test_it_is_served_with_and_without_v1() -> None:
    assert PATHS == ("/v1/models", "/models")
