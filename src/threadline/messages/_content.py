"""User content: the items a `UserPromptPart` (and a tool's return value) can carry besides text."""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import os
import re
import urllib.parse
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from threadline.messages._base import WireStruct
from threadline.messages._formats import Kind, file_format, kind_of

__all__ = [
    'AudioUrl',
    'Base64Bytes',
    'BinaryImage',
    'BinaryContent',
    'CachePoint',
    'DocumentUrl',
    'FileUrl',
    'ForceDownloadMode',
    'ImageUrl',
    'LOADING',
    'MultiModalContent',
    'TextContent',
    'UploadedFile',
    'UploadedFileProviderName',
    'UserContent',
    'VideoUrl',
]

ForceDownloadMode = bool | Literal['allow-local']
UploadedFileProviderName = Literal[
    'anthropic', 'openai', 'google', 'google-cloud', 'google-gla', 'google-vertex', 'bedrock', 'xai'
]

# Extensions the platform's mime table may not know; checked first so results don't vary by host.
_EXTRA_MEDIA_TYPES = {
    '.md': 'text/markdown',
    '.markdown': 'text/markdown',
    '.csv': 'text/csv',
    '.txt': 'text/plain',
    '.json': 'application/json',
    '.yaml': 'application/yaml',
    '.yml': 'application/yaml',
    '.pdf': 'application/pdf',
    '.png': 'image/png',
    '.jpg': 'image/jpeg',
    '.jpeg': 'image/jpeg',
    '.gif': 'image/gif',
    '.webp': 'image/webp',
    '.mp3': 'audio/mpeg',
    '.wav': 'audio/wav',
    '.ogg': 'audio/ogg',
    '.flac': 'audio/flac',
    '.aac': 'audio/aac',
    '.m4a': 'audio/mp4',
    '.mp4': 'video/mp4',
    '.mov': 'video/quicktime',
    '.webm': 'video/webm',
    '.mkv': 'video/x-matroska',
    '.aiff': 'audio/aiff',
    '.asciidoc': 'text/x-asciidoc',
    '.html': 'text/html',
    '.htm': 'text/html',
    '.xml': 'application/xml',
    '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
}
_YOUTUBE_HOSTS = ('youtu.be', 'youtube.com', 'www.youtube.com', 'm.youtube.com')

LOADING: ContextVar[bool] = ContextVar('threadline_loading_messages', default=False)
"""True while the codec loads a history: `BinaryContent` with an image media type then becomes a
`BinaryImage`, as pydantic-ai's loader narrows it. Constructed content keeps the class it was made
with, so a history bridged from pydantic-ai keeps its exact types."""


_MEDIA_TYPE = re.compile(r'[A-Za-z0-9][\w!#$&^.+-]*/[A-Za-z0-9][\w!#$&^.+-]*')


def _guess_media_type(path: str) -> str | None:
    """Media type from a URL or file name's extension (or a `data:` URL's own header), or None
    when it has no known one."""
    if path[:5].lower() == 'data:':
        header = path[5:].split(',', 1)[0].split(';', 1)[0].strip()
        if not header:
            return 'text/plain'  # RFC 2397: an empty header means text/plain
        # Only a `type/subtype` header names one: `data://x.png` is no data URL, and has none.
        return header.lower() if _MEDIA_TYPE.fullmatch(header) else None
    try:
        parsed = urlparse(path).path or path
    except ValueError:
        parsed = path
    dot = parsed.rfind('.')
    if dot != -1:
        known = _EXTRA_MEDIA_TYPES.get(parsed[dot:].lower())
        if known:
            return known
    guessed, _ = mimetypes.guess_type(parsed, strict=False)
    return guessed


def _short_sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:6]


class Base64Bytes(bytes):
    """Bytes that serialize as URL-safe base64 with padding (the reference's wire form).

    Standard and URL-safe base64 are both accepted on load.
    """

    @classmethod
    def decode_text(cls, text: str) -> Base64Bytes:
        try:
            return cls(base64.b64decode(text.replace('-', '+').replace('_', '/'), validate=True))
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f'invalid base64 data: {exc}') from None

    def encode_text(self) -> str:
        return base64.urlsafe_b64encode(self).decode('ascii')


