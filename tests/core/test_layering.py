"""The shape of `sim`, read from its source: `sim/core` imports only the standard library, pydantic and
itself; no circle between the packages; the front ends sit on top; only the host speaks HTTP (Starlette,
uvicorn); each API is known in its wire module alone: no module outside `sim/wire/` names an API's path,
stream event type or wire field, or asks which API it has, and only the loop's clients import an API's
module; and the layout page draws every package."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sim.core

CORE = Path(sim.core.__file__).parent
SIM = CORE.parent
WIRE = SIM / "wire"
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
    root = SIM
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
    assert {"sim.core", "sim.wire", "sim.host", "sim.cassette", "sim.scenario", "sim.fuzz"} <= set(graph)


FRONT_ENDS = {"sim.cli", "sim.pytest_plugin"}


def test_front_ends_sit_above_everything_and_reports_take_plain_data() -> None:
    """Nothing imports the command line or the pytest plugin, and neither imports the other (the plugin's
    pages are `sim.pages`, beside the reports); the report pages import nothing of sim but core: the front
    ends turn results into pages."""
    graph = package_imports()
    above = {unit: sorted(others & FRONT_ENDS) for unit, others in graph.items() if unit not in FRONT_ENDS}
    assert {unit: found for unit, found in above.items() if found} == {}
    assert "sim.cli" not in graph["sim.pytest_plugin"]
    assert "sim.pytest_plugin" not in graph["sim.cli"]
    assert graph["sim.reports"] <= {"sim.core"}
    assert "sim.cli" in graph and "sim.pytest_plugin" in graph


def test_the_wire_and_the_host_sit_on_core() -> None:
    """The wire package knows the APIs and nothing of sim but core; the host serves any answerer and imports
    only core and the wire (answerers import the host, never the other way); the adapters (the loop's
    clients: over the SDK, or asking an answerer directly) import no answerer, no reader of recordings, no
    front end."""
    graph = package_imports()
    assert graph["sim.wire"] == {"sim.core"}
    assert graph["sim.host"] <= {"sim.core", "sim.wire"}
    assert graph["sim.adapters"] <= {"sim.core", "sim.wire", "sim.host"}


HTTP_SERVING = {"starlette", "uvicorn"}


def test_only_the_host_imports_starlette_or_uvicorn() -> None:
    """Serving HTTP is written once: every import of Starlette or uvicorn, lazy ones included, is in
    `sim/host/`."""
    importers = {
        _relative(path): sorted(found)
        for path in python_files()
        if (found := {name.split(".")[0] for name in imported_top_levels(path)} & HTTP_SERVING)
    }
    assert importers and all(path.startswith("sim/host/") for path in importers), importers


def test_the_package_users_import_first_imports_on_its_own() -> None:
    """In a fresh interpreter, as a user's `from sim.scenario.answerer import scenario_host` does: a circle
    between two packages fails only when the wrong one is imported first (the walk above finds any circle)."""
    done = subprocess.run(
        [sys.executable, "-c", "from sim.scenario.answerer import scenario_host"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def python_files(root: Path = SIM) -> list[Path]:
    return sorted(root.rglob("*.py"))


def _relative(path: Path, root: Path = SIM) -> str:
    return path.relative_to(root.parent).as_posix()


def outside_the_wire(root: Path = SIM) -> Iterator[tuple[str, ast.Module]]:
    """Each module of `sim` outside `sim/wire/`, by its path from the repository (`sim/cassette/audit.py`)."""
    for path in python_files(root):
        if (root / "wire") not in path.parents:
            yield _relative(path, root), ast.parse(path.read_text(), str(path))


# What names an API. A path: an endpoint of either API (with or without `/v1`, a stored response's
# `/responses/{id}`), or any endpoint under `/v1/`.
API_PATH = re.compile(r"/chat/completions|/responses(?:/|\?|$)|/v1/\w")
# A stream event type: the Responses API's `response.*` events, Chat's `chat.completion.chunk` (and the
# `chat.completion` object).
EVENT_TYPE = re.compile(
    r"\bresponse\.(?:created|queued|in_progress|completed|failed|incomplete|output_item|output_text"
    r"|content_part|function_call_arguments|reasoning\w*|refusal)\b|\bchat\.completion(?:\.chunk)?\b"
)
# A wire field: a request's, an item's or a reply's key (or an item type) that only an OpenAI API's body
# holds. Words that are also sim's own vocabulary (`tool_calls`, `arguments`, `content`, `usage`, `status`,
# `reasoning`, `refusal`, `input`, `output`, the sim: block's `max_tokens`) are left out: they would only
# prove that sim and the API use the same English.
WIRE_FIELDS = frozenset(
    {
        # requests
        "previous_response_id",
        "tool_choice",
        "parallel_tool_calls",
        "max_output_tokens",
        "max_completion_tokens",
        "stream_options",
        "include_usage",
        "response_format",
        "reasoning_effort",
        "top_logprobs",
        "instructions",
        "tool_call_id",
        "call_id",
        # items and content types
        "function_call",
        "function_call_output",
        "input_text",
        "output_text",
        "summary_text",
        "encrypted_content",
        # replies and streams
        "choices",
        "delta",
        "finish_reason",
        "incomplete_details",
        "system_fingerprint",
        "prompt_tokens",
        "completion_tokens",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cached_tokens",
    }
)

# Text for people may name the API's words (as docstrings and comments do, which are not string literals
# the code uses): the keyword arguments that hold it.
PROSE_KEYWORDS = frozenset({"help", "description"})


def _prose(tree: ast.Module) -> set[int]:
    """The string constants of `tree` that are text for people: docstrings (any string statement, so also
    an attribute's docstring) and the values of `help=` and `description=`."""
    prose: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant | ast.JoinedStr):
            text: ast.expr | None = node.value
        else:
            text = node.value if isinstance(node, ast.keyword) and node.arg in PROSE_KEYWORDS else None
        if text is not None:
            prose.update(id(inner) for inner in ast.walk(text))
    return prose


