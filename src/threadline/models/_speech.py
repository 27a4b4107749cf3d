"""A realtime session's spoken turns (pydantic-ai's `SpeechPart`), sent to a model that reads text.

Threadline keeps a `speech` part as pydantic-ai wrote it (an opaque part: stored, loaded and
written back byte for byte). Rules for sending one (pydantic-ai 2.62's `prepare_messages`):
- the user's speech is a user prompt of its transcript;
- the assistant's is text: its transcript, then `[Interrupted after N ms]` where the listener cut
  it off, or `[Interrupted]` on the last speech of an interrupted response that says no more;
- speech with nothing to say (no transcript, no interruption) is left out; the marker is written
  on the way to the model only, never into the history.
"""

from __future__ import annotations

from threadline.messages import ModelResponse, OpaquePart, TextPart, UserPromptPart

__all__ = ['SPEECH', 'assistant_speech', 'user_speech']

SPEECH = 'speech'


def user_speech(part: OpaquePart) -> UserPromptPart | None:
    transcript = part.data.get('transcript')
    return UserPromptPart(transcript) if isinstance(transcript, str) and transcript else None


def assistant_speech(message: ModelResponse, index: int) -> TextPart | None:
    part = message.parts[index]
    assert isinstance(part, OpaquePart)
    transcript, cut_at = part.data.get('transcript'), part.data.get('interrupted_at_ms')
    lines = [transcript] if isinstance(transcript, str) and transcript else []
    if isinstance(cut_at, int):
        lines.append(f'[Interrupted after {cut_at} ms]')
    elif message.state == 'interrupted' and index == _last_speech(message):
        lines.append('[Interrupted]')
    return TextPart('\n'.join(lines)) if lines else None


def _last_speech(message: ModelResponse) -> int:
    return max(i for i, p in enumerate(message.parts) if isinstance(p, OpaquePart) and p.part_kind == SPEECH)
