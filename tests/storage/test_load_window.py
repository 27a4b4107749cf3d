"""`load(last=k)`: the window of a long history that a UI or a run start reads.

Every backend returns the same window, and it is the one a caller may send to a model: it ends
at the stored tip, starts at a request, and holds the call of every tool result in it. It is as
short as that allows: the first such start at or after the last `k` messages, else the nearest
one before them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from threadline.messages import ModelMessage
from threadline.storage import FileStore, MemoryStore, SQLiteStore


def history(turns: list[list[int]]) -> list[ModelMessage]:
    """One user turn per entry; each entry lists the number of tool calls in each tool round."""
    out: list[ModelMessage] = []
    for t, rounds in enumerate(turns):
        out.append(ModelRequest(parts=[UserPromptPart(f'question {t}')]))
        for r, calls in enumerate(rounds):
            ids = [f't{t}r{r}c{c}' for c in range(calls)]
            out.append(ModelResponse(parts=[ToolCallPart('look', {'n': c}, i) for c, i in enumerate(ids)]))
            out.append(ModelRequest(parts=[ToolReturnPart('look', 'found', i) for i in ids]))
        out.append(ModelResponse(parts=[TextPart(f'answer {t}')]))
    return out


def starts_safely(messages: list[ModelMessage], cut: int) -> bool:
    """The rule a window's first message must meet, stated on its own terms."""
    if not isinstance(messages[cut], ModelRequest):
        return False
    called: set[str] = set()
    for message in messages[cut:]:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.tool_call_id)
            if isinstance(part, ToolReturnPart) and part.tool_call_id not in called:
                return False
    return True


def expected_start(messages: list[ModelMessage], last: int) -> int:
    wanted = max(0, len(messages) - last)
    after = [c for c in range(wanted, len(messages)) if starts_safely(messages, c)]
    before = [c for c in range(wanted) if starts_safely(messages, c)]
    return after[0] if after else before[-1]


turns = st.lists(st.lists(st.integers(1, 3), max_size=4), min_size=1, max_size=12)


@settings(max_examples=examples(100), deadline=None)
@given(turns, st.data())
def test_every_backend_loads_the_shortest_safe_window(shape: list[list[int]], data: st.DataObject) -> None:
    messages = history(shape)
    lasts = data.draw(st.lists(st.integers(1, len(messages) + 3), min_size=1, max_size=6), label='last')
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[Any] = [MemoryStore(), SQLiteStore(Path(tmp) / 'w.db'), FileStore(Path(tmp) / 'files')]
        for store in stores:
            store.sync.append('c', messages, scope='s')
        for last in lasts:
            start = expected_start(messages, last)
            for store in stores:
                window = store.sync.load('c', scope='s', last=last)
                assert window.messages == messages[start:], (type(store).__name__, last)
                assert (window.offset, window.length) == (start, len(messages))
        for store in stores:
            store.close()