def wire_words(tree: ast.Module) -> set[str]:
    """The string literals in `tree`'s code that name an API path, a stream event type or a wire field."""
    prose = _prose(tree)
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and (API_PATH.search(node.value) or EVENT_TYPE.search(node.value) or node.value in WIRE_FIELDS)
    }


# Modules outside the wire that may name a wire word, each with why it is not the API's knowledge.
WIRE_WORDS_ALLOWED: dict[tuple[str, str], str] = {
    ("sim/cassette/session.py", "max_completion_tokens"): (
        "the sim: block's own key for its reply limit before it was named max_tokens: files written then say"
        " it, for either API, and still load"
    ),
    ("sim/fuzz/strategies.py", "finish_reason"): (
        "a scenario reply's key (sim/scenario/schema.py: Reply.finish_reason), drawn as a scenario file says"
        " it"
    ),
    ("sim/cassette/convert.py", "finish_reason"): (
        "a scenario reply's key (sim/scenario/schema.py: Reply.finish_reason): convert writes scenario files"
    ),
    ("sim/scenario/structured.py", "response_format"): (
        "a scenario's key (sim/scenario/schema.py: Scenario.response_format), where a load error points"
    ),
}


def wire_words_outside_the_wire(root: Path = SIM) -> dict[tuple[str, str], str]:
    """Each (module, literal) outside `sim/wire/` that names an API path, event type or wire field."""
    return {
        (module, word): word for module, tree in outside_the_wire(root) for word in sorted(wire_words(tree))
    }


def test_only_the_wire_names_api_paths_event_types_and_wire_fields() -> None:
    """Adding a request field or an output item type touches one wire module: no code outside `sim/wire/`
    names an API's path, a stream event type or a wire field (docstrings and help texts may)."""
    found = wire_words_outside_the_wire()
    assert sorted(set(found) - set(WIRE_WORDS_ALLOWED)) == []
    assert sorted(set(WIRE_WORDS_ALLOWED) - set(found)) == [], "an allowed entry no longer applies: drop it"


