"""The Vercel AI SDK's chat protocol (`useChat`): `UIMessage` histories both ways
(`VercelAIAdapter`) and the UI message stream for a run (`ui_message_chunks`, `sse`)."""

from ._adapter import VercelAIAdapter
from ._stream import STREAM_HEADERS, sse, ui_message_chunks
from .request_types import UIMessage

__all__ = ['STREAM_HEADERS', 'UIMessage', 'VercelAIAdapter', 'sse', 'ui_message_chunks']
