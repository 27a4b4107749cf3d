"""A model's budget, for the run loop and the capabilities that watch it: how many tokens the next
request will fill (`context_tokens`, `estimate_added_tokens`), what share of the window that is
(`context_window_fraction`), and what a response costs (`price_of`, `priced`, from genai-prices)."""

from __future__ import annotations

from threadline.models._prices import price_of, priced
from threadline.models._window import context_tokens, context_window_fraction, estimate_added_tokens

__all__ = ['context_tokens', 'context_window_fraction', 'estimate_added_tokens', 'price_of', 'priced']
