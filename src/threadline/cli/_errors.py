"""A failed model request told in one line a person can act on (`chat`, `prompt`).

Rules (each tested):
- An HTTP error reads `<provider> answered HTTP <status>: <the provider's own message>`: the
  message is taken from the provider's error body (`error.message`, `message`, or a text body),
  on one line and at most 200 characters; a body is never printed as a raw dict.
- 401 and 403 add a hint about the key (its variable, `threadline keys set`, `--key`); 429 and
  5xx say to try again shortly; 404 says to check the model's name.
- A provider that cannot be reached reads `could not reach <provider> at <base URL>` and hints at
  the base URL's variable and the network.
- Anything else is its message's first line.
"""

from __future__ import annotations

from typing import Any

from threadline.exceptions import ModelConnectionError, ModelHTTPError

__all__ = ['model_error_line']

_LONGEST = 200
_VARIABLES = {
    'openai': ('OPENAI_API_KEY', 'OPENAI_BASE_URL'),
    'anthropic': ('ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'),
    'google': ('GOOGLE_API_KEY', None),
}


def model_error_line(error: BaseException, model: Any) -> str:
    """`error` of a request to `model` (the agent's model, for its provider and base URL)."""
    provider = str(getattr(model, 'provider_name', '') or 'the model')
    key_variable, url_variable = _VARIABLES.get(provider, (None, None))
    if isinstance(error, ModelHTTPError):
        line = f'{provider} answered HTTP {error.status_code}'
        said = _provider_message(error.body)
        return (line + (f': {said}' if said else '')) + _http_hint(error.status_code, provider, key_variable)
    if isinstance(error, ModelConnectionError):
        where = getattr(model, 'base_url', None)
        line = f'could not reach {provider}' + (f' at {where}' if where else '')
        hint = f'check {url_variable} and the network' if url_variable else 'check the network'
        return f'{line} ({hint})'
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _provider_message(body: object) -> str:
    """The provider's own words in an error body, on one line, cut at `_LONGEST` characters."""
    said: object = body
    if isinstance(body, dict):
        inner = body.get('error')
        said = inner.get('message') if isinstance(inner, dict) else inner if isinstance(inner, str) else None
        said = said or body.get('message') or body.get('detail')
    if not isinstance(said, str):
        return ''
    one = ' '.join(said.split())
    return one if len(one) <= _LONGEST else one[: _LONGEST - 1] + '…'


def _http_hint(status: int, provider: str, key_variable: str | None) -> str:
    if status in (401, 403):
        where = f'{key_variable}, ' if key_variable else ''
        return f' (check the API key: {where}threadline keys set {provider}, or --key)'
    if status == 404:
        return ' (check the model name: threadline models lists known ones)'
    if status == 429 or status >= 500:
        return ' (try again shortly)'
    return ''
