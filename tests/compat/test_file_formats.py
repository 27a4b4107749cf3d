"""Media types inferred from URLs and the format names of files match the reference, kind by kind."""

from __future__ import annotations

import mimetypes
from typing import Any

import pydantic_ai.messages as reference
import pytest

import threadline.messages as ours
from threadline.messages._formats import UnknownMediaType

EXTENSIONS = sorted(
    {e for e in mimetypes.types_map if e.isascii() and e[1:].isalnum()}
    | {'.aiff', '.asciidoc', '.mkv', '.opus', '.3gp', '.md', '.yaml', '.heic', '.webp', '.m4a', '.flac', '.aac', '.jpg'}
)
KINDS = ['ImageUrl', 'VideoUrl', 'AudioUrl', 'DocumentUrl']


def _outcome(make: Any) -> object:
    try:
        return make()
    except (KeyError, ValueError):
        return 'refused'


def _read(module: Any, kind: str, url: str, attribute: str) -> object:
    return _outcome(lambda: getattr(getattr(module, kind)(url=url), attribute))


@pytest.mark.parametrize('kind', KINDS)
def test_url_media_types_and_formats_match_the_reference(kind: str) -> None:
    differ = []
    for ext in EXTENSIONS:
        url = f'https://example.com/file{ext}'
        theirs = _read(reference, kind, url, 'media_type')
        mine = getattr(ours, kind)(url=url).media_type
        if theirs == 'refused':
            # Deliberate: the reference raises when it reads an unknown media type; ours is a stored
            # field, so the file stays loadable and serializable, with media_type None.
            assert mine is None, (ext, mine)
            continue
        their_format, my_format = _read(reference, kind, url, 'format'), _read(ours, kind, url, 'format')
        if (theirs, their_format) != (mine, my_format):
            differ.append((ext, theirs, their_format, mine, my_format))
    assert differ == []


@pytest.mark.parametrize('media_type', ['image/jpeg', 'video/3gpp', 'audio/aiff', 'text/markdown', 'application/json'])
def test_binary_content_formats_match_the_reference(media_type: str) -> None:
    theirs = _outcome(lambda: reference.BinaryContent(data=b'x', media_type=media_type).format)
    assert _outcome(lambda: ours.BinaryContent(data=b'x', media_type=media_type).format) == theirs


def test_an_unknown_format_is_both_errors_the_reference_raises() -> None:
    with pytest.raises(UnknownMediaType, match='Unknown image media type: video/mp4') as caught:
        _ = ours.ImageUrl(url='https://x/a.mp4').format
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize('kind', KINDS)
def test_a_url_without_a_known_type_runs_dumps_null_and_refuses_a_format_in_both(kind: str) -> None:
    """The kept difference stays small: only reading `.media_type` differs (None here, a ValueError
    there); a run over the file, its JSON (`"media_type": null`) and `.format` (a ValueError) match."""
    from pydantic_ai import Agent as TheirAgent

    from threadline import Agent as OurAgent

    url = 'https://example.com/file.unknownext'
    dumps = []
    for agent, module in ((TheirAgent('test'), reference), (OurAgent('test'), ours)):
        item = getattr(module, kind)(url=url)
        with pytest.raises(ValueError):
            _ = item.format
        request = agent.run_sync(['look', item]).all_messages()[0]
        dumps.append(module.ModelMessagesTypeAdapter.dump_python([request], mode='json')[0]['parts'][0]['content'][1])
    assert dumps[1]['media_type'] is None
    assert dumps[1] == {key: dumps[0][key] for key in dumps[1]}
