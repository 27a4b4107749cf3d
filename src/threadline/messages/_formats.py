"""The short format name of a file's media type (`jpeg`, `mkv`, `pdf`), per kind of content.

Provider APIs name formats, not media types; each kind of content knows only the formats models
accept for it, as the reference does. An unknown one raises `UnknownMediaType`, which is both a
`ValueError` and a `KeyError`: the reference raises one or the other depending on the kind.
"""

from __future__ import annotations

from typing import Literal

from threadline.exceptions import UnknownMediaType

__all__ = ['FORMATS', 'UnknownMediaType', 'file_format', 'kind_of']

Kind = Literal['image', 'audio', 'video', 'document']

FORMATS: dict[Kind, dict[str, str]] = {
    'image': {'image/jpeg': 'jpeg', 'image/png': 'png', 'image/gif': 'gif', 'image/webp': 'webp'},
    'audio': {
        'audio/mpeg': 'mp3',
        'audio/wav': 'wav',
        'audio/flac': 'flac',
        'audio/ogg': 'oga',
        'audio/aiff': 'aiff',
        'audio/aac': 'aac',
    },
    'video': {
        'video/x-matroska': 'mkv',
        'video/quicktime': 'mov',
        'video/mp4': 'mp4',
        'video/webm': 'webm',
        'video/x-flv': 'flv',
        'video/mpeg': 'mpeg',
        'video/x-ms-wmv': 'wmv',
        'video/3gpp': 'three_gp',
    },
    'document': {
        'application/pdf': 'pdf',
        'text/plain': 'txt',
        'text/csv': 'csv',
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
        'text/html': 'html',
        'text/markdown': 'md',
        'application/msword': 'doc',
        'application/vnd.ms-excel': 'xls',
    },
}


def kind_of(media_type: str) -> Kind:
    for prefix in ('image', 'audio', 'video'):
        if media_type.startswith(prefix + '/'):
            return prefix
    return 'document'


def file_format(kind: Kind, media_type: str | None) -> str:
    """The format name of `media_type` as content of `kind`; `UnknownMediaType` when it has none."""
    name = FORMATS[kind].get(media_type or '')
    if name is None:
        raise UnknownMediaType(f'Unknown {kind} media type: {media_type}')
    return name
