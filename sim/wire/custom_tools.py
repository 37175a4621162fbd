"""Custom tools as both APIs take them: a tool's input `format` (free `text`, or a `grammar` in `lark` or
`regex` syntax; Chat nests `{custom: {name, format: {type: grammar, grammar: {syntax, definition}}}}`, the
Responses API writes `{name, format: {type: grammar, syntax, definition}}`), its grammar read by `lark` or
`regex` and refused where it cannot be read, and a call's input judged against it.

A hostile grammar must not hang whoever reads it: an input is matched by the `regex` package, or parsed by
`lark` (its terminals by `regex`), under a time limit (an input that cannot be judged in time is not held
against the script); a grammar longer than `GRAMMAR_CHARS`, or whose counted repeats `regex` would write
out past `MAX_EXPANSION` copies, is not read at all (sim's own limits, not the API's)."""

from __future__ import annotations

import functools
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from re import _constants as re_constants
from re import _parser as re_parser
from types import FrameType
from typing import Any

import lark
import regex

from sim.core.model import InputGrammar, ModelReply

CUSTOM = "custom"
"""A tool's `type`, and a call's, for a custom tool."""
GRAMMAR_CHARS = 100_000
"""The longest grammar definition sim reads (its own limit, not the API's)."""
MATCH_SECONDS = 0.1
"""How long one regular expression may take to match one input."""
INPUT_CHARS = 100_000
"""The longest input a `lark` grammar is asked to parse (Earley parsing is cubic at worst)."""
PARSE_SECONDS = 1.0
"""How long a `lark` grammar may take to parse one input."""
READ_SECONDS = 8.0
"""How long reading one grammar may take (`lark` builds an Earley grammar in time that grows with the cube
of its rules, and inlines terminals that name each other, doubling at each step)."""
REQUEST_READ_SECONDS = 10.0
"""How long reading all the grammars one request offers may take."""
_IMPORT = re.compile(
    r"^[ \t]*%import\b(?![ \t]+common\.\w+(?:[ \t]*->[ \t]*\w+)?[ \t]*(?://[^\n]*)?\r?$)", re.MULTILINE
)
"""An `%import` of anything but one name of lark's common grammar (`common.WORD.X` opens a file)."""
_DECLARE = re.compile(r"^[ \t]*%declare\b", re.MULTILINE)
"""A terminal declared without a pattern (for a custom lexer): no input could be matched against it."""


class GrammarError(ValueError):
    """A custom tool's format the API refuses (`unsimulated`: one sim cannot read), and where in the tool."""

    def __init__(self, message: str, where: str, *, unsimulated: bool = False) -> None:
        super().__init__(message)
        self.where = where
        self.unsimulated = unsimulated


def is_custom(tool: Any) -> bool:
    """Whether a request's tool (of either API) is a custom tool."""
    return isinstance(tool, dict) and tool.get("type") == CUSTOM


def _customs(tools: Any) -> list[tuple[int, dict[str, Any]]]:
    """The custom tools of a request's `tools` (JSON: a list of objects), with where each sits; one cheap
    pass, as every request is read so."""
    if not isinstance(tools, list):
        return []
    return [
        (index, tool) for index, tool in enumerate(tools) if type(tool) is dict and tool.get("type") == CUSTOM
    ]


