from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim import ConfigurationError
from sim.adapters.settings import Settings

KEY = "sk-live-secret-9876543210"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_all_missing_are_listed_in_order() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.load()
    assert str(caught.value) == "Missing required settings: OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL"


def test_blank_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "   ")
    monkeypatch.setenv("OPENAI_MODEL", "")
    with pytest.raises(
        ConfigurationError, match=r"^Missing required settings: OPENAI_API_KEY, OPENAI_MODEL$"
    ):
        Settings.load()


def test_values_are_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "  https://api.example.com/v1 ")
    monkeypatch.setenv("OPENAI_API_KEY", f" {KEY}\t")
    monkeypatch.setenv("OPENAI_MODEL", " gpt-4o-mini ")
    assert Settings.load() == Settings("https://api.example.com/v1", KEY, "gpt-4o-mini")


def test_dotenv_is_read_and_the_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"OPENAI_BASE_URL=http://from-file/v1\nOPENAI_API_KEY={KEY}\nOPENAI_MODEL=file-model\n"
    )
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    assert Settings.load() == Settings("http://from-file/v1", KEY, "env-model")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://host/v1", "must be an http(s) URL"),
        ("localhost:8000", "must be an http(s) URL"),
        ("https://api.openai.com/v1/chat/completions", "must not end in /chat/completions"),
        ("https://api.openai.com/v1/chat/completions/", "must not end in /chat/completions"),
    ],
)
def test_base_url_checks(monkeypatch: pytest.MonkeyPatch, url: str, problem: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    with pytest.raises(ConfigurationError, match=re.escape(problem)) as caught:
        Settings.load()
    assert KEY not in str(caught.value)


def test_the_key_is_masked_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    shown = repr(Settings.load())
    assert KEY not in shown
    assert KEY[6:] not in shown
    assert "sk-" in shown


@pytest.mark.parametrize("key", ["sk-line\nbreak-0123", "sk-accentué-0123", "sk-two words-0123"])
def test_a_key_no_header_can_carry_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    with pytest.raises(ConfigurationError) as caught:
        Settings.load()
    assert "sk-" not in str(caught.value)
    assert "which no HTTP header can carry" in str(caught.value)


def test_a_base_url_port_out_of_range_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:99999/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    with pytest.raises(ConfigurationError, match=r"port out of range \(0-65535\)"):
        Settings.load()


@pytest.mark.parametrize(
    "url",
    ["http://user:hunter2-PASSWORD@127.0.0.1:8000/v1", "ftp://u:hunter2-PASSWORD@x/v1",
     "http://hunter2-PASSWORD@127.0.0.1/v1", "http://127.0.0.1:99999:hunter2-PASSWORD@x/v1"],
)  # fmt: skip
def test_a_user_or_password_in_the_base_url_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """It would be sent as Basic auth and recorded in every request's uri by `sim record`."""
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    with pytest.raises(
        ConfigurationError, match="OPENAI_BASE_URL must not carry a user or password"
    ) as caught:
        Settings.load()
    assert "hunter2" not in str(caught.value)


def test_account_ids_are_secrets_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-abc")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_def")
    assert Settings.load().secrets == (KEY, "org-abc", "proj_def")


def test_openai_api_chooses_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    from sim.wire import Api

    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    assert Settings.load().api is Api.chat
    monkeypatch.setenv("OPENAI_API", " Responses ")
    assert Settings.load().api is Api.responses
    monkeypatch.setenv("OPENAI_API", "completions")
    with pytest.raises(ConfigurationError) as caught:
        Settings.load()
    assert str(caught.value) == "OPENAI_API must be chat or responses, not 'completions'"


def test_a_base_url_ending_in_responses_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1/responses")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    with pytest.raises(ConfigurationError) as caught:
        Settings.load()
    assert str(caught.value) == (
        "OPENAI_BASE_URL must not end in /responses (the SDK appends it): use 'https://api.openai.com/v1'"
    )
