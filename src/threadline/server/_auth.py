"""Who is calling: an API key names the caller's scope (tenant), as Starlette authentication.

Rules (each tested through the app):
- Every `/api/` request names a key (`Authorization: Bearer <key>` or `X-API-Key`); the key maps
  to its scope, and an endpoint reads the scope from `request.user` (a `ScopeUser`), never from
  the request itself. No key, or an unknown one, is a 401 before any endpoint runs.
- Every configured key is compared, in constant time (`trust.keys.same_tag`), so the time taken
  says nothing of which key matched; keys are never logged.
- With no keys configured (dev mode) every caller is the one local scope, `DEV_SCOPE`.
- Paths outside `/api/` (the page, its static files, `/healthz`) need no key.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response

from threadline.trust.keys import same_tag

__all__ = ['DEV_SCOPE', 'MISSING_KEY', 'ApiKeyBackend', 'ScopeUser', 'refuse']

DEV_SCOPE = 'local'
MISSING_KEY = 'an API key is required (Authorization: Bearer <key>)'


class ScopeUser(BaseUser):
    """The caller, known by the scope its key maps to."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.scope


class ApiKeyBackend(AuthenticationBackend):
    """Maps an API key to its scope (see the module docstring); `keys=None` is dev mode."""

    def __init__(self, keys: Mapping[str, str] | None) -> None:
        self.keys = dict(keys) if keys is not None else None

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if not conn.url.path.startswith('/api/'):
            return None
        if self.keys is None:
            return AuthCredentials(['api']), ScopeUser(DEV_SCOPE)
        header = conn.headers.get('authorization', '')
        given = header[7:] if header.lower().startswith('bearer ') else conn.headers.get('x-api-key', '')
        found = None
        for key, scope in self.keys.items():  # every key is compared, so timing says nothing of which
            if same_tag(key, given):
                found = scope
        if not given or found is None:
            raise AuthenticationError(MISSING_KEY)
        return AuthCredentials(['api']), ScopeUser(found)


def refuse(conn: HTTPConnection, error: AuthenticationError) -> Response:
    """The 401 for a request without a valid key."""
    return JSONResponse({'error': str(error)}, status_code=401)
