"""Two turns of the real `@ag-ui/client` against the server's AG-UI endpoint: the final snapshot keeps
the client's message ids, so each `runAgent()` reports as new only the answer the run added."""

from __future__ import annotations

import json
import subprocess

from tests.server._live import site  # noqa: F401 - the fixture: a live server over a SQLite store
from tests.ui.test_vercel_ai_client import JS, node  # noqa: F401 - the fixture that provides Node and the packages
from threadline.storage import AsyncStore, SyncStore


def test_new_messages_are_only_what_each_run_added(
    node: str,  # noqa: F811
    site: tuple[str, AsyncStore[SyncStore]],  # noqa: F811
) -> None:
    url, store = site
    done = subprocess.run(
        [node, str(JS / 'ag_ui_two_turns.mjs'), url, 'key-a'], capture_output=True, text=True, timeout=60, cwd=JS
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    [first, second] = seen['turns']
    assert [(m['role'], m['content']) for m in first] == [('assistant', 'answer 1 to first')]
    assert [(m['role'], m['content']) for m in second] == [('assistant', 'answer 2 to second')]
    ids = [m['id'] for m in seen['messages']]
    assert [m['role'] for m in seen['messages']] == ['user', 'assistant', 'user', 'assistant']
    assert (ids[0], ids[2]) == ('u1', 'u2') and ids[1] == first[0]['id'] and len(set(ids)) == 4
    [summary] = store.sync.list('tenant-a')
    assert summary.message_count == 4
