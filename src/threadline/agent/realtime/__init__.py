"""Realtime sessions (seed 000): a live, turn-taking conversation with a realtime model that builds
the same history as agent runs, with `enqueue` delivered in the runs' `asap` / `when_idle` modes.

    async with agent.realtime(model).session() as session:
        session.enqueue('Hello!')
        async for event in session:
            ...

No realtime provider ships yet: `TestRealtimeModel` is a scripted model for tests, and a provider
implements `RealtimeModel.connect` (see `_model.py`).
"""

from __future__ import annotations

from threadline._public import publish
from threadline.agent.realtime._model import (
    RealtimeConnection,
    RealtimeModel,
    RealtimeTextDelta,
    RealtimeToolCall,
    RealtimeTurnComplete,
    TestRealtimeModel,
)
from threadline.agent.realtime._session import AgentRealtime, RealtimeSession, RealtimeToolResult

__all__ = [
    'AgentRealtime',
    'RealtimeConnection',
    'RealtimeModel',
    'RealtimeSession',
    'RealtimeTextDelta',
    'RealtimeToolCall',
    'RealtimeToolResult',
    'RealtimeTurnComplete',
    'TestRealtimeModel',
]

publish('threadline.realtime', globals(), __all__)  # users import them from threadline.realtime
