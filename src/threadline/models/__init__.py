"""Models: the `Model` interface, testing models, and (as extras) real providers.

`infer_model` turns what a user passes as `model=` into a `Model`: an instance is used as is;
`'test'` is a `TestModel`; `'demo'` the offline `DemoModel`; `'openai:<name>'` (Chat Completions),
`'openai-responses:<name>'`, `'anthropic:<name>'` and `'google:<name>'` name provider models.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.exceptions import (
    FallbackExceptionGroup,
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    UnknownModel,
    UserError,
)
from threadline.models._base import (
    Model,
    ModelProfile,
    ModelRequestParameters,
    ModelSettings,
    OutputObjectDefinition,
    ThinkingEffort,
    ThinkingLevel,
    ToolDefinition,
)
from threadline.models._prepared import PreparedHistory
from threadline.models._profile import DEFAULT_PROFILE, ModelProfileSpec, merge_profile
from threadline.models._render import feedback_text, render_history
from threadline.models._stream import CompleteResponseStream, StreamedResponse
from threadline.models.demo import DemoModel
from threadline.models.fallback import FallbackModel
from threadline.models.test import TestModel

__all__ = [
    'DEFAULT_PROFILE',
    'ModelProfileSpec',
    'merge_profile',
    'CompleteResponseStream',
    'FallbackExceptionGroup',
    'FallbackModel',
    'Model',
    'ModelAPIError',
    'ModelConnectionError',
    'ModelHTTPError',
    'ModelProfile',
    'ModelRequestParameters',
    'OutputObjectDefinition',
    'ModelSettings',
    'PreparedHistory',
    'StreamedResponse',
    'ThinkingEffort',
    'ThinkingLevel',
    'ToolDefinition',
    'UnknownModel',
    'feedback_text',
    'infer_model',
    'render_history',
]


def infer_model(model: Model | str) -> Model:
    """The `Model` for `model`: an instance, `'test'`, or a `'provider:model-name'` string."""
    if isinstance(model, Model):
        return model
    if not isinstance(model, str):
        raise UserError(f'`model` must be a Model instance or a model string, got {type(model).__name__}')
    if model == 'test':
        return TestModel()
    if model == 'demo':
        return DemoModel()
    provider, _, name = model.partition(':')
    if provider == 'openai' and name:
        from threadline.models.openai import OpenAIChatModel

        return OpenAIChatModel(name)
    if provider == 'anthropic' and name:
        from threadline.models.anthropic import AnthropicModel

        return AnthropicModel(name)
    if provider == 'openai-responses' and name:
        from threadline.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name)
    if provider in ('google', 'google-gla') and name:
        from threadline.models.google import GoogleModel

        return GoogleModel(name)
    raise UnknownModel(model)


publish(__name__, globals(), __all__)  # after every name above exists