def test_the_wire_modules_name_what_the_scan_looks_for() -> None:
    """The scan finds what it must where it belongs: each API's paths, events and fields in its package."""
    chat, responses = (
        set().union(*(wire_words(ast.parse(path.read_text())) for path in (WIRE / api).glob("*.py")))
        for api in ("chat", "responses")
    )
    assert {"/chat/completions", "/v1/chat/completions", "chat.completion.chunk", "finish_reason"} <= chat
    assert {"/responses", "response.output_text.delta", "previous_response_id", "function_call_output"} <= (
        responses
    )


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('PATH = "/chat/completions"', True),
        ('url = f"{base}/v1/responses"', True),
        ('stored = "/responses/" + response_id', True),
        ('kind = "response.output_text.delta"', True),
        ('body.get("previous_response_id")', True),
        ('{"tool_choice": "auto"}', True),
        ('match event:\n    case {"type": "chat.completion.chunk"}:\n        pass', True),
        ('"""Posts to /chat/completions, reading finish_reason."""', False),
        ("# the /v1/responses endpoint", False),
        ('typer.Option(help="Serve /v1/chat/completions.")', False),
        ('Field(description="the tool_choice it asks")', False),
        ('{"requests": [], "responses": []}', False),  # vcrpy's cassette, not the API
        ('base_url = "http://127.0.0.1:8000/v1"', False),  # a base URL, not an endpoint
        ('"tool_calls"', False),  # sim's word too
    ],
)
def test_the_scan_tells_code_from_prose(line: str, named: bool) -> None:
    assert bool(wire_words(ast.parse(line))) is named


def test_a_path_added_outside_the_wire_is_found(tmp_path: Path) -> None:
    """Someone adds `"/chat/completions"` to the audit: the scan names the module and the path."""
    copy = tmp_path / "sim"
    shutil.copytree(SIM, copy, ignore=shutil.ignore_patterns("__pycache__"))
    audit = copy / "cassette" / "audit.py"
    audit.write_text(audit.read_text() + '\nCHAT_PATH = "/chat/completions"\n')
    found = set(wire_words_outside_the_wire(copy)) - set(wire_words_outside_the_wire())
    assert found == {("sim/cassette/audit.py", "/chat/completions")}


API_NAMES = frozenset({"chat", "responses"})


def _names_an_api(node: ast.expr) -> bool:
    """`Api.chat`, `Api.responses` anywhere in `node`, or `"chat"`, `"responses"` as it or in a literal
    tuple, list or set."""
    if any(
        isinstance(inner, ast.Attribute)
        and inner.attr in API_NAMES
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "Api"
        for inner in ast.walk(node)
    ):
        return True
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return any(isinstance(e, ast.Constant) and e.value in API_NAMES for e in elements)


def api_questions(tree: ast.Module) -> set[str]:
    """Where `tree` asks which API it has: a comparison with an API (`api is Api.responses`, `name ==
    "chat"`), a `case` of one, or a table keyed by `Api` members, each as its source."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_names_an_api(e) for e in [node.left, *node.comparators]):
            found.add(ast.unparse(node))
        elif isinstance(node, ast.match_case) and any(
            isinstance(p, ast.MatchValue) and _names_an_api(p.value) for p in ast.walk(node.pattern)
        ):
            found.add(f"case {ast.unparse(node.pattern)}")
        elif isinstance(node, ast.Dict) and any(
            key is not None and isinstance(key, ast.Attribute) and _names_an_api(key) for key in node.keys
        ):
            found.add(ast.unparse(node))
    return found


# Modules outside the wire that may ask which API they have, each with why.
API_QUESTIONS_ALLOWED: dict[tuple[str, str], str] = {
    ("sim/adapters/connect.py", "api is Api.responses"): (
        "the one place that turns --api/OPENAI_API into a client: each SDK adapter is one API's client"
        " (over its wire module), and connect_model chooses between them (the SDK loads only here)"
    ),
    ("sim/cli/files.py", "api is not Api.responses"): (
        "option parsing: sim play --chain applies only with --api responses, refused before anything runs"
    ),
}


def test_no_module_outside_the_wire_asks_which_api_it_has() -> None:
    """No `if chat ... else responses` outside the wire: generic code asks the API's `Codec` (or the
    server side it makes), which gives each API's own answer."""
    found = {(module, asked) for module, tree in outside_the_wire() for asked in api_questions(tree)}
    assert sorted(found - set(API_QUESTIONS_ALLOWED)) == []
    assert sorted(set(API_QUESTIONS_ALLOWED) - found) == [], "an allowed entry no longer applies: drop it"


