"""Reading a tool return as a model is sent it: pydantic-ai 2.62's helpers on `ToolReturnPart`
and `NativeToolReturnPart` (`model_response_str`, `model_response_object`, `files`, ...).

Rules (pydantic-ai 2.62's, checked against it):
- The data is the content without its files (images, documents, audio, video, uploads); a lone
  item, or one left alone once the files are taken out, is the item itself.
- As text: a string as is, no data as `''`, anything else as its JSON, and a value whose JSON is
  a string (a date, a UUID) as that string unquoted, so the text is the same before and after the
  history is stored and loaded back.
- A `failed` or `retried` return is `{"error": ...}` unless `wrap_if_error=False` (for providers
  with an error channel of their own): the text, or a retry's structured feedback as it is.
- As an object: a JSON object as is, anything else under `return_value`.
"""

from __future__ import annotations

import html
from typing import Any, Literal

import msgspec

from threadline.messages._content import AudioUrl, BinaryContent, DocumentUrl, ImageUrl, UploadedFile, VideoUrl
from threadline.messages._encode import json_encoder, jsonable

__all__ = ['ERROR_OUTCOMES', 'RETURN_VALUE_KEY', 'ToolReturnReading']

ERROR_OUTCOMES = ('failed', 'retried')
"""The outcomes a model is sent as an error."""

RETURN_VALUE_KEY = 'return_value'
"""The key a value that is not a JSON object goes under in `model_response_object()`."""

_FILES = (ImageUrl, AudioUrl, DocumentUrl, VideoUrl, BinaryContent, UploadedFile)


class ToolReturnReading:
    """The helpers a tool return part mixes in (it has `content` and `outcome`)."""

    __slots__ = ()
    content: Any
    outcome: str

    @property
    def files(self) -> list[Any]:
        """The files in the content (images, documents, audio, video, uploads)."""
        return self._split()[1]

    def has_content(self) -> bool:
        return self.content is not None

    @property
    def typed_content(self) -> Any:
        """The content of a successful return, None for any other outcome (its content is then
        an error, not the tool's result). Threadline has no typed tool kinds, so it is as is."""
        return self.content if self.outcome == 'success' else None

    def model_response_str(self, *, wrap_if_error: bool = True) -> str:
        """The data as the text a model is sent (see the module docstring)."""
        value = self._data()
        text = '' if value is None else value if isinstance(value, str) else _text(value)
        if wrap_if_error and self.outcome in ERROR_OUTCOMES:
            return json_encoder.encode({'error': self._error_value(value, text)}).decode()
        return text

    def model_response_object(self, *, wrap_if_error: bool = True) -> dict[str, Any]:
        """The data as a JSON object (a value that is not one goes under `return_value`)."""
        value = self._data()
        if wrap_if_error and self.outcome in ERROR_OUTCOMES:
            return {'error': self._error_value(value, self.model_response_str(wrap_if_error=False))}
        if value is None:
            return {}
        data = jsonable(value)
        return data if isinstance(data, dict) else {RETURN_VALUE_KEY: data}

    def model_response_str_and_user_content(self, *, wrap_if_error: bool = True) -> tuple[str, list[Any]]:
        """The result as text for a provider whose tool results take text only, and its files for
        a user message after it: each file is 'See file {identifier}.' in the text, and goes in the
        list framed by `<tool_result tool_name=... tool_call_id=... file_id=...>` tags, so the
        model can tell a tool's file (which may be attacker-influenced) from the user's own."""
        files = self.files
        if not files:
            return self.model_response_str(wrap_if_error=wrap_if_error), []
        texts: list[str] = []
        user_content: list[Any] = []
        for item in self.content_items(mode='str', wrap_if_error=False):
            if isinstance(item, _FILES):
                texts.append(f'See file {item.identifier}.')
                opening, closing = _provenance(self, item.identifier)
                user_content.extend([opening, item, closing])
            else:
                texts.append(item)
        if wrap_if_error and self.outcome in ERROR_OUTCOMES:
            value = self._data()
            error = {'error': self._error_value(value, self.model_response_str(wrap_if_error=False))}
            references = [f'See file {file.identifier}.' for file in files]
            return json_encoder.encode([error, *references]).decode(), user_content
        if isinstance(self.content, list):
            return json_encoder.encode(texts).decode(), user_content
        return texts[0], user_content

    def structured_content(self) -> dict[str, Any] | list[Any] | None:
        """The content as JSON data (a JSON string parsed), or None when it is not an object or array."""
        content = self.content
        if isinstance(content, str):
            try:
                content = msgspec.json.decode(content)
            except msgspec.DecodeError:
                return None
        return content if isinstance(content, (dict, list)) else None

    def content_items(
        self, *, mode: Literal['raw', 'str', 'jsonable'] = 'raw', wrap_if_error: bool = True
    ) -> list[Any]:
        """The content as a flat list: as it is (`'raw'`), or each item that is not a file as its
        text (`'str'`) or its JSON value (`'jsonable'`); an error as one wrapped item beside its
        files, and a retry's list of errors as one item."""
        content = self.content
        items = list(content) if isinstance(content, list) else [content]
        if mode == 'raw':
            return items
        files = self.files
        if wrap_if_error and self.outcome in ERROR_OUTCOMES:
            wrapped = self.model_response_str() if mode == 'str' else self.model_response_object()
            return [wrapped, *files]
        if self.outcome == 'retried' and isinstance(content, list) and not files:
            # A retry's validation errors are one array the model is shown whole, not an item each.
            return [self.model_response_str(wrap_if_error=False) if mode == 'str' else jsonable(items)]
        convert = _item_text if mode == 'str' else jsonable
        return [item if isinstance(item, _FILES) else convert(item) for item in items]

    def _split(self) -> tuple[list[Any], list[Any]]:
        content = self.content
        if isinstance(content, _FILES):
            return [], [content]
        if isinstance(content, list):
            return [c for c in content if not isinstance(c, _FILES)], [c for c in content if isinstance(c, _FILES)]
        return [content], []

    def _data(self) -> Any:
        data, files = self._split()
        if not data:
            return None
        if len(data) == 1 and (not isinstance(self.content, list) or files):
            return data[0]
        return data

    def _error_value(self, value: Any, text: str) -> Any:
        # A retry's validation errors go in as the array they are, not as a string holding it.
        if self.outcome == 'retried' and value is not None and not isinstance(value, str):
            return jsonable(value)
        return text


def _text(value: Any) -> str:
    dumped = json_encoder.encode(value)
    return msgspec.json.decode(dumped) if dumped.startswith(b'"') else dumped.decode()


def _item_text(value: Any) -> str:
    return value if isinstance(value, str) else _text(value)


def _provenance(part: Any, identifier: str | None) -> tuple[str, str]:
    """The tags framing one file a tool returned, naming the call it came from (values escaped)."""
    attrs = {'tool_name': part.tool_name, 'tool_call_id': part.tool_call_id, 'file_id': identifier}
    rendered = ''.join(f' {name}="{html.escape(value)}"' for name, value in attrs.items() if value is not None)
    return f'<tool_result{rendered}>', '</tool_result>'
