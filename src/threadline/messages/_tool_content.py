"""Rebuilding multimodal items inside a tool return's content when a history is loaded.

A tool may return an image, a document or a file reference alone, in a list or nested in a
mapping. On load each is rebuilt as its own type, wherever it sits. Rules:

- a mapping whose `kind` is a file-URL kind is rebuilt only when it also carries a `media_type`
  key (every dump of ours writes one); without it it stays the tool's own plain mapping;
- `binary` and `uploaded-file` mappings are rebuilt when they hold the fields their type requires;
- a mapping that merely reuses one of those `kind` values and does not fit stays a plain mapping
  and loading never fails because of it;
- keys a rebuilt item's type does not declare are dropped;
- a mapping with a non-string key is passed through untouched (nothing below it is rebuilt): such
  keys have no JSON form, so only a Python-side round trip carries them;
- content nested deeper than `MAX_NESTING` levels is refused (a `ValueError` the loader reports
  with its location), so loading never depends on the interpreter's recursion limit.
"""

from __future__ import annotations

from typing import Any

import msgspec

from threadline.messages._content import FILE_URL_KINDS, BinaryContent, UploadedFile

__all__ = ['MAX_NESTING', 'rehydrate_tool_content']

MAX_NESTING = 128
"""How deeply lists and mappings may nest inside a tool's return content."""

_ITEM_TYPES: dict[str, type] = {**FILE_URL_KINDS, 'binary': BinaryContent, 'uploaded-file': UploadedFile}


def rehydrate_tool_content(content: Any, dec_hook: Any, depth: int = 0) -> Any:
    """Return `content` with every multimodal item mapping inside it rebuilt as its type."""
    kind = type(content)
    if kind is str or (kind is not dict and kind is not list):
        return content
    if depth >= MAX_NESTING:
        raise ValueError(f'tool return content is nested deeper than {MAX_NESTING} levels')
    if kind is list:
        return [rehydrate_tool_content(item, dec_hook, depth + 1) for item in content]
    if not all(type(key) is str for key in content):
        return content
    item = _rebuild_item(content, dec_hook)
    if item is not None:
        return item
    return {key: rehydrate_tool_content(value, dec_hook, depth + 1) for key, value in content.items()}


def _rebuild_item(mapping: dict[str, Any], dec_hook: Any) -> Any:
    item_kind = mapping.get('kind')
    if type(item_kind) is not str:
        return None
    item_type = _ITEM_TYPES.get(item_kind)
    if item_type is None:
        return None
    if item_kind in FILE_URL_KINDS and 'media_type' not in mapping:
        return None
    media_type = mapping.get('media_type')
    if media_type is not None and not (type(media_type) is str and media_type):
        return None
    fields = {f.encode_name for f in msgspec.structs.fields(item_type)}
    known = {key: value for key, value in mapping.items() if key in fields or key == 'kind'}
    try:
        return msgspec.convert(known, item_type, dec_hook=dec_hook, strict=False)
    except (msgspec.ValidationError, ValueError, TypeError):
        return None