@pytest.mark.parametrize(
    ("source", "asks"),
    [
        ("if api is Api.chat: pass", True),
        ("x = 1 if codec.api == Api.responses else 2", True),
        ('if name in ("chat", "responses"): pass', True),
        ('if codec.api.value != "responses": pass', True),
        ("if codec is CODECS[Api.responses]: pass", True),
        ("match api:\n    case Api.chat:\n        pass", True),
        ('match name:\n    case "responses":\n        pass', True),
        ("HANDLERS = {Api.chat: one, Api.responses: other}", True),
        ("api: Api = Api.chat", False),  # a default, not a question
        ('if len(cassette["responses"]) == 0: pass', False),  # vcrpy's cassette
        ('{"requests": [], "responses": []}', False),
    ],
)
def test_the_scan_finds_questions_of_the_api(source: str, asks: bool) -> None:
    assert bool(api_questions(ast.parse(source))) is asks


def test_the_layout_page_draws_and_lists_every_package() -> None:
    """`docs/layout.md` stays the map: its diagram names each package of sim (`sim.wire`), and its listing
    each package's folder or module (`sim/wire/`, `sim/player.py`)."""
    page = (SIM.parent / "docs" / "layout.md").read_text()
    diagrams = re.findall(r"^```mermaid\n(.*?)^```", page, flags=re.S | re.M)
    assert len(diagrams) == 1
    listing = page.split("## Packages", 1)[1]
    units = set(package_imports()) - {"sim"}
    assert sorted(unit for unit in units if unit not in diagrams[0]) == []
    paths = {unit: unit.replace(".", "/") + ("/" if (SIM.parent / unit.replace(".", "/")).is_dir() else ".py")
             for unit in units}  # fmt: skip
    assert sorted(path for path in paths.values() if path not in listing) == []


API_PACKAGES = ("sim.wire.chat", "sim.wire.responses")


def api_packages_named(names: set[str]) -> set[str]:
    """The API packages among imported module names: a package itself or any module in it."""
    return {
        package
        for package in API_PACKAGES
        for name in names
        if name == package or name.startswith(f"{package}.")
    }


def test_an_api_package_is_named_by_itself_or_any_of_its_modules() -> None:
    named = {"sim.wire.chat.client", "sim.wire.responses", "sim.wire.chatter", "sim.wire.registry"}
    assert api_packages_named(named) == {"sim.wire.chat", "sim.wire.responses"}
    assert api_packages_named({"sim.wire.requests", "sim.wire"}) == set()


def test_only_the_loops_clients_import_an_api_module() -> None:
    """Outside `sim/wire/`, an API's module is imported only by the loop's clients in `sim/adapters/` (each
    SDK adapter is one API's client; `AnswererModel` asks as a Chat client would). Everything else asks an
    API through the registry (`sim.wire.CODECS`, `codec_for`), so that a third API is its module and its
    `Codec`: the host serves every API's paths through `Codec.server`, never by name."""
    importers = {}
    for path in python_files():
        module = _relative(path)
        if module.startswith(("sim/wire/", "sim/adapters/")):
            continue
        tree = ast.parse(path.read_text(), str(path))
        named = imported_top_levels(path) | {
            f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "sim.wire"
            for alias in node.names
        }
        if found := api_packages_named(named):
            importers[module] = sorted(found)
    assert importers == {}
