"""What the provider models share: clients built from a provider object, and HTTP errors."""

from __future__ import annotations

import base64
import os
from typing import Any

from ..exceptions import ModelHTTPError, UserError
from ..messages import BinaryContent

__all__ = ['ModelHTTPError', 'binary_base64', 'env_key', 'require_extra', 'tool_result_text']


def require_extra(module: str, extra: str) -> Any:
    """Import a provider SDK, or say which extra installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise UserError(
            f"the {extra} provider needs the '{extra}' extra: pip install 'threadline[{extra}]' "
            f"(or uv add 'threadline[{extra}]')"
        ) from None


def env_key(value: str | None, variable: str, provider: str) -> str:
    key = value or os.environ.get(variable)
    if not key:
        raise UserError(f'the {provider} provider needs an API key: set {variable}, or pass api_key= to the provider')
    return key


def binary_base64(content: BinaryContent) -> str:
    return base64.b64encode(content.data).decode('ascii')


def tool_result_text(part: Any) -> str:
    """A tool result as the model reads it: text as is, other values as JSON; a `failed` or
    `retried` result as `{"error": ...}` (a synthesized `interrupted` return is its text)."""
    import msgspec

    from ..messages._codec import enc_hook

    content = part.content
    if part.outcome in ('failed', 'retried'):
        return msgspec.json.encode({'error': content}, enc_hook=enc_hook).decode()
    if isinstance(content, str):
        return content
    return msgspec.json.encode(content, enc_hook=enc_hook).decode()
