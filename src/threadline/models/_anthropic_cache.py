"""Prompt caching on Anthropic: the `anthropic_cache*` settings and the unified `cache` setting,
as cache breakpoints (`cache_control`) in the request body.

The rules are pydantic-ai 2.62's for the Anthropic API:
- `anthropic_cache_tool_definitions`: a breakpoint on the last tool that is not loaded on
  demand (`defer_loading`: the API refuses one there);
- `anthropic_cache_instructions`: on the last block of `system`. Threadline sends the
  instructions as one block, so the breakpoint comes after all of them; pydantic-ai places it
  after the static ones, which Threadline does not tell apart from instruction functions yet;
- `anthropic_cache`: the top-level `cache_control`, the API's automatic breakpoint, which it
  moves forward as the conversation grows;
- `anthropic_cache_messages`: on the last block of the last message that can carry one (not a
  thinking block), unless a `CachePoint` put one there; it cannot be combined with
  `anthropic_cache` (`UserError`), whose automatic breakpoint is left out when that block has
  one already (the API refuses two there with different TTLs);
- True caches for 5 minutes; `'5m'` or `'1h'` says which;
- the unified `cache` (True, a retention `'5m'`/`'30m'`/`'1h'`, or `{'retention': ...,
  'messages': bool}`) caches the instructions and tools and, unless `messages=False`, the
  conversation (the automatic breakpoint), at its retention snapped down to a tier Anthropic
  has (`'30m'` is `'5m'`); False or unset caches nothing. Any `anthropic_cache*` setting, even
  False, makes it ignored for the request;
- at most 4 breakpoints, 3 beside the automatic one: those on tools and instructions stay, the
  oldest messages' are removed first, and more than fit in tools and instructions alone is a
  `UserError`;
- a breakpoint is raised to the longest TTL of those after it (the API reads tools, system,
  messages, then the automatic one, and refuses a 1-hour entry after a 5-minute one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, cast

from threadline.exceptions import UserError
from threadline.messages.wire import JSONObject

__all__ = ['apply_cache', 'translated_cache']

_Body: TypeAlias = dict[str, Any]
"""A request body read as plain JSON (its blocks are edited in place)."""

_KEYS = (
    'anthropic_cache',
    'anthropic_cache_instructions',
    'anthropic_cache_tool_definitions',
    'anthropic_cache_messages',
)
_RETENTIONS = ('5m', '30m', '1h')
_MAX_POINTS = 4
_CACHEABLE = frozenset(
    {'text', 'tool_use', 'server_tool_use', 'image', 'tool_result', 'document', 'tool_addition', 'mcp_tool_result'}
)


def translated_cache(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """`settings` with the unified `cache` turned into `anthropic_cache*` settings (see the rules)."""
    cache = settings.get('cache')
    if cache is None or cache is False or any(key in settings for key in _KEYS):
        return settings
    retention, messages = _split(cache)
    ttl = '1h' if retention == '1h' else '5m'
    out = {**settings, 'anthropic_cache_instructions': ttl, 'anthropic_cache_tool_definitions': ttl}
    if messages:
        out['anthropic_cache'] = ttl
    return out


def _split(cache: object) -> tuple[object, bool]:
    if isinstance(cache, dict):
        if unknown := set(cache) - {'retention', 'messages'}:
            raise UserError(
                f"Unknown `cache` option(s) {', '.join(map(repr, sorted(unknown)))}. Use 'messages' and 'retention'."
            )
        retention, messages = cache.get('retention', True), cache.get('messages', True)
    else:
        retention, messages = cache, True
    if retention is not True and retention not in _RETENTIONS:
        raise UserError(
            f'Unknown `cache` retention {retention!r}. Use `True`, `False`, or one of '
            + ', '.join(map(repr, _RETENTIONS))
            + '.'
        )
    return retention, bool(messages)


def _control(value: object) -> _Body:
    return {'type': 'ephemeral', 'ttl': '5m' if value is True else value}


def apply_cache(request: JSONObject, settings: Mapping[str, Any]) -> None:
    """Put the breakpoints `settings` ask for into `request` (see the module rules)."""
    body = cast(_Body, request)
    automatic, on_messages = settings.get('anthropic_cache'), settings.get('anthropic_cache_messages')
    if automatic and on_messages:
        raise UserError('`anthropic_cache` and `anthropic_cache_messages` cannot both be enabled.')
    tools = body.get('tools')
    if (ttl := settings.get('anthropic_cache_tool_definitions')) and isinstance(tools, list):
        for index in reversed(range(len(tools))):
            if tools[index].get('defer_loading') is not True:  # a copy: a provider-defined one is shared
                tools[index] = {**tools[index], 'cache_control': _control(ttl)}
                break
    system = body.get('system')
    if (ttl := settings.get('anthropic_cache_instructions')) and isinstance(system, list) and system:
        system[-1]['cache_control'] = _control(ttl)
    last = _last_cacheable(body)
    if on_messages and last is not None and 'cache_control' not in last:
        last['cache_control'] = _control(on_messages)
    # The automatic breakpoint lands on the last cacheable block: one placed there already wins.
    if automatic and (last is None or 'cache_control' not in last):
        body['cache_control'] = _control(automatic)
    # The messages' breakpoints, oldest first, in one pass (a long history has tens of thousands
    # of blocks, and most requests carry none of them).
    marked = [
        block
        for message in body.get('messages') or ()
        if isinstance(content := message.get('content'), list)
        for block in content
        if 'cache_control' in block
    ]
    _limit(body, marked, automatic='cache_control' in body)
    _raise_earlier_ttls(body, marked)


def _last_cacheable(body: _Body) -> _Body | None:
    """The last block of the last message that can carry a breakpoint (not a thinking block)."""
    messages = body.get('messages') or []
    content = messages[-1].get('content') if messages else None
    for block in reversed(content if isinstance(content, list) else []):
        if 'cache_control' in block or block.get('type') in _CACHEABLE:
            return block  # type: ignore[no-any-return]
    return None


def _limit(body: _Body, marked: list[_Body], *, automatic: bool) -> None:
    """Keep the newest message breakpoints that fit beside the tools' and instructions' ones."""
    budget = _MAX_POINTS - automatic
    reserved = sum('cache_control' in b for b in body.get('system') or [] if isinstance(b, dict))
    reserved += sum('cache_control' in t for t in body.get('tools') or [] if isinstance(t, dict))
    if reserved > budget:
        raise UserError(
            'Too many cache points for Anthropic request. '
            f'System prompt and tool definitions already use {reserved} cache points, '
            f'which exceeds the maximum of {budget}.'
        )
    excess = max(0, len(marked) - (budget - reserved))
    for block in marked[:excess]:
        del block['cache_control']
    del marked[:excess]


def _raise_earlier_ttls(body: _Body, marked: list[_Body]) -> None:
    """The API refuses a longer-lived breakpoint after a shorter-lived one (it reads tools, then
    system, then messages, then the automatic one): earlier ones are raised to the longest after."""
    carriers = [t for t in body.get('tools') or [] if isinstance(t, dict) and 'cache_control' in t]
    carriers += [b for b in body.get('system') or [] if isinstance(b, dict) and 'cache_control' in b]
    carriers += marked
    longest = body.get('cache_control', {}).get('ttl', '5m')
    for carrier in reversed(carriers):
        if carrier['cache_control'].get('ttl', '5m') == '1h':
            longest = '1h'
        elif longest == '1h':
            carrier['cache_control'] = {'type': 'ephemeral', 'ttl': '1h'}