def custom_fields(tool: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """A custom tool's own fields (`name`, `description`, `format`) and where they sit in the tool: Chat
    nests them under `custom`, the Responses API writes them flat."""
    nested = tool.get(CUSTOM)
    return (nested, f".{CUSTOM}") if isinstance(nested, Mapping) else (tool, "")


def format_from_wire(tool: Mapping[str, Any]) -> InputGrammar | None:
    """A custom tool's input grammar (None: free text), its grammar read as the model's sampler would read
    it; `GrammarError` saying what the API refuses, and where."""
    fields, prefix = custom_fields(tool)
    name = fields.get("name")
    raw = fields.get("format")
    where = f"{prefix}.format"
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or raw.get("type") not in ("text", "grammar"):
        raise GrammarError(
            "Invalid value for 'format': expected {type: 'text'} or {type: 'grammar', ...}.", where
        )
    if raw["type"] == "text":
        return None
    inner = raw.get("grammar", raw) if prefix else raw
    grammar_where = f"{where}.grammar" if prefix else where
    if not isinstance(inner, Mapping):
        raise GrammarError("Invalid type for 'grammar': expected an object.", grammar_where)
    syntax, definition = inner.get("syntax"), inner.get("definition")
    if syntax not in ("lark", "regex"):
        message = f"Invalid value: {syntax!r}. Supported values are: 'lark' and 'regex'."
        raise GrammarError(message, f"{grammar_where}.syntax")
    if not isinstance(definition, str):
        raise GrammarError("Missing required parameter: 'definition'.", f"{grammar_where}.definition")
    grammar = InputGrammar(syntax, definition)
    if len(definition) > GRAMMAR_CHARS:
        message = (f"sim reads grammars of at most {GRAMMAR_CHARS} characters; the grammar of custom tool"
                   f" {name!r} has {len(definition)}.")  # fmt: skip
        raise GrammarError(message, f"{grammar_where}.definition", unsimulated=True)
    try:
        _compiled(grammar)
    except _NotRead as error:
        message = f"sim does not read the grammar of custom tool {name!r} ({syntax}): {error}"
        raise GrammarError(message, f"{grammar_where}.definition", unsimulated=True) from None
    except _UNREADABLE as error:
        message = f"Invalid grammar for custom tool {name!r} ({syntax}): {_first_line(error)}"
        raise GrammarError(message, f"{grammar_where}.definition") from None
    return grammar


_UNREADABLE = (regex.error, lark.exceptions.LarkError, ValueError, RecursionError)
"""What reading a grammar that cannot be read raises."""


def _first_line(error: BaseException) -> str:
    said = str(error).strip()
    return said.splitlines()[0][:300] if said else type(error).__name__


def grammar_problem(grammar: InputGrammar) -> str | None:
    """Why `grammar` cannot be read (or is too large for sim to read), or None."""
    try:
        _compiled(grammar)
    except _UNREADABLE as error:
        return _first_line(error)
    return None


KEPT_CHARS = 16_384
"""Grammars up to this long are kept read by the hundred; longer ones (a read lark grammar of 100,000
characters holds some 40 MB) only the last few, so that hostile requests cannot fill the memory."""


def _compiled(grammar: InputGrammar) -> Any:
    """The grammar read once (kept as `KEPT_CHARS` says)."""
    kept = _kept_small if len(grammar.definition) <= KEPT_CHARS else _kept_large
    return kept(grammar)


def _read_grammar(grammar: InputGrammar) -> Any:
    """The grammar read: a compiled pattern, or a `lark.Lark` parser (Earley, from `start`) whose terminals
    are matched by `regex` under a time limit."""
    if grammar.syntax == "regex":
        _check_size(grammar.definition)
        return regex.compile(grammar.definition)
    if _IMPORT.search(grammar.definition):
        raise _NotRead("sim reads %import of lark's common grammar only (%import common.<NAME>)")
    if _DECLARE.search(grammar.definition):
        raise _NotRead("sim reads no %declare (a terminal without a pattern)")
    try:
        parser = _within(READ_SECONDS, _read_lark, grammar.definition)
    except _OutOfTime:
        raise _NotRead(f"reading it takes more than {READ_SECONDS:g} seconds") from None
    except re.error as error:  # lark compiles its terminals with `re`
        raise _NotRead(f"Python's re cannot read one of its terminals ({error})") from None
    except (OSError, MemoryError) as error:  # a file named by an import; a recursive pattern (?R)
        raise _NotRead(f"reading it fails ({type(error).__name__})") from None
    matcher = getattr(getattr(parser.parser, "parser", None), "term_matcher", None)
    patterns = getattr(getattr(matcher, "__self__", None), "regexps", None)
    if not isinstance(patterns, dict):  # lark's insides changed: no terminal can be matched in time
        raise ValueError("sim cannot bound the time this lark grammar's terminals take")
    for name, compiled in list(patterns.items()):
        _check_size(compiled.pattern)
        patterns[name] = _TimedPattern(regex.compile(compiled.pattern, compiled.flags & ~re.UNICODE))
    return parser


_kept_small = functools.lru_cache(maxsize=128)(_read_grammar)
_kept_large = functools.lru_cache(maxsize=4)(_read_grammar)


def _read_lark(definition: str) -> lark.Lark:
    return lark.Lark(definition, start="start", parser="earley", import_paths=[])


class _NotRead(ValueError):
    """A grammar sim will not read: reading it would take more memory or time than a judge may spend, or
    reach outside the grammar (a lark `%import` of files)."""


MAX_EXPANSION = 100_000
"""The most copies of its parts a regular expression's counted repeats may ask for (`regex` writes them
all out when it compiles: `((a{1000}){1000}){100}` would take gigabytes)."""


def _check_size(pattern: str) -> None:
    """`ValueError` when the counted repeats of `pattern` multiply past `MAX_EXPANSION`."""
    try:
        size = _expansion(re_parser.parse(pattern))
    except (
        re.error,
        RecursionError,
        OverflowError,
        ValueError,
    ):  # syntax `re` does not know: bound it crudely
        size = 1
        for low, high in re.findall(r"\{(\d*),?(\d*)\}", pattern):
            size *= max(int(low or 0), int(high or 0), 1)
            if size > MAX_EXPANSION:
                break
    if size > MAX_EXPANSION:
        raise _NotRead(f"its counted repeats ask for more than {MAX_EXPANSION} copies")


def _expansion(parsed: Any) -> int:
    """How many copies of its parts a parsed pattern's counted repeats ask for, at most."""
    total = 0
    for op, value in parsed:
        if op in (
            re_constants.MAX_REPEAT,
            re_constants.MIN_REPEAT,
            getattr(re_constants, "POSSESSIVE_REPEAT", None),
        ):
            low, high, inner = value
            copies = low if high == re_constants.MAXREPEAT else high
            total += max(int(copies), 1) * _expansion(inner)
        elif op == re_constants.SUBPATTERN:
            total += _expansion(value[-1])
        elif op == re_constants.BRANCH:
            total += sum(_expansion(branch) for branch in value[1])
        elif op in (re_constants.ASSERT, re_constants.ASSERT_NOT):
            total += _expansion(value[1])
        else:
            total += 1
        if total > MAX_EXPANSION:
            return total
    return total


class _TimedPattern:
    """A lark terminal's pattern matched by `regex` under `MATCH_SECONDS`: a terminal such as `/(a|aa)*c/`
    backtracks in C, where no Python trace function can stop it."""

    __slots__ = ("_pattern",)

    def __init__(self, pattern: Any) -> None:
        self._pattern = pattern

    def match(self, text: str, index: int = 0) -> Any:
        try:
            return self._pattern.match(text, index, timeout=MATCH_SECONDS)
        except TimeoutError:
            raise _OutOfTime from None


def lark_parser(grammar: InputGrammar) -> lark.Lark:
    """The `lark` parser of a `lark` grammar (read once), for drawing inputs from it."""
    parser: lark.Lark = _compiled(grammar)
    return parser


def input_problem(grammar: InputGrammar, text: str) -> str | None:
    """How `text` fails to be an input `grammar` generates, or None when it is one (or cannot be judged in
    time: a guarantee is only held where it can be checked)."""
    try:
        compiled = _compiled(grammar)
    except _UNREADABLE:
        return None  # refused when it was asked
    if grammar.syntax == "regex":
        try:
            matched = compiled.fullmatch(text, timeout=MATCH_SECONDS) is not None
        except TimeoutError:
            return None
        return None if matched else f"does not match the regex grammar {_shown(grammar.definition)}"
    if len(text) > INPUT_CHARS:
        return None
    try:
        _within(PARSE_SECONDS, compiled.parse, text)
    except _OutOfTime:
        return None
    except (lark.exceptions.LarkError, RecursionError) as error:
        said = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        return f"is not generated by the lark grammar ({said})"
    return None


class _OutOfTime(BaseException):
    """A parse stopped at its deadline: a BaseException, so that lark's own `except Exception` (which turns
    what it catches into a grammar error) cannot take the deadline for a fault of the grammar."""


def _within(seconds: float, parse: Callable[[str], Any], text: str) -> Any:
    """`parse(text)`, stopped after `seconds`: Earley parsing of an ambiguous grammar can take hours, and
    lark is pure Python, so a trace function that looks at the clock on every call can stop it (chaining
    any tracer already set, such as a coverage tool's)."""
    deadline = time.perf_counter() + seconds
    before = sys.gettrace()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if time.perf_counter() > deadline:
            raise _OutOfTime
        return before(frame, event, arg) if before is not None else None  # type: ignore[arg-type]

    sys.settrace(tracer)
    try:
        return parse(text)
    finally:
        sys.settrace(before)


def _shown(text: str, most: int = 60) -> str:
    return repr(text if len(text) <= most else text[:most] + "...")


def custom_grammars(tools: Any) -> dict[str, InputGrammar | None]:
    """Each well-formed custom tool a request offers (either API), by name: its grammar, or None for text."""
    found: dict[str, InputGrammar | None] = {}
    for _, tool in _customs(tools):
        name = custom_fields(tool)[0].get("name")
        if not isinstance(name, str):
            continue
        try:
            found[name] = format_from_wire(tool)
        except GrammarError:
            continue  # refused when it was asked
    return found


def custom_names(tools: Any) -> list[str]:
    """The names of the custom tools a request offers (either API)."""
    names = [custom_fields(tool)[0].get("name") for _, tool in _customs(tools)]
    return [name for name in names if isinstance(name, str)]


def refused_format(tools: Any, prefix: Sequence[str] = ("tools",)) -> GrammarError | None:
    """The first custom tool whose format the API refuses, with `where` the whole path (`tools[1]...`); the
    grammars of one request are read within `REQUEST_READ_SECONDS` (sim's own limit: each may take up to
    `READ_SECONDS`, and a request may offer many)."""
    deadline = time.perf_counter() + REQUEST_READ_SECONDS
    for index, tool in _customs(tools):
        if time.perf_counter() > deadline:
            message = f"sim reads the grammars of one request within {REQUEST_READ_SECONDS:g} seconds"
            return GrammarError(message, f"{'.'.join(prefix)}[{index}]", unsimulated=True)
        try:
            format_from_wire(tool)
        except GrammarError as error:
            where = f"{'.'.join(prefix)}[{index}]{error.where}"
            return GrammarError(str(error), where, unsimulated=error.unsimulated)
    return None


def custom_call_problem(custom: Mapping[str, InputGrammar | None], reply: ModelReply) -> str | None:
    """How `reply` calls one of the `custom` tools offered (their grammars by name) as the API never does:
    with function arguments rather than input, or with input its grammar does not generate (the last call
    of a reply cut at the token limit may be cut short)."""
    calls = reply.message.tool_calls
    for index, call in enumerate(calls):
        if call.name not in custom:
            continue
        if call.kind != CUSTOM:
            return (f"the scripted reply calls custom tool {call.name!r} (call {call.id}) with function"
                    " arguments; the API calls a custom tool with `input` text")  # fmt: skip
        grammar = custom[call.name]
        cut = reply.finish_reason == "length" and index == len(calls) - 1
        if grammar is None or cut:
            continue
        problem = input_problem(grammar, call.arguments)
        if problem is not None:
            return (f"the scripted input of custom tool {call.name!r} (call {call.id},"
                    f" {_shown(call.arguments)}) {problem}")  # fmt: skip
    return None
