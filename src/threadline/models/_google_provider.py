"""Where to reach the Gemini API (beside the model, so `google.py` holds the wire mapping only)."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from threadline.exceptions import UserError
from threadline.models._lifecycle import ClientLifecycle
from threadline.models._provider import require_extra

__all__ = ['GoogleProvider']


class GoogleProvider(ClientLifecycle):
    """Where to reach the Gemini API: `api_key` (default `GOOGLE_API_KEY`, then `GEMINI_API_KEY`)
    and an optional `base_url` (default the SDK's)."""

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None) -> None:
        require_extra('google.genai', 'google')
        from google import genai
        from google.genai import types

        key = api_key or os.environ.get('GOOGLE_API_KEY') or os.environ.get('GEMINI_API_KEY')
        if not key:
            raise UserError(
                'the google provider needs an API key: set GOOGLE_API_KEY (or GEMINI_API_KEY), or pass api_key= '
                'to the provider'
            )
        options = types.HttpOptions(base_url=base_url) if base_url else None
        self._open_client(partial(genai.Client, api_key=key, http_options=options), owned=True)

    async def _close_client(self, client: Any) -> None:
        await client.aio.aclose()