class _TextContentFields(WireStruct, tag_field='kind'):
    content: str


class TextContent(_TextContentFields, kw_only=True, tag='text-content'):
    """Text with application metadata that is stored with the history but never sent to a model."""

    metadata: Any = None

    kind: ClassVar[str] = 'text-content'


class _FileUrlFields(WireStruct, tag_field='kind'):
    url: str


class FileUrl(_FileUrlFields, kw_only=True):
    """A file the model provider (or Threadline) fetches from a URL.

    `media_type` and `identifier` are filled in at construction when not given (from the URL's
    extension, and the first six hex digits of the URL's sha1); pass them again if you `replace`
    the URL.
    """

    media_type: str | None = None
    identifier: str | None = None
    force_download: ForceDownloadMode = False
    vendor_metadata: dict[str, Any] | None = None

    kind: ClassVar[str]

    def __post_init__(self) -> None:
        if self.media_type is None:
            self.media_type = self._infer_media_type()
        if self.identifier is None:
            self.identifier = _short_sha1(self.url.encode())

    def _infer_media_type(self) -> str | None:
        return _guess_media_type(self.url)

    @property
    def format(self) -> str:
        """The format name models know this file by (`jpeg`, `mkv`, `pdf`); raises
        `UnknownMediaType` (a ValueError and a KeyError) when its media type has none."""
        return file_format(self._family if self._family else kind_of(self.media_type or ''), self.media_type)

    _family: ClassVar[Kind | None] = None


class ImageUrl(FileUrl, kw_only=True, tag='image-url'):
    kind: ClassVar[str] = 'image-url'
    _family: ClassVar[Kind | None] = 'image'


class AudioUrl(FileUrl, kw_only=True, tag='audio-url'):
    kind: ClassVar[str] = 'audio-url'
    _family: ClassVar[Kind | None] = 'audio'


class DocumentUrl(FileUrl, kw_only=True, tag='document-url'):
    kind: ClassVar[str] = 'document-url'
    _family: ClassVar[Kind | None] = 'document'


class VideoUrl(FileUrl, kw_only=True, tag='video-url'):
    kind: ClassVar[str] = 'video-url'
    _family: ClassVar[Kind | None] = 'video'

    def _infer_media_type(self) -> str | None:
        if self.is_youtube:
            return 'video/mp4'
        return _guess_media_type(self.url)

    @property
    def is_youtube(self) -> bool:
        try:
            return urlparse(self.url).hostname in _YOUTUBE_HOSTS
        except ValueError:
            return False


class _BinaryFields(WireStruct, tag_field='kind'):
    data: Base64Bytes


