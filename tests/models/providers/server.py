"""A local HTTP server that answers the official SDK clients with recorded provider responses.

Responses are queued per test (a JSON body with a status, or an SSE stream, optionally after a `delay`); every request body is
recorded, so tests check exactly what the SDK sent (unless `record=False`: a benchmark's bodies,
kept and parsed, would load the garbage collector of the process it measures). Only 127.0.0.1 is
used.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).with_name('fixtures')


def fixture(name: str) -> dict[str, Any]:
    """A recorded response: `{"source": ..., "status": ..., "body": ...}` or `{"source": ..., "sse": [...]}`."""
    return json.loads((FIXTURES / name).read_text())


class ProviderServer:
    def __init__(self, *, record: bool = True) -> None:
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get('content-length', 0))
                raw = self.rfile.read(length)
                if record:
                    server.requests.append(
                        {
                            'path': self.path,
                            'headers': {k.lower(): v for k, v in self.headers.items()},
                            'body': json.loads(raw or b'{}'),
                        }
                    )
                reply = (
                    server.replies.popleft()
                    if server.replies
                    else {'status': 500, 'body': {'error': 'no reply queued'}}
                )
                if reply.get('delay'):  # seconds before answering: a client's timeout to run out
                    time.sleep(reply['delay'])
                if 'sse' in reply:
                    self.send_response(200)
                    self.send_header('content-type', 'text/event-stream')
                    self.end_headers()
                    for line in reply['sse']:
                        self.wfile.write((line + '\n\n').encode())
                    return
                payload = reply['body'] if isinstance(reply['body'], str) else json.dumps(reply['body'])
                self.send_response(reply.get('status', 200))
                self.send_header('content-type', 'application/json')
                self.send_header('content-length', str(len(payload.encode())))
                for name, value in reply.get('headers', {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload.encode())

        self._httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f'http://127.0.0.1:{self._httpd.server_address[1]}'

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, *replies: dict[str, Any]) -> None:
        self.replies.extend(replies)

    def bodies(self) -> list[dict[str, Any]]:
        return [r['body'] for r in self.requests]
