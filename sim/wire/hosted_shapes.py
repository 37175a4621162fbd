"""The items a scenario scripts for the Responses API's hosted tools, and the citations on a reply's text, as
pydantic models of the spec's shapes (sim fills each `id` left out, and `status`): loaded only when a
scenario scripts them (`sim.wire.hosted` reads them)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Source(_Shape):
    type: Literal["url"] = "url"
    url: str


class _Search(_Shape):
    type: Literal["search"]
    query: str
    queries: list[str] | None = None
    sources: list[_Source] | None = None


class _OpenPage(_Shape):
    type: Literal["open_page"]
    url: str | None = None


class _FindInPage(_Shape):
    type: Literal["find_in_page"]
    url: str
    pattern: str


class _Scripted(_Shape):
    id: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class WebSearchCall(_Scripted):
    """A web search: a query (its sources, sent where the request includes them), a page opened, or a
    pattern found in one."""

    type: Literal["web_search_call"]
    action: Annotated[_Search | _OpenPage | _FindInPage, Field(discriminator="type")]
    status: Literal["completed", "failed"] = "completed"


class _FileResult(_Shape):
    file_id: str | None = None
    filename: str | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    text: str | None = None
    attributes: dict[str, str | float | bool] | None = None


class FileSearchCall(_Scripted):
    """A file search: its queries, and its results (sent where the request includes them)."""

    type: Literal["file_search_call"]
    queries: list[str]
    results: list[_FileResult] | None = None
    status: Literal["completed", "incomplete", "failed"] = "completed"


class _Logs(_Shape):
    type: Literal["logs"]
    logs: str


class _Image(_Shape):
    type: Literal["image"]
    url: str


class CodeInterpreterCall(_Scripted):
    """Code run in a container, and what it printed or drew (sent where the request includes them)."""

    type: Literal["code_interpreter_call"]
    code: str | None = None
    container_id: Annotated[str, Field(min_length=1)] = "cntr_sim"
    outputs: list[Annotated[_Logs | _Image, Field(discriminator="type")]] | None = None
    status: Literal["completed", "incomplete", "failed"] = "completed"


class _ListedTool(_Shape):
    name: Annotated[str, Field(min_length=1)]
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    description: str | None = None
    annotations: dict[str, Any] | None = None


def _json_text(value: Any) -> Any:
    """Arguments written as a mapping are sent as the JSON text the API sends."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if isinstance(value, dict) else value


class McpListTools(_Scripted):
    """The tools an MCP server listed (or the error listing them)."""

    type: Literal["mcp_list_tools"]
    server_label: Annotated[str, Field(min_length=1)]
    tools: list[_ListedTool] = Field(default_factory=list)
    error: str | None = None


class McpCall(_Scripted):
    """A tool an MCP server ran: its arguments, and its output or error."""

    type: Literal["mcp_call"]
    server_label: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments: str = "{}"
    output: str | None = None
    error: str | None = None
    approval_request_id: str | None = None

    _arguments_text = field_validator("arguments", mode="before")(_json_text)


class McpApprovalRequest(_Scripted):
    """The model asks the client to approve a call to an MCP server's tool."""

    type: Literal["mcp_approval_request"]
    server_label: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    arguments: str = "{}"

    _arguments_text = field_validator("arguments", mode="before")(_json_text)


class ImageGenerationCall(_Scripted):
    """An image generated, as base64."""

    type: Literal["image_generation_call"]
    result: str
    status: Literal["completed", "failed"] = "completed"

    @field_validator("result")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("must be base64") from None
        return value


ScriptedHostedItem = Annotated[
    WebSearchCall | FileSearchCall | CodeInterpreterCall | McpListTools | McpCall | McpApprovalRequest
    | ImageGenerationCall,
    Field(discriminator="type"),
]  # fmt: skip
"""One item a scenario scripts for a hosted tool."""


SCRIPTED: TypeAdapter[ScriptedHostedItem] = TypeAdapter(ScriptedHostedItem)
"""Reads a scripted hosted item."""


class UrlCitation(_Shape):
    """A span of the reply's text that cites a web page."""

    type: Literal["url_citation"] = "url_citation"
    start_index: Annotated[int, Field(ge=0)]
    end_index: Annotated[int, Field(ge=0)]
    url: str
    title: str = ""


class FileCitation(_Shape):
    """A place in the reply's text that cites a file a file search found."""

    type: Literal["file_citation"]
    file_id: str
    filename: str = ""
    index: Annotated[int, Field(ge=0)]


ScriptedAnnotation = Annotated[UrlCitation | FileCitation, Field(discriminator="type")]
"""One citation a scenario scripts on its reply's text."""


ANNOTATION: TypeAdapter[ScriptedAnnotation] = TypeAdapter(ScriptedAnnotation)
"""Reads a scripted citation."""