class BinaryContent(_BinaryFields, kw_only=True, tag='binary'):
    """Inline file bytes with their media type; `identifier` defaults to a short sha1 of the data."""

    media_type: str
    identifier: str | None = None
    vendor_metadata: dict[str, Any] | None = None

    kind: ClassVar[str] = 'binary'

    def __post_init__(self) -> None:
        data = self.data
        if type(data) is not Base64Bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f'BinaryContent.data must be bytes, got {type(data).__name__}')
            self.data = data = Base64Bytes(data)
        if self.identifier is None:
            self.identifier = _short_sha1(data)
        if type(self) is BinaryContent and self.media_type.startswith('image/') and LOADING.get():
            # Loaded (decoded or converted, never constructed) image bytes are a `BinaryImage`, as
            # pydantic-ai's validator narrows them; the layout is the same, so the class can change.
            self.__class__ = BinaryImage

    @property
    def is_image(self) -> bool:
        return self.media_type.startswith('image/')

    @property
    def is_audio(self) -> bool:
        return self.media_type.startswith('audio/')

    @property
    def is_video(self) -> bool:
        return self.media_type.startswith('video/')

    @property
    def is_document(self) -> bool:
        return not (self.is_image or self.is_audio or self.is_video)

    @property
    def base64(self) -> str:
        """Standard base64 of the data, as most provider APIs want it."""
        return base64.b64encode(self.data).decode('ascii')

    @property
    def data_uri(self) -> str:
        return f'data:{self.media_type};base64,{self.base64}'

    @property
    def format(self) -> str:
        """The format name models know this content by (`jpeg`, `mp3`, `pdf`); raises
        `UnknownMediaType` when its media type has none for its kind."""
        return file_format(kind_of(self.media_type), self.media_type)

    @staticmethod
    def narrow_type(content: BinaryContent) -> BinaryContent:
        """`content` as a `BinaryImage` when it is an image, else unchanged."""
        if content.is_image and not isinstance(content, BinaryImage):
            return BinaryImage(
                data=content.data,
                media_type=content.media_type,
                identifier=content.identifier,
                vendor_metadata=content.vendor_metadata,
            )
        return content

    @classmethod
    def from_data_uri(cls, data_uri: str) -> BinaryContent:
        """The content of a base64 `data:` URI (a `BinaryImage` for an image); a URI of another
        form is a `ValueError` that says what was expected."""
        if not data_uri.startswith('data:'):
            raise ValueError(f'a data URI starts with "data:", not {data_uri[:16]!r}')
        media_type, marker, payload = data_uri[5:].partition(';base64,')
        if not marker:
            raise ValueError('only base64 data URIs are supported ("data:<media type>;base64,<data>")')
        try:
            data = base64.b64decode(urllib.parse.unquote_to_bytes(payload), validate=True)
        except ValueError as exc:
            raise ValueError(f"the data URI's payload is not valid base64: {exc}") from None
        return cls.narrow_type(cls(data=Base64Bytes(data), media_type=media_type or 'application/octet-stream'))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> BinaryContent:
        """The bytes of the file at `path`, with the media type its name suggests
        (`application/octet-stream` when none does); a `BinaryImage` for an image."""
        file = Path(path)
        if not file.is_file():
            raise FileNotFoundError(f'no file at {file}')
        media_type = mimetypes.guess_type(file.name)[0] or 'application/octet-stream'
        return cls.narrow_type(cls(data=Base64Bytes(file.read_bytes()), media_type=media_type))


class BinaryImage(BinaryContent, kw_only=True, tag='binary'):
    """`BinaryContent` that is an image: what image generation returns, `from_path`/`from_data_uri`
    make for an image, and image bytes load as (see `LOADING`). On the wire it is the same `binary`
    content."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.is_image:
            raise ValueError(f'BinaryImage needs an image media type, not {self.media_type!r}')


class _UploadedFileFields(WireStruct, tag_field='kind'):
    file_id: str
    provider_name: UploadedFileProviderName


class UploadedFile(_UploadedFileFields, kw_only=True, tag='uploaded-file'):
    """A reference to a file already uploaded to a provider's file store."""

    media_type: str | None = None
    vendor_metadata: dict[str, Any] | None = None
    identifier: str | None = None

    kind: ClassVar[str] = 'uploaded-file'

    @property
    def format(self) -> str:
        """The format name models know this file by (`pdf`, `png`); raises `UnknownMediaType`
        when its media type has none."""
        return file_format(kind_of(self.media_type or ''), self.media_type)

    def __post_init__(self) -> None:
        if self.media_type is None:
            self.media_type = _guess_media_type(self.file_id) or 'application/octet-stream'
        if self.identifier is None:
            self.identifier = _short_sha1(self.file_id.encode())


class CachePoint(WireStruct, kw_only=True, tag_field='kind', tag='cache-point'):
    """Marks the end of a prompt prefix the provider should cache."""

    ttl: Literal['5m', '1h'] = '5m'

    kind: ClassVar[str] = 'cache-point'


MultiModalContent = ImageUrl | AudioUrl | DocumentUrl | VideoUrl | BinaryContent | UploadedFile
UserContent = (
    str | TextContent | ImageUrl | AudioUrl | DocumentUrl | VideoUrl | BinaryContent | UploadedFile | CachePoint
)

MULTIMODAL_TYPES: tuple[type, ...] = (ImageUrl, AudioUrl, DocumentUrl, VideoUrl, BinaryContent, UploadedFile)
FILE_URL_KINDS: dict[str, type[FileUrl]] = {c.kind: c for c in (ImageUrl, AudioUrl, DocumentUrl, VideoUrl)}
