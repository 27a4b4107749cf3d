"""Where an OpenAI-compatible API is reached (`OpenAIProvider`) and the JSON-schema response
format both OpenAI models send, in one module that `openai` and `openai_responses` both build on
(so `threadline.models.openai` can export the Responses model without an import cycle)."""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from threadline.messages.wire import JSONObject
from threadline.models._base import OutputObjectDefinition
from threadline.models._lifecycle import ClientLifecycle
from threadline.models._provider import env_key, require_extra
from threadline.models._strict import strict_tool_schema

if TYPE_CHECKING:
    import httpx

__all__ = ['OpenAIProvider', 'json_schema_format']


class OpenAIProvider(ClientLifecycle):
    """Where to reach an OpenAI-compatible API: `base_url` (default `OPENAI_BASE_URL` or OpenAI's),
    `api_key` (default `OPENAI_API_KEY`), an optional `httpx.AsyncClient`, and the SDK's retries.
    `async with provider:` closes the client it made when the block ends (see `_lifecycle`)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_retries: int = 2,
    ) -> None:
        openai = require_extra('openai', 'openai')
        base_url = base_url or os.environ.get('OPENAI_BASE_URL')
        key = env_key(api_key, 'OPENAI_API_KEY', 'openai')
        self._open_client(
            partial(
                openai.AsyncOpenAI, api_key=key, base_url=base_url, http_client=http_client, max_retries=max_retries
            ),
            owned=http_client is None,
        )
        self.base_url = str(self.client.base_url)


def json_schema_format(output: OutputObjectDefinition) -> JSONObject:
    """A `NativeOutput`'s JSON-schema response format (Chat Completions nests it under
    `json_schema`, the Responses API under `text.format`): the schema in strict mode's form, and
    `strict: true` when it fits, as for tools."""
    schema, strict = strict_tool_schema(output.json_schema, output.strict)
    format_: JSONObject = {'name': output.name or 'final_result', 'schema': schema}
    if output.description:
        format_['description'] = output.description
    format_['strict'] = bool(strict)  # stated either way here (unlike tools, where absent means not strict)
    return format_
