"""The Gemini API's JSON for a `generateContent` request, built here, and the one SDK call that
sends it.

`GoogleModel.request_body` writes a request in google-genai's dict form (snake_case, bytes as
bytes). `generate_content` would validate that into pydantic models and convert it back to the
API's JSON, which costs about 2 s over 10,000 messages. `wire_request` makes the same JSON
directly, spelled as the SDK spells it: the fields of a request, content, part, config and tool
in camelCase, the objects inside them as written (the API's JSON mapping reads both spellings),
bytes as URL-safe base64, and the config split as the API wants it (`systemInstruction`, `tools`,
`toolConfig` at the top; the rest under `generationConfig`).
`tests/models/providers/test_google_wire.py` checks it field for field against the SDK's own
conversion over random histories.

The SDK has no public call that posts a finished body, so `post` uses its API client
(`client.aio._api_client.async_request`), which still does auth, retries, timeouts and errors.
That private name is used here and nowhere else, and checked first, so an SDK that renames it
fails with a clear error (and the wire test fails loudly).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from threadline.exceptions import UserError

__all__ = ['http_options', 'post', 'wire_request']


def wire_request(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The path and JSON of the `generateContent` request for `body` (`request_body`'s form)."""
    model = body['model']
    path = f'{model if model.startswith(("models/", "tunedModels/")) else "models/" + model}:generateContent'
    wire: dict[str, Any] = {'contents': [_content(content) for content in body['contents']]}
    config = dict(body.get('config') or {})
    if 'system_instruction' in config:
        wire['systemInstruction'] = _content(config.pop('system_instruction'))
    if 'tools' in config:
        wire['tools'] = [_renamed(tool) for tool in config.pop('tools')]
    if 'tool_config' in config:
        wire['toolConfig'] = _renamed(config.pop('tool_config'))
    wire['generationConfig'] = _renamed(config)
    return path, wire


# The SDK renames the fields of the objects it has converters for (a request, a content, a part,
# a config, a tool) and passes the objects inside them through as written (snake_case): so do we.
def _content(content: dict[str, Any]) -> dict[str, Any]:
    return {key: [_renamed(part) for part in value] if key == 'parts' else value for key, value in content.items()}


def _renamed(value: dict[str, Any]) -> dict[str, Any]:
    return {_camel_key(key): _as_written(item) for key, item in value.items()}


def _as_written(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.urlsafe_b64encode(value).decode('ascii')
    if isinstance(value, dict):
        return {key: _as_written(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_written(item) for item in value]
    return value


_KEYS: dict[str, str] = {}


def _camel_key(key: str) -> str:
    camel = _KEYS.get(key)
    if camel is None:
        head, *rest = key.split('_')
        camel = _KEYS[key] = head + ''.join(word.capitalize() for word in rest)
    return camel


def http_options(client: Any, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """This request's HTTP options in the SDK's dict form: `extra_headers`, `timeout` (the SDK
    counts milliseconds) and `max_retries` (the SDK counts attempts; a request's retry options
    replace the client's, so its other retry options are carried over). None when none is set."""
    options: dict[str, Any] = {}
    if headers := settings.get('extra_headers'):
        options['headers'] = dict(headers)
    if (timeout := settings.get('timeout')) is not None:
        options['timeout'] = int(1000 * timeout)
    if (retries := settings.get('max_retries')) is not None:
        held = getattr(
            getattr(getattr(getattr(client, 'aio', None), '_api_client', None), '_http_options', None),
            'retry_options',
            None,
        )
        carried = held.model_dump(exclude_none=True) if held is not None else {}
        options['retry_options'] = {**carried, 'attempts': retries + 1}
    return options or None


async def post(client: Any, path: str, wire: dict[str, Any], options: dict[str, Any] | None = None) -> Any:
    """POST `wire` through the SDK's API client; the response's JSON body as text."""
    api_client = getattr(getattr(client, 'aio', None), '_api_client', None)
    send = getattr(api_client, 'async_request', None)
    if send is None:
        raise UserError(
            'this google-genai version has no API client to post a request through (client.aio._api_client); '
            'install the version threadline[google] pins'
        )
    response = await send('post', path, wire, options)
    return response.body
