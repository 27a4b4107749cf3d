"""Every request gets an id, so a failure a person reports can be found in the server's log.

Rules (each tested):
- A request's id is its `x-request-id` header when that is 1 to 64 letters, digits, `.`, `_` or
  `-` (a proxy in front may have set it), else a new random one; nothing else a client sends is
  ever logged, so the id cannot forge or break a log line.
- Every response carries it back as `x-request-id`, errors and streams included.
- Endpoints read it as `request.state.request_id` and name it when they log a failure.
"""

from __future__ import annotations

import re
import uuid

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ['RequestIds', 'request_id_of']

_GIVEN = re.compile(r'[A-Za-z0-9._-]{1,64}')


class RequestIds:
    """ASGI middleware that names each HTTP request (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] != 'http':
            await self.app(scope, receive, send)
            return
        given = dict(scope['headers']).get(b'x-request-id', b'').decode('latin-1')
        request_id = given if _GIVEN.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault('state', {})['request_id'] = request_id

        async def named(message: Message) -> None:
            if message['type'] == 'http.response.start':
                message['headers'] = [*message.get('headers', []), (b'x-request-id', request_id.encode())]
            await send(message)

        await self.app(scope, receive, named)


def request_id_of(request: Request) -> str | None:
    """The id `RequestIds` gave `request` (None outside the middleware: a bare route in a test)."""
    value = getattr(request.state, 'request_id', None)
    return value if isinstance(value, str) else None
