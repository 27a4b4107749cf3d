"""Which pages may talk to the server: a guard against cross-site requests and DNS rebinding.

Rules (each tested):
- Host: the request's `Host` must be one the server answers for. With `allowed_hosts=None` that
  is the loopback names (`localhost`, `127.0.0.1`, `[::1]`, any port) in dev mode (no API keys),
  where a DNS-rebinding page would otherwise read the conversations; with keys configured, any
  host (a key is what protects it there; set `allowed_hosts` behind a proxy all the same).
  Otherwise 403, before anything runs.
- Origin: an `/api/` request that a browser marks as coming from a page (`Origin`) must come from
  the server's own origin or one of `allowed_origins`; a browser's `Sec-Fetch-Site: cross-site`
  without an allowed origin is refused too. Requests without those headers (curl, SDKs, other
  servers) are not a browser's cross-site request and pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ['LOOPBACK_HOSTS', 'SameOriginGuard']

LOOPBACK_HOSTS = ('localhost', '127.0.0.1', '[::1]')


class SameOriginGuard:
    """ASGI middleware enforcing the module's rules."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str] | None,
        allowed_origins: Sequence[str] = (),
        dev_mode: bool,
    ) -> None:
        self.app = app
        hosts = allowed_hosts if allowed_hosts is not None else (LOOPBACK_HOSTS if dev_mode else None)
        self.hosts = None if hosts is None else {h.lower() for h in hosts}
        self.origins = {o.rstrip('/').lower() for o in allowed_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] != 'http':
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get('host', '').lower()
        refusal = self._refusal(scope, headers, host)
        if refusal is not None:
            await JSONResponse({'error': refusal}, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers, host: str) -> str | None:
        if self.hosts is not None and _bare(host) not in self.hosts:
            return 'this server does not answer for that Host (see allowed_hosts)'
        if not str(scope.get('path', '')).startswith('/api/'):
            return None
        origin = headers.get('origin')
        if origin is not None:
            own = f'{scope.get("scheme", "http")}://{host}'
            if origin.rstrip('/').lower() not in {own, *self.origins}:
                return 'a request from another site is refused (see allowed_origins)'
        elif headers.get('sec-fetch-site') == 'cross-site':
            return 'a request from another site is refused (see allowed_origins)'
        return None


def _bare(host: str) -> str:
    """`host` without its port (`[::1]:8000` → `[::1]`)."""
    if host.startswith('['):
        return host.split(']', 1)[0] + ']'
    return host.rsplit(':', 1)[0] if host.count(':') == 1 else host
