"""A command line as sim shows or writes it (a fuzzed program's, one run beside `sim serve`): each argument
that is or carries a credential replaced by `<redacted>`, so that a key given on the command line never
reaches a saved file, a report or sim's output."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

from sim.cassette.secrets import REDACTED, SECRET_HEADERS, known_secrets_pattern, scrub_text
from sim.cassette.upstream import is_credential_parameter

SECRET_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
)
"""Variables of sim's environment whose values are secrets wherever they turn up."""
_OPTION = re.compile(r"^--?(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?:=(?P<value>.*))?$", re.DOTALL)
_HEADER = re.compile(r"^\s*(?P<name>[A-Za-z0-9-]+)\s*:", re.DOTALL)


def known_secrets(environment: Mapping[str, str] | None = None) -> re.Pattern[str] | None:
    """The secrets sim's environment holds (`SECRET_VARIABLES`), as one pattern."""
    environment = os.environ if environment is None else environment
    return known_secrets_pattern(environment.get(name, "") for name in SECRET_VARIABLES)


def scrubbed_arguments(argv: Iterable[str], known: re.Pattern[str] | None) -> list[str]:
    """`argv` with every credential in it replaced: the known secrets and what looks like a key or token
    anywhere, the value of an option named for one (`--api-key VALUE`, `--token=VALUE`), and the value of a
    secret header (`-H 'Authorization: Bearer ...'`)."""
    shown: list[str] = []
    after_credential_option = False
    for argument in argv:
        if after_credential_option:
            after_credential_option = False
            if not argument.startswith("-"):
                shown.append(REDACTED)
                continue
        if (option := _OPTION.match(argument)) is not None and is_credential_parameter(option["name"], ""):
            if option["value"] is None:
                after_credential_option = True
                shown.append(argument)
            else:
                shown.append(f"{argument.partition('=')[0]}={REDACTED}")
            continue
        if (header := _HEADER.match(argument)) is not None and header["name"].lower() in SECRET_HEADERS:
            shown.append(f"{header['name']}: {REDACTED}")
            continue
        shown.append(scrub_text(argument, known))
    return shown


def shown_command(argv: Sequence[str], environment: Mapping[str, str] | None = None) -> str:
    """The command line as a shell reads it back, credentials replaced (`scrubbed_arguments`), the secrets
    of `environment` (sim's by default) among them."""
    return shlex.join(scrubbed_arguments(argv, known_secrets(environment)))
