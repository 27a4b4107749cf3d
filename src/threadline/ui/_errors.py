"""What a chat client may read of a failed run (shared by the protocol streams)."""

from __future__ import annotations

from threadline.exceptions import ConflictError

__all__ = ['public_error']


def public_error(error: Exception, *, detail: bool) -> str:
    """The error text a stream sends: with `detail`, the exception's type and message; otherwise a
    store conflict's own message (it names no content) or only that the run failed, as an
    exception's text can carry the data the run failed on."""
    if detail:
        return f'{type(error).__name__}: {error}'
    return str(error) if isinstance(error, ConflictError) else 'The run failed.'
