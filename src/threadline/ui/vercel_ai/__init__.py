"""The Vercel AI SDK's chat protocol (`useChat`): `UIMessage` histories both ways
(`VercelAIAdapter`) and the UI message stream for a run (`ui_message_chunks`, `sse`)."""

from threadline.ui.vercel_ai._adapter import VercelAIAdapter
from threadline.ui.vercel_ai._stream import STREAM_HEADERS, sse, ui_message_chunks
from threadline.ui.vercel_ai.request_types import UIMessage

__all__ = ['STREAM_HEADERS', 'UIMessage', 'VercelAIAdapter', 'sse', 'ui_message_chunks']
