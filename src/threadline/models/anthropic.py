"""`AnthropicModel`: Anthropic's Messages API through the official `anthropic` SDK (extra `anthropic`).

Request mapping:
- the standing system prompt and the running agent's instructions go in the top-level `system`;
- a mid-conversation system prompt becomes a `system` message where the model accepts one (models
  whose profile says so), moved forward past user turns to just before the next assistant turn,
  with a minimal user turn before it when none precedes it; elsewhere it is rendered (by the
  shared renderer) as a `<system>`-tagged text block in the same user message;
- user content: text, images and PDFs (URL or bytes), plain-text documents, and Anthropic file
  ids; audio and video are refused before sending; a `CachePoint` puts `cache_control` on the block
  before it;
- tool results go as `tool_result` blocks first in the user turn (the API wants them before any
  text), a list result as one text block per item, a `failed` / `retried` one as its error text
  with `is_error`; calls go as `tool_use` blocks whose cut-off arguments go as
  `{"INVALID_JSON": "<raw>"}`; built-in tool parts are passed back untouched (a server tool call
  whose result is missing, as after a cut-off stream, is left out);
- thinking from Anthropic is sent back with its signature (the API requires it); thinking without
  one, or from another provider, is carried as `<assistant_thinking>` text at the end of the user
  turn before it; an empty text prompt is left out (the API refuses empty text blocks);
- consecutive turns of one role are merged (the API wants them alternating);
- prompt caching: `anthropic_cache*` and the unified `cache` put cache breakpoints on tools,
  instructions and the conversation (`_anthropic_cache` lists the rules);
- the unified `thinking` goes as Claude's `thinking` object and `output_config.effort`, and
  `anthropic_thinking` / `anthropic_effort` as given (`_anthropic_thinking` lists the rules: budgets,
  efforts, refusals, sampling settings on the newest models, no forced tool call while thinking);
- a tool with an Anthropic definition (`MemoryTool`'s `memory`) goes as that provider-defined tool,
  with the beta header it needs; a tool with `strict=True` uses Anthropic's strict tool use (its
  schema rewritten by the SDK's `transform_schema`); schema titles are dropped.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from threadline.exceptions import UserError
from threadline.messages import (
    BinaryContent,
    CachePoint,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.messages.wire import JSONObject, enc_hook
from threadline.models._anthropic_answer import AnthropicStream, response_of
from threadline.models._anthropic_cache import apply_cache, translated_cache
from threadline.models._anthropic_thinking import (
    AnthropicModelSettings,
    anthropic_thinking_keys,
    check_thinking,
    effort_of,
    max_tokens_for,
    thinking_of,
    thinking_type,
)
from threadline.models._base import ModelProfile, ModelRequestParameters, ModelSettings, ThinkingLevel, ToolDefinition
from threadline.models._lifecycle import ClientLifecycle
from threadline.models._profile import ModelProfileSpec, merge_profile, resolve_profile
from threadline.models._provider import ProviderModel, binary_base64, env_key, require_extra, tool_result_text
from threadline.models._render import standing_prompt_count
from threadline.models._schema_walk import json_type_of, walk_schema
from threadline.models._stream import StreamedResponse
from threadline.models._thinking import resolve_thinking

if TYPE_CHECKING:
    import httpx

    from threadline.memory.anthropic import MemoryTool

__all__ = ['INLINE_SYSTEM_PROMPT_MODELS', 'AnthropicModel', 'AnthropicModelSettings', 'AnthropicProvider', 'MemoryTool']

_TOOL_BETAS = {'memory_20250818': 'context-management-2025-06-27'}
"""Anthropic tool types offered only behind a beta header (`MemoryTool`'s `memory`), by type."""

INLINE_SYSTEM_PROMPT_MODELS = (
    'claude-fable-5',
    'claude-mythos-5',
    'claude-opus-4-8',
    'claude-opus-5',
    'claude-sonnet-5-5',
    'claude-haiku-5-5',
)


class AnthropicProvider(ClientLifecycle):
    """Where to reach the Anthropic API: `base_url`, `api_key` (default `ANTHROPIC_API_KEY`), an
    optional `httpx.AsyncClient`, and the SDK's retries. `async with provider:` closes the client
    it made when the block ends (see `threadline.models._lifecycle`)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_retries: int = 2,
    ) -> None:
        anthropic = require_extra('anthropic', 'anthropic')
        key, url = env_key(api_key, 'ANTHROPIC_API_KEY', 'anthropic'), base_url or os.environ.get('ANTHROPIC_BASE_URL')
        self._open_client(
            partial(
                anthropic.AsyncAnthropic, api_key=key, base_url=url, http_client=http_client, max_retries=max_retries
            ),
            owned=http_client is None,
        )


STRUCTURED_OUTPUT_MODELS = (
    'claude-fable-5',
    'claude-mythos-5',
    'claude-haiku-4-5',
    'claude-sonnet-4-5',
    'claude-sonnet-4-6',
    'claude-opus-4-1',
    'claude-opus-4-5',
    'claude-opus-4-6',
    'claude-opus-4-7',
    'claude-opus-4-8',
    'claude-opus-5',
    'claude-sonnet-5',
    'claude-haiku-5-5',
)
"""Models with structured outputs (`NativeOutput`), as pydantic-ai 2.62's profiles list them."""


class AnthropicModel(ProviderModel[AnthropicProvider]):
    """A Messages API model (see the module docstring for how a history is mapped)."""

    provider_name = 'anthropic'
    unsupported_settings = frozenset({'frequency_penalty', 'logit_bias', 'presence_penalty', 'seed'})

    def __init__(
        self, model_name: str, *, provider: AnthropicProvider | None = None, profile: ModelProfileSpec | None = None
    ) -> None:
        inline = model_name.startswith(INLINE_SYSTEM_PROMPT_MODELS)
        native = model_name.startswith(STRUCTURED_OUTPUT_MODELS)
        default = ModelProfile(supports_inline_system_prompts=inline, supports_json_schema_output=native)
        default = merge_profile(default, anthropic_thinking_keys(model_name))
        super().__init__(model_name, provider, resolve_profile(default, profile))

    def _default_provider(self) -> AnthropicProvider:
        return AnthropicProvider()

    def _headers(self, body: JSONObject) -> dict[str, str]:
        tools = body.get('tools')
        kinds = {tool.get('type') for tool in tools if isinstance(tool, Mapping)} if isinstance(tools, list) else set()
        betas = sorted({_TOOL_BETAS[kind] for kind in kinds if isinstance(kind, str) and kind in _TOOL_BETAS})
        if betas:
            return {'anthropic-beta': ','.join(betas)}
        return {}

    # -- requests -------------------------------------------------------------------------------
    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> JSONObject:
        """The Messages API request body for a (rendered) history: what `request` sends."""
        settings = settings or {}
        thinking = resolve_thinking(settings, params, self.profile)
        sent = thinking_of(settings, thinking, self.profile)
        effort = effort_of(settings, thinking, self.profile)
        check_thinking(self._model_name, sent, effort, self.profile)
        system, turns = self.map_messages(messages, params)
        body: JSONObject = {
            'model': self._model_name,
            'max_tokens': max_tokens_for(settings, sent, 4096),
            'messages': turns,
        }
        if system:
            body['system'] = system
        tools = [*params.function_tools, *params.output_tools]
        if tools:
            body['tools'] = [_tool(t) for t in tools]
            choice: JSONObject = {
                'type': 'auto' if params.allow_text_output or not self._may_force(settings, thinking) else 'any'
            }
            if 'parallel_tool_calls' in settings:
                choice['disable_parallel_tool_use'] = not settings['parallel_tool_calls']
            if len(choice) > 1 or choice['type'] == 'any':
                body['tool_choice'] = choice
        if sent is not None:
            body['thinking'] = sent
        if params.output_mode == 'native' and params.output_object is not None:
            if params.output_object.strict is False:
                raise UserError(
                    'Setting `strict=False` on `output_type=NativeOutput(...)` is not allowed for Anthropic models.'
                )
            from anthropic import transform_schema

            schema = transform_schema(walk_schema(params.output_object.json_schema, _strict_node))
            body['output_config'] = {'format': {'type': 'json_schema', 'schema': schema}}
        if effort is not None:
            body['output_config'] = {**body.get('output_config', {}), 'effort': effort}  # type: ignore[dict-item]
        self._sampling(body, settings)
        apply_cache(body, translated_cache(settings))
        if 'stop_sequences' in settings:
            body['stop_sequences'] = settings['stop_sequences']
        return body

    def structured_output_mode(self, settings: ModelSettings | None, params: ModelRequestParameters) -> str:
        """JSON text instead of an output tool while Claude thinks by budget, which refuses the
        forced tool call an output tool needs: `'native'` where the model takes JSON schema
        output, else `'prompted'`; otherwise the default rule (`Model.structured_output_mode`)."""
        thinking = resolve_thinking(settings, params, self.profile)
        if params.output_tools and thinking_type(settings or {}, thinking, self.profile) == 'enabled':
            return 'native' if self.profile.supports_json_schema_output else 'prompted'
        return super().structured_output_mode(settings, params)

    def _may_force(self, settings: ModelSettings, thinking: ThinkingLevel | None) -> bool:
        """Whether the tool call output tools need may be forced (`tool_choice: any`): not by a
        request that thinks, nor of a model that refuses forcing (see `_anthropic_thinking`)."""
        thinks = thinking_type(settings, thinking, self.profile) is not None
        return bool(self.profile.get('supports_forced_tool_choice', True)) and not thinks

    def _sampling(self, body: JSONObject, settings: ModelSettings) -> None:
        """Temperature, top_p and top_k, dropped with a warning on models that refuse them."""
        given = [key for key in ('temperature', 'top_p', 'top_k') if key in settings]
        if given and self.profile.get('anthropic_disallows_sampling_settings', False):
            warnings.warn(
                f'Sampling parameters {given} are not supported by {self._model_name!r}. '
                'These settings will be ignored.',
                UserWarning,
                stacklevel=4,
            )
            return
        for key in given:
            body[key] = settings[key]

    def map_messages(
        self, messages: Sequence[ModelMessage], params: ModelRequestParameters
    ) -> tuple[list[JSONObject], list[JSONObject]]:
        standing = standing_prompt_count(messages)
        system: list[JSONObject] = []
        turns: list[_Turn] = []
        first_request = True
        for index, message in enumerate(messages):
            if isinstance(message, ModelRequest):
                blocks: list[JSONObject] = []
                for j, part in enumerate(message.parts):
                    if isinstance(part, SystemPromptPart):
                        if first_request and j < standing:
                            system.append({'type': 'text', 'text': part.content})
                        else:
                            _add(turns, 'user', blocks)
                            blocks = []
                            turns.append(('system', [{'type': 'text', 'text': part.content}]))
                    elif isinstance(part, UserPromptPart):
                        blocks.extend(self._user_blocks(part, index, j))
                    elif isinstance(part, ToolReturnPart):
                        result = _tool_result(part)
                        if part.files:  # text and files in their order, as blocks (the API takes both)
                            items = part.content_items(mode='str', wrap_if_error=False)
                            result['content'] = self._user_blocks(UserPromptPart(items), index, j) or ''
                        blocks.insert(sum(b['type'] == 'tool_result' for b in blocks), result)
                _add(turns, 'user', blocks)
                first_request = False
            else:
                # Thinking the API cannot take back is carried, as text, at the end of the user
                # turn before it (an assistant turn holds only what this model produced).
                carried: list[JSONObject] = []
                answer = self._assistant_blocks(message, carried)
                _add(turns, 'user', carried)
                _add(turns, 'assistant', answer)
        if params.instructions:
            system.append({'type': 'text', 'text': params.instructions})
        return system, [{'role': role, 'content': blocks} for role, blocks in _place_system_turns(turns)]

    def _user_blocks(self, part: UserPromptPart, index: int, j: int) -> list[JSONObject]:
        if isinstance(part.content, str):
            # The API refuses an empty text block.
            return [{'type': 'text', 'text': part.content}] if part.content else []
        blocks: list[JSONObject] = []
        for item in part.content:
            if isinstance(item, str):
                blocks.append({'type': 'text', 'text': item})
            elif isinstance(item, TextContent):
                blocks.append({'type': 'text', 'text': item.content})
            elif isinstance(item, CachePoint):
                if not blocks:
                    raise UserError(f'messages[{index}].parts[{j}]: a CachePoint needs content before it')
                blocks[-1]['cache_control'] = {'type': 'ephemeral', 'ttl': item.ttl}
            elif isinstance(item, ImageUrl):
                blocks.append({'type': 'image', 'source': {'type': 'url', 'url': item.url}})
            elif isinstance(item, DocumentUrl) and item.media_type == 'application/pdf':
                blocks.append({'type': 'document', 'source': {'type': 'url', 'url': item.url}})
            elif isinstance(item, BinaryContent) and item.is_image:
                blocks.append(
                    {
                        'type': 'image',
                        'source': {'type': 'base64', 'media_type': item.media_type, 'data': binary_base64(item)},
                    }
                )
            elif isinstance(item, BinaryContent) and item.media_type == 'application/pdf':
                blocks.append(
                    {
                        'type': 'document',
                        'source': {'type': 'base64', 'media_type': 'application/pdf', 'data': binary_base64(item)},
                    }
                )
            elif isinstance(item, BinaryContent) and item.media_type == 'text/plain':
                blocks.append(
                    {
                        'type': 'document',
                        'source': {'type': 'text', 'media_type': 'text/plain', 'data': item.data.decode()},
                    }
                )
            elif isinstance(item, UploadedFile) and item.provider_name == 'anthropic':
                kind = 'image' if (item.media_type or '').startswith('image/') else 'document'
                blocks.append({'type': kind, 'source': {'type': 'file', 'file_id': item.file_id}})
            else:
                raise UserError(
                    f'messages[{index}].parts[{j}]: the anthropic provider cannot take {type(item).__name__}'
                    f'{" (" + str(getattr(item, "media_type", "")) + ")" if getattr(item, "media_type", None) else ""}; '
                    'convert it, or use a provider that accepts it'
                )
        return blocks

    def _assistant_blocks(self, message: ModelResponse, carried: list[JSONObject]) -> list[JSONObject]:
        """The response's blocks; thinking the API cannot take back goes to `carried` as text."""
        # A server tool call goes back only with its result: one cut off without it would be rejected.
        answered = {p.tool_call_id for p in message.parts if isinstance(p, NativeToolReturnPart)}
        blocks: list[JSONObject] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.content:
                blocks.append({'type': 'text', 'text': part.content})
            elif isinstance(part, ThinkingPart):
                if _native_thinking(part, message):
                    blocks.append({'type': 'thinking', 'thinking': part.content, 'signature': part.signature})
                elif part.content:
                    text = f'<assistant_thinking>\n{part.content}\n</assistant_thinking>'
                    carried.append({'type': 'text', 'text': text})
            elif isinstance(part, ToolCallPart):
                blocks.append(
                    {'type': 'tool_use', 'id': part.tool_call_id, 'name': part.tool_name, 'input': part.args_as_dict()}
                )
            elif (
                isinstance(part, NativeToolCallPart)
                and part.provider_name == 'anthropic'
                and part.tool_call_id in answered
            ):
                blocks.append(
                    {
                        'type': 'server_tool_use',
                        'id': part.tool_call_id,
                        'name': part.tool_name,
                        'input': part.args_as_dict(),
                    }
                )
            elif (
                isinstance(part, NativeToolReturnPart)
                and part.provider_name == 'anthropic'
                and isinstance(part.content, dict)
            ):
                blocks.append(dict(part.content))
        return blocks

    def _endpoint(self) -> tuple[Any, str, Any, Any]:
        anthropic = require_extra('anthropic', 'anthropic')
        from anthropic.types import Message, RawMessageStreamEvent

        return anthropic, '/v1/messages', Message, RawMessageStreamEvent

    def _streamed(self, stream: Any) -> StreamedResponse:
        return AnthropicStream(self._model_name, stream)

    def _response(self, message: Any) -> ModelResponse:
        return response_of(message)


_Turn = tuple[str, list[JSONObject]]
"""A turn being mapped: its role ('system' for a mid-conversation system message, until it is
placed) and its blocks."""


def _tool(tool: ToolDefinition) -> JSONObject:
    """A tool definition: a provider-defined one as it is; with `strict=True`, Anthropic's strict
    tool use, the schema rewritten to fit by the SDK's own `transform_schema` (a single-value
    `const` first becoming a typed one-value `enum`, which it keeps); otherwise as given, without
    titles."""
    if native := tool.provider_definitions.get('anthropic'):
        return native
    definition: JSONObject = {'name': tool.name, 'description': tool.description or ''}
    if tool.strict:
        from anthropic import transform_schema

        definition['input_schema'] = transform_schema(walk_schema(tool.parameters_json_schema, _strict_node))
        definition['strict'] = True
    else:
        definition['input_schema'] = walk_schema(tool.parameters_json_schema, _tidy_node)
    return definition


def _tidy_node(schema: JSONObject) -> JSONObject:
    """Without `title` and `$schema`: they cost tokens and tell the model nothing the tool's name
    does not (a property named `title` is a key of `properties`, never popped here)."""
    schema.pop('title', None)
    schema.pop('$schema', None)
    return schema


def _strict_node(schema: JSONObject) -> JSONObject:
    """Tidied, and a single-value `const` as a typed one-value `enum` (which `transform_schema` keeps)."""
    _tidy_node(schema)
    const = schema.get('const')
    kind = json_type_of(const)
    if kind is not None:
        del schema['const']
        schema.setdefault('type', kind)
        schema['enum'] = [const]
    return schema


def _tool_result(part: ToolReturnPart) -> JSONObject:
    """A `tool_result` block: a list result as one text block per item, a failed or retried one as
    its error text with `is_error`."""
    result: JSONObject = {'type': 'tool_result', 'tool_use_id': part.tool_call_id}
    content = part.content
    if part.outcome in ('failed', 'retried'):
        result['content'] = [{'type': 'text', 'text': content if isinstance(content, str) else _json(content)}]
        result['is_error'] = True
    elif isinstance(content, list):
        result['content'] = [{'type': 'text', 'text': v if isinstance(v, str) else _json(v)} for v in content]
    else:
        result['content'] = tool_result_text(part)
    return result


def _json(value: object) -> str:

    return msgspec.json.encode(value, enc_hook=enc_hook).decode()


def _native_thinking(part: ThinkingPart, message: ModelResponse) -> bool:
    """Whether the API takes this thinking back as a thinking block: signed, and from Anthropic."""
    return bool(part.signature) and (part.provider_name or message.provider_name) in ('anthropic', None)


def _add(turns: list[_Turn], role: str, blocks: list[JSONObject]) -> None:
    """Append a turn, merged into the previous one when it has the same role."""
    if not blocks:
        return
    if turns and turns[-1][0] == role:
        turns[-1][1].extend(blocks)
    else:
        turns.append((role, list(blocks)))


def _place_system_turns(turns: list[_Turn]) -> list[_Turn]:
    """System messages slide forward past user turns to just before the next assistant turn; one
    with no user turn before it gets a minimal user turn to anchor it."""
    if all(role != 'system' for role, _ in turns):
        return turns  # the usual case: nothing to move, and no copy of a long history
    out: list[_Turn] = []
    pending: list[_Turn] = []
    for turn in turns:
        if turn[0] == 'system':
            pending.append(turn)
        elif turn[0] == 'user':
            _add(out, 'user', turn[1])
        else:
            if pending:
                if not out or out[-1][0] != 'user':
                    out.append(('user', [{'type': 'text', 'text': '(continue)'}]))
                out.extend(pending)
                pending = []
            out.append(turn)
    if pending:
        if not out or out[-1][0] != 'user':
            out.append(('user', [{'type': 'text', 'text': '(continue)'}]))
        out.extend(pending)
    return out


def __getattr__(name: str) -> Any:
    # `MemoryTool` lives in `threadline.memory`, which comes after `models` in the package order;
    # the documents import it from here, so it resolves lazily (tests/test_architecture.py lists it).
    if name == 'MemoryTool':
        from threadline.memory.anthropic import MemoryTool

        return MemoryTool
    raise AttributeError(name)
