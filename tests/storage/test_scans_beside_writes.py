"""A read that goes through a whole history (a load, a search) runs on SQLite's second connection:
while one is under way, another tenant's write on the first connection goes on, and a load sees
every write committed before it began."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from threadline.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import SQLiteStore


def _turn(i: int) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(f'question {i}')]), ModelResponse(parts=[TextPart(f'answer {i}')])]


def test_a_write_goes_on_while_a_load_of_another_conversation_is_under_way(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'store.db')
    history = [m for i in range(50) for m in _turn(i)]
    store.sync.append('long', history, scope='tenant-a')
    inside, release = threading.Event(), threading.Event()
    real = store.sync._decode  # the load decodes inside its read transaction

    def held(*args: Any, **kwargs: Any) -> list[ModelMessage]:
        if threading.current_thread() is not threading.main_thread():
            inside.set()
            release.wait(10)
        return real(*args, **kwargs)

    store.sync._decode = held  # type: ignore[method-assign]
    loaded: list[Any] = []
    loader = threading.Thread(target=lambda: loaded.append(store.sync.load('long', scope='tenant-a')))
    loader.start()
    try:
        assert inside.wait(10)
        # the load holds its transaction open; another tenant's turn is written all the same
        done = threading.Event()
        other = _turn(0)
        writer = threading.Thread(target=lambda: (store.sync.append('other', other, scope='tenant-b'), done.set()))
        writer.start()
        assert done.wait(5), 'the write waited for the load'
        writer.join()
    finally:
        release.set()
        loader.join(10)
    assert loaded[0].messages == history
    del store.sync._decode
    assert store.sync.load('other', scope='tenant-b').messages == other
    store.close()


def test_a_load_sees_what_was_committed_before_it_began(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'store.db')
    history: list[ModelMessage] = []
    for i in range(20):
        turn = _turn(i)
        store.sync.append('c', turn, scope='s')
        history += turn
        assert store.sync.load('c', scope='s').messages == history
        assert [h.conversation_id for h in store.sync.search(f'answer {i}', scope='s')][:1] == ['c']
    store.close()
