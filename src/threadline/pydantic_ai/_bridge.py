"""pydantic-ai messages to Threadline's and back, object by object, with no JSON in between.

Both libraries write the same wire form, so each message class has a counterpart of the same
name with the same fields; the bridge copies field values across, converting the values that are
themselves message objects (parts, content items, usage, retry details) and leaving everything
else (text, numbers, datetimes, bytes, a tool's own result objects) as the very same objects.

Rules (each tested in `tests/pydantic_ai/test_bridge.py`):
- Exact both ways, by each library's own equality and wire JSON, for every part kind: a kind one
  side has and the other keeps opaque (pydantic-ai's tool search, speech, instruction parts,
  `StructuredContent`) crosses as its wire JSON, the one place the bridge encodes anything.
- pydantic-ai objects are made without calling their constructors (each field set as the
  original had it), so no `__post_init__` normalises a value on the way back; Threadline structs
  are made through msgspec's own constructor, as decoding makes them.
- Fields only Threadline has (a system prompt's `context_id`, a response's `canonical_system` and
  `model_id`, a tool return's `content_file_digests`) have no place in a pydantic-ai object: they
  are dropped on the way there and come back as their defaults.
- `workspace_ref` and `failed_attempts`, pydantic-ai objects but plain wire dicts in Threadline,
  cross as their wire JSON.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from threadline import messages as tl
from threadline.exceptions import UserError

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessage as PydanticAIMessage
    from pydantic_ai.usage import RunUsage as PydanticAIRunUsage

__all__ = [
    'from_pydantic_ai',
    'is_pydantic_ai_message',
    'to_pydantic_ai',
    'usage_from_pydantic_ai',
    'usage_to_pydantic_ai',
]

# The classes that make up a message: parts, content items, usage and retry details.
_SHARED = (
    'ModelRequest',
    'ModelResponse',
    'SystemPromptPart',
    'UserPromptPart',
    'ToolReturnPart',
    'RetryPromptPart',
    'RetryFeedbackPart',
    'ToolAvailabilityDeltaPart',
    'CompactionPart',
    'TextPart',
    'ThinkingPart',
    'ToolCallPart',
    'NativeToolCallPart',
    'NativeToolReturnPart',
    'FilePart',
    'TextContent',
    'ImageUrl',
    'AudioUrl',
    'DocumentUrl',
    'VideoUrl',
    'BinaryContent',
    'BinaryImage',
    'UploadedFile',
    'CachePoint',
    'RequestUsage',
    'RetryInfo',
)
# Threadline's stored name for a field pydantic-ai spells another way.
_RENAMED = {'_identifier': 'identifier', '_media_type': 'media_type', 'unmeasured_requests': '_unmeasured_requests'}
_AS_WIRE_DICTS = ('workspace_ref', 'failed_attempts')
_Pairs = tuple[tuple[str, str], ...]


def _to_float(value: object) -> object:
    """A whole number where Threadline stores a float (as decoding would make it)."""
    return float(value) if type(value) is int else value


def _unset_if_zero(value: object) -> object:
    return value or msgspec.UNSET  # the wire leaves `unmeasured_requests` out when it is 0


def _zero_if_unset(value: object) -> object:
    return 0 if value is msgspec.UNSET else value


def _float_fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in msgspec.structs.fields(cls) if f.type in (float, float | None))


@dataclasses.dataclass(frozen=True)
class _Tables:
    """pydantic-ai class → (Threadline class, field pairs) and the reverse, built on first use."""

    to_ours: dict[type, tuple[type, _Pairs]]
    to_theirs: dict[type, tuple[type, _Pairs, tuple[tuple[str, object], ...]]]
    floats: dict[type, frozenset[str]]  # Threadline class → its float fields
    by_tool_kind: dict[tuple[type, str], type]  # (Threadline class, tool_kind) → pydantic-ai subclass
    # pydantic TypeAdapters for the kinds only one side knows, and the fields held as wire dicts
    request_part: TypeAdapter[object]
    response_part: TypeAdapter[object]
    user_content: TypeAdapter[object]
    wire_dicts: dict[str, TypeAdapter[object]]
    messages: tuple[type, type]  # pydantic-ai's ModelRequest and ModelResponse


@functools.cache
def _tables() -> _Tables:
    from pydantic import TypeAdapter
    from pydantic_ai import messages as pa

    to_ours: dict[type, tuple[type, _Pairs]] = {}
    to_theirs: dict[type, tuple[type, _Pairs, tuple[tuple[str, object], ...]]] = {}
    for name in _SHARED:
        theirs, ours = getattr(pa, name), getattr(tl, name)
        stored = set(ours.__struct_fields__)
        pairs = tuple(
            (field.name, _RENAMED.get(field.name, field.name))
            for field in dataclasses.fields(theirs)
            if _RENAMED.get(field.name, field.name) in stored
        )
        # What pydantic-ai holds that Threadline does not store (its tag fields): their defaults.
        defaults = tuple(
            (field.name, field.default)
            for field in dataclasses.fields(theirs)
            if _RENAMED.get(field.name, field.name) not in stored and field.default is not dataclasses.MISSING
        )
        to_ours[theirs] = (ours, pairs)
        to_theirs[ours] = (theirs, pairs, defaults)
    by_tool_kind = _tool_kind_subclasses(to_ours)
    return _Tables(
        to_ours,
        to_theirs,
        {ours: _float_fields(ours) for ours, _ in to_ours.values()},
        by_tool_kind,
        TypeAdapter(pa.ModelRequestPart),
        TypeAdapter(pa.ModelResponsePart),
        TypeAdapter(pa.UserContent),
        {
            'workspace_ref': TypeAdapter(pa.WorkspaceRef | None),
            'failed_attempts': TypeAdapter(list[pa.ModelRequestAttempt] | None),
        },
        (pa.ModelRequest, pa.ModelResponse),
    )


def _tool_kind_subclasses(to_ours: dict[type, tuple[type, _Pairs]]) -> dict[tuple[type, str], type]:
    """pydantic-ai's tool-call and tool-return subclasses (tool search, capability loading), which
    its loader picks by `tool_kind` and Threadline keeps as the base part with that `tool_kind`.
    Each is added to `to_ours` as its base's counterpart, with the base's field pairs."""
    found: dict[tuple[type, str], type] = {}
    for base, (ours, pairs) in list(to_ours.items()):
        if not any(f.name == 'tool_kind' for f in msgspec.structs.fields(ours)):
            continue
        pending: list[type] = list(base.__subclasses__())
        while pending:
            sub = pending.pop()
            pending.extend(sub.__subclasses__())
            kind = next((f.default for f in dataclasses.fields(sub) if f.name == 'tool_kind'), None)
            if isinstance(kind, str) and sub.__module__.startswith('pydantic_ai'):
                found[(ours, kind)] = sub
                to_ours[sub] = (ours, pairs)
    return found


def is_pydantic_ai_message(value: object) -> bool:
    """Whether `value` is a pydantic-ai `ModelRequest` or `ModelResponse` (pydantic-ai is not
    imported to answer: a value whose class is not from it is not one)."""
    module = type(value).__module__
    return module.startswith('pydantic_ai.') and type(value).__name__ in ('ModelRequest', 'ModelResponse')


def from_pydantic_ai(messages: Iterable[object]) -> list[tl.ModelMessage]:
    """Threadline messages equal to pydantic-ai `messages` (rules in the module docstring); a
    value that is not a pydantic-ai message is a `UserError` naming its position."""
    tables = _tables()
    out: list[tl.ModelMessage] = []
    for index, message in enumerate(messages):
        if not isinstance(message, tables.messages):
            raise UserError(
                f'messages[{index}]: expected a pydantic-ai ModelRequest or ModelResponse, got {type(message).__name__}'
            )
        converted = _ours(message, tables)
        assert isinstance(converted, tl.ModelRequest | tl.ModelResponse)
        out.append(converted)
    return out


def to_pydantic_ai(messages: Iterable[object]) -> list[PydanticAIMessage]:
    """pydantic-ai messages equal to Threadline `messages` (rules in the module docstring); a
    value that is not a Threadline message is a `UserError` naming its position."""
    from pydantic_ai import messages as pa

    tables = _tables()
    out: list[PydanticAIMessage] = []
    for index, message in enumerate(messages):
        if not isinstance(message, tl.ModelRequest | tl.ModelResponse):
            raise UserError(
                f'messages[{index}]: expected a Threadline ModelRequest or ModelResponse, got {type(message).__name__}'
            )
        converted = _theirs(message, tables)
        assert isinstance(converted, pa.ModelRequest | pa.ModelResponse)
        out.append(converted)
    return out


# -- pydantic-ai → Threadline -----------------------------------------------------------------------
def _ours(value: object, tables: _Tables, where: str = '') -> object:
    entry = tables.to_ours.get(type(value))
    if entry is None:
        return _ours_unknown(value, tables, where)
    cls, pairs = entry
    floats = tables.floats[cls]
    fields: dict[str, object] = {}
    for theirs, ours in pairs:
        item = getattr(value, theirs)
        if ours in _AS_WIRE_DICTS:
            fields[ours] = None if item is None else msgspec.json.decode(tables.wire_dicts[ours].dump_json(item))
        elif ours == 'parts':
            adapter = tables.request_part if cls is tl.ModelRequest else tables.response_part
            fields[ours] = [
                _ours(part, tables, 'part') if _known(part, tables) else _opaque(part, adapter) for part in item
            ]
        elif ours == 'content' and cls is tl.UserPromptPart and isinstance(item, list):
            fields[ours] = [_ours(c, tables, 'content') for c in item]
        elif ours == '_unmeasured_requests':
            fields[ours] = _unset_if_zero(item)
        elif ours in floats:
            fields[ours] = _to_float(item)
        else:
            fields[ours] = _ours(item, tables, where) if _convertible(item) else item
    return msgspec.StructMeta.__call__(cls, **fields)


def _ours_unknown(value: object, tables: _Tables, where: str) -> object:
    if where == 'content' and _from_pydantic_ai(value):
        return tl.OpaqueContent(msgspec.json.decode(tables.user_content.dump_json(value)))
    if isinstance(value, list):
        return [_ours(item, tables, where) if _convertible(item) else item for item in value]
    if isinstance(value, tuple):
        return tuple(_ours(item, tables, where) if _convertible(item) else item for item in value)
    if isinstance(value, dict):
        return {k: _ours(item, tables, where) if _convertible(item) else item for k, item in value.items()}
    return value


def _opaque(part: object, adapter: TypeAdapter[object]) -> tl.OpaquePart:
    return tl.OpaquePart(msgspec.json.decode(adapter.dump_json(part)))


def _known(part: object, tables: _Tables) -> bool:
    return type(part) in tables.to_ours


def _from_pydantic_ai(value: object) -> bool:
    return type(value).__module__.startswith('pydantic_ai')


def _convertible(value: object) -> bool:
    """Whether a field value may hold message objects (containers and message-module objects)."""
    return isinstance(value, (list, tuple, dict)) or _from_pydantic_ai(value)


# -- Threadline → pydantic-ai -----------------------------------------------------------------------
def _theirs(value: object, tables: _Tables, where: str = '') -> object:
    entry = tables.to_theirs.get(type(value))
    if entry is None:
        return _theirs_unknown(value, tables, where)
    cls, pairs, defaults = entry
    kind = getattr(value, 'tool_kind', None)
    if kind is not None and (sub := tables.by_tool_kind.get((type(value), kind))) is not None:
        cls = sub  # the subclass pydantic-ai's own loader would make; it adds no stored fields
    made: object = object.__new__(cls)
    for theirs, ours in pairs:
        item = getattr(value, ours)
        if ours in _AS_WIRE_DICTS:
            item = None if item is None else tables.wire_dicts[ours].validate_json(msgspec.json.encode(item))
        elif ours == 'parts':
            adapter = tables.request_part if cls.__name__ == 'ModelRequest' else tables.response_part
            item = [_theirs_part(part, adapter, tables) for part in item]
        elif ours == '_unmeasured_requests':
            item = _zero_if_unset(item)
        elif ours == 'data' and isinstance(item, bytes):
            item = bytes(item)  # Threadline's Base64Bytes: pydantic-ai holds plain bytes
        elif isinstance(item, (list, tuple, dict)) or type(item) in tables.to_theirs:
            item = _theirs(item, tables, 'content' if ours == 'content' else where)
        object.__setattr__(made, theirs, item)
    for name, default in defaults:
        object.__setattr__(made, name, default)
    return made


def _theirs_part(part: object, adapter: TypeAdapter[object], tables: _Tables) -> object:
    if isinstance(part, tl.OpaquePart):
        return adapter.validate_json(msgspec.json.encode(part.data))
    return _theirs(part, tables, 'part')


def _theirs_unknown(value: object, tables: _Tables, where: str) -> object:
    if isinstance(value, tl.OpaqueContent):
        return tables.user_content.validate_json(msgspec.json.encode(value.data))
    if isinstance(value, list):
        return [_theirs(item, tables, where) for item in value]
    if isinstance(value, tuple):
        return tuple(_theirs(item, tables, where) for item in value)
    if isinstance(value, dict):
        return {k: _theirs(item, tables, where) for k, item in value.items()}
    return value


# -- run usage (what `usage=` carries across runs) -------------------------------------------------
USAGE_FIELDS = (
    'input_tokens',
    'cache_write_tokens',
    'cache_write_1h_tokens',
    'cache_read_tokens',
    'output_tokens',
    'unmeasured_requests',
    'output_reasoning_tokens',
    'input_audio_tokens',
    'cache_audio_read_tokens',
    'output_audio_tokens',
    'audio_seconds',
    'details',
    'cost',
    'requests',
    'tool_calls',
)
"""The fields of both libraries' `RunUsage` (a test holds both to this list)."""


def usage_from_pydantic_ai(usage: object) -> tl.RunUsage:
    """pydantic-ai's `RunUsage` as Threadline's, field by field (the same fields, the same values)."""
    from pydantic_ai.usage import RunUsage

    if not isinstance(usage, RunUsage):
        raise UserError(f'usage: expected a pydantic-ai RunUsage, got {type(usage).__name__}')
    ours = tl.RunUsage()
    for name in USAGE_FIELDS:
        value = getattr(usage, name)
        setattr(ours, name, dict(value) if isinstance(value, dict) else value)  # `details` is not shared
    return ours


def usage_to_pydantic_ai(usage: tl.RunUsage) -> PydanticAIRunUsage:
    """Threadline's `RunUsage` as pydantic-ai's."""
    from pydantic_ai.usage import RunUsage

    theirs = RunUsage()
    for name in USAGE_FIELDS:
        value = getattr(usage, name)
        setattr(theirs, name, dict(value) if isinstance(value, dict) else value)
    return theirs
