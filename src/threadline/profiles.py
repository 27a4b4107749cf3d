"""Model profiles, at the import path pydantic-ai applications use (`from threadline.profiles
import ModelProfile`).

A `ModelProfile` says what a model accepts; a model's `profile=` takes one, a partial mapping
merged over the model's default (`profile={'context_window': 128_000}` for a custom or local
model), or a function of the default. `merge_profile` layers profiles the same way.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.models import DEFAULT_PROFILE, ModelProfile, ModelProfileSpec, merge_profile

__all__ = ['DEFAULT_PROFILE', 'ModelProfile', 'ModelProfileSpec', 'merge_profile']

publish(__name__, globals(), __all__)  # after every name above exists
