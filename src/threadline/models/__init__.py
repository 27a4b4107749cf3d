"""Models: the `Model` interface, testing models, and (as extras) real providers.

`infer_model` turns what a user passes as `model=` into a `Model`: an instance is used as is;
`'test'` is a `TestModel`; `'demo'` the offline `DemoModel`; `'openai:<name>'` and `'anthropic:<name>'` name provider models.
"""

from __future__ import annotations

from ..exceptions import UserError
from ._base import Model, ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition
from ._render import render_history

__all__ = [
    'Model',
    'ModelProfile',
    'ModelRequestParameters',
    'ModelSettings',
    'ToolDefinition',
    'infer_model',
    'render_history',
]

_PROVIDERS = {'openai': 'OPENAI_API_KEY', 'anthropic': 'ANTHROPIC_API_KEY'}


def infer_model(model: Model | str) -> Model:
    """The `Model` for `model`: an instance, `'test'`, or a `'provider:model-name'` string."""
    if isinstance(model, Model):
        return model
    if not isinstance(model, str):
        raise UserError(f'`model` must be a Model instance or a model string, got {type(model).__name__}')
    if model == 'test':
        from .test import TestModel

        return TestModel()
    if model == 'demo':
        from .demo import DemoModel

        return DemoModel()
    provider, _, name = model.partition(':')
    if provider in _PROVIDERS and name:
        raise UserError(
            f'Model {model!r}: the {provider} provider is not available in this version of Threadline yet. '
            'Use a Model instance (TestModel, FunctionModel) meanwhile.'
        )
    raise UserError(
        f'Unknown model {model!r}. Use a Model instance, "test", or "openai:<model>" / "anthropic:<model>".'
    )
