"""A realtime session's history (pydantic-ai's `SpeechPart`s) continued by a text model: Threadline
keeps the speech parts byte for byte, and the model reads them as pydantic-ai 2.62 sends them
(the user's transcript as a prompt, the assistant's as text with its interruption marked)."""

import json
import warnings
from typing import Any

from tests.compat._libs import library, parts_of


def _history() -> bytes:
    from pydantic_ai.messages import (
        BinaryContent,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        SpeechPart,
        UserPromptPart,
    )

    return ModelMessagesTypeAdapter.dump_json(
        [
            ModelRequest(parts=[SpeechPart(speaker='user', transcript='what time is it?')]),
            ModelResponse(
                parts=[
                    SpeechPart(
                        speaker='assistant',
                        transcript='It is noon',
                        interrupted_at_ms=800,
                        id='i1',
                        provider_name='openai',
                    ),
                    SpeechPart(speaker='assistant', transcript=None),
                ]
            ),
            ModelRequest(
                parts=[
                    SpeechPart(speaker='user', transcript=None, audio=BinaryContent(b'RIFF', media_type='audio/wav'))
                ]
            ),
            ModelResponse(parts=[SpeechPart(speaker='assistant', transcript='Sorry, go on')], state='interrupted'),
            ModelRequest(parts=[UserPromptPart('and tomorrow?')]),
        ]
    )


def _sent(name: str, raw: bytes) -> list[Any]:
    lib = library(name)
    if name == 'ref':
        from pydantic_ai.messages import ModelMessagesTypeAdapter
    else:
        from threadline.messages import ModelMessagesTypeAdapter  # type: ignore[assignment]
    seen: list[Any] = []

    def answer(messages: Any, info: Any) -> Any:
        seen.extend(parts_of(messages, 'user-prompt', 'text'))
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    history = ModelMessagesTypeAdapter.validate_json(raw)
    lib.Agent(lib.FunctionModel(answer)).run_sync(message_history=history)
    return seen


def test_speech_is_sent_as_its_transcript() -> None:
    raw = _history()
    ours = _sent('ours', raw)
    assert ours == _sent('ref', raw)
    assert [p[2] for p in ours] == [
        'what time is it?',
        'It is noon\n[Interrupted after 800 ms]',
        'Sorry, go on\n[Interrupted]',
        'and tomorrow?',
    ]


def test_speech_parts_survive_a_round_trip_unchanged() -> None:
    from threadline.messages import ModelMessagesTypeAdapter

    raw = _history()
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # loading and writing back speech warns of nothing
        back = ModelMessagesTypeAdapter.dump_json(ModelMessagesTypeAdapter.validate_json(raw))
    assert json.loads(back) == json.loads(raw)
