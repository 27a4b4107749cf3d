"""Realtime sessions, at the import path the documents use (`from threadline.realtime import ...`).

The implementation lives with the run loop it shares (`threadline.agent.realtime`):

    async with agent.realtime(model).session() as session:
        session.enqueue('Hello!')
        async for event in session:
            ...
"""

from __future__ import annotations

from threadline.agent.realtime import (
    AgentRealtime,
    RealtimeConnection,
    RealtimeModel,
    RealtimeSession,
    RealtimeTextDelta,
    RealtimeToolCall,
    RealtimeToolResult,
    RealtimeTurnComplete,
    TestRealtimeModel,
)

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
