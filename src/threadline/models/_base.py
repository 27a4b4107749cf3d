"""The `Model` interface every provider implements, and what a run hands it per request."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, TypedDict

from threadline.messages import ModelMessage, ModelResponse
from threadline.models._prices import known_context_window
from threadline.models._profile import ModelProfile
from threadline.models._stream import CompleteResponseStream, StreamedResponse
from threadline.models._thinking import ThinkingEffort, ThinkingLevel, request_thinks, resolve_thinking
from threadline.models._unsupported import warn_unsupported_settings

__all__ = [
    'Model',
    'ModelProfile',
    'ModelRequestParameters',
    'ModelSettings',
    'ThinkingEffort',
    'ThinkingLevel',
    'ToolDefinition',
]


CacheRetention: TypeAlias = Literal['5m', '30m', '1h']
"""How long a provider keeps a prompt cache entry (snapped to the tiers it has)."""


class CacheConfig(TypedDict, total=False):
    """The unified `cache` setting in full: `{}` is `cache=True`, `{'retention': '1h'}` is `'1h'`."""

    retention: CacheRetention
    messages: bool
    """Also cache the growing conversation, not only tools and instructions (default True)."""


CacheSetting: TypeAlias = bool | CacheRetention | CacheConfig
"""The unified `cache` setting: True, a retention, a `CacheConfig`, or False (no library-placed
cache breakpoints; `CachePoint`s and provider settings still apply)."""


class ModelSettings(TypedDict, total=False):
    """Settings passed through to the provider; each model reads the keys it supports."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    timeout: float
    """Seconds for the SDK's HTTP client, per attempt (the transport's own timeout)."""
    max_retries: int
    """How many times the SDK retries a failed request (its own backoff), this request only."""
    request_timeout: float
    """Seconds one request to one model may take, every SDK retry and a stream's last chunk
    included; past it, `ModelRequestTimeout` (a `FallbackModel` gives each model its own)."""
    parallel_tool_calls: bool
    seed: int
    presence_penalty: float
    frequency_penalty: float
    logit_bias: dict[str, int]
    stop_sequences: list[str]
    extra_headers: dict[str, str]
    """Headers sent with the request, beside (and over) the SDK's own."""
    extra_body: dict[str, Any]
    """Fields merged into the request body last, so they win over what Threadline wrote."""
    thinking: ThinkingLevel
    """Thinking for models that think (see `ThinkingLevel`), sent as each provider spells it:
    OpenAI's `reasoning_effort` / `reasoning.effort`, Gemini's `thinking_config`. Ignored by a
    model whose profile says it does not think (`supports_thinking`)."""
    cache: CacheSetting
    """Prompt caching placed by the library (Anthropic: breakpoints on tools, instructions and the
    conversation; `threadline.models._anthropic_cache` lists the rules). Ignored by other models."""


@dataclass
class ToolDefinition:
    """A tool as a model sees it: name, description and the JSON schema of its arguments.

    `kind` is `'function'` for a tool the run executes, `'output'` for the tool that carries a
    structured final answer, and `'unapproved'` for one that needs approval before it runs.
    """

    name: str
    parameters_json_schema: dict[str, Any] = field(default_factory=lambda: {'type': 'object', 'properties': {}})
    description: str | None = None
    kind: Literal['function', 'output', 'unapproved', 'external'] = 'function'
    strict: bool | None = None
    defer_loading: bool = False
    """Hidden from the model until revealed in the history (`ToolReturn(tools=...)`)."""
    tool_kind: str | None = None
    """The typed kind its calls and returns are recorded with (`'capability-load'` for
    `load_capability`); None for ordinary tools."""
    capability_id: str | None = None
    """The deferred capability that owns it: offered only while that capability is loaded."""
    metadata: dict[str, Any] | None = None
    """The application's own data about the tool (never sent to the model)."""
    sequential: bool = False
    """Runs alone: calls in the same response before it finish first, those after it wait."""
    return_schema: dict[str, Any] | None = None
    """The JSON schema of what the tool returns, sent only with `include_return_schema`."""
    include_return_schema: bool | None = None
    """Send `return_schema`: as a field where the provider has one (Gemini), else in the description."""
    provider_definitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A provider-defined tool to send instead of the function definition, by provider name (e.g.
    Anthropic's `memory` tool, see `threadline.models.anthropic.MemoryTool`); the run still
    executes the calls."""
    outer_typed_dict_key: str | None = None
    """For an output tool whose output is not an object: the key its value is asked for under
    (`'response'`), as pydantic-ai's definition names it."""


@dataclass
class OutputObjectDefinition:
    """The JSON object a `NativeOutput` / `PromptedOutput` asks the model for."""

    json_schema: dict[str, Any]
    name: str | None = None
    description: str | None = None
    strict: bool | None = None


@dataclass
class ModelRequestParameters:
    """What the running agent offers the model on this request: tools, output tools, instructions.

    `output_mode` is how a structured output is asked for: `'tool'` (output tools), `'native'`
    (the provider's JSON-schema mode, `output_object` says the schema), `'prompted'` (the schema is
    in the instructions; a provider with a JSON mode is asked for JSON), or `'text'`.
    """

    function_tools: list[ToolDefinition] = field(default_factory=list)
    output_tools: list[ToolDefinition] = field(default_factory=list)
    allow_text_output: bool = True
    instructions: str | None = None
    output_mode: str = 'text'
    output_object: OutputObjectDefinition | None = None
    prompted_output_template: str | Literal[False] | None = None
    """Under `'prompted'`: the `PromptedOutput`'s own template (None: the default; False: none)."""
    native_tools: list[object] = field(default_factory=list)
    """Tools the provider runs itself; Threadline offers none, a custom model may read the field."""
    allow_image_output: bool = False
    """Always False: Threadline has no image output (pydantic-ai's field, for custom models)."""
    thinking: ThinkingLevel | None = None
    """The `thinking` setting in effect for this request: None when unset, or when the model's
    profile says it does not think (the agent resolves it from the settings before each request)."""

    @property
    def tool_defs(self) -> dict[str, ToolDefinition]:
        """Every tool offered, function and output, by name."""
        return {tool.name: tool for tool in [*self.function_tools, *self.output_tools]}


class Model(ABC):
    """A chat model: turns a (prepared) history into the model's next response."""

    unsupported_settings: ClassVar[frozenset[str]] = frozenset()
    """The `ModelSettings` fields this model class does not send; those that change what a
    request guarantees (`timeout`, `stop_sequences`, ...) warn with `UnsupportedSettingWarning`
    when a request sets them (see `warn_unsupported`), the tuning knobs are ignored silently."""

    @property
    def model_id(self) -> str:
        """`provider:model_name`, as the model is named in a warning or an `infer_model` string."""
        return f'{self.system}:{self.model_name}'

    def warn_unsupported(self, settings: ModelSettings | None, params: ModelRequestParameters) -> None:
        """Warn about each guarantee setting in `settings` this model ignores; a model calls this
        as it sends a request."""
        if settings and self.unsupported_settings:
            warn_unsupported_settings(
                self.model_id, settings, self.unsupported_settings, has_function_tools=bool(params.function_tools)
            )

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name as recorded on its responses."""

    @property
    def system(self) -> str | None:
        """The provider's name (`openai`, `anthropic`, `test`), recorded as `provider_name`."""
        return None

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile()

    @property
    def priced(self) -> bool:
        """Whether the model's answers may have a genai-prices price (False for local models,
        which then skip the price lookup, and its first-use load of the price data)."""
        return True

    @property
    def base_url(self) -> str | None:
        """The provider API's URL, when the model talks to one (it identifies the provider best)."""
        return None

    @property
    def context_window(self) -> int | None:
        """How many tokens a request to this model may carry: the profile's `context_window`, else
        what genai-prices records for the model, else None (unknown, never a guess)."""

        declared = self.profile.context_window
        if declared is not None:
            return declared
        return known_context_window((self.model_name, self.system, self.base_url))

    @abstractmethod
    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send `messages` (already prepared for this model) and return the response."""

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Stream the response (a `StreamedResponse`). Models that cannot stream replay their
        whole response as one event per part. `run_context` is accepted as pydantic-ai's
        signature has it; Threadline's models do not need it."""

        response = await self.request(messages, model_settings, model_request_parameters)
        yield CompleteResponseStream(response)

    def structured_output_mode(self, settings: ModelSettings | None, params: ModelRequestParameters) -> str:
        """How this model asks for a structured output of plain types (`'tool'`, `'native'` or
        `'prompted'`), for a request with `settings` and `params` (which offer output tools).

        Rules (pydantic-ai 2.62's default for its 'auto' output mode):
        - the profile's `default_structured_output_mode` (`'tool'` when unset);
        - but `'native'` instead of `'tool'` when the model takes JSON schema output and a forced
          tool call would stop this request from thinking (`forced_tool_choice_disables_thinking`),
          since output tools must be forced on a request that cannot end in text.
        """
        mode = str(self.profile.get('default_structured_output_mode', 'tool'))
        profile = self.profile
        if (
            mode == 'tool'
            and profile.supports_json_schema_output
            and profile.get('forced_tool_choice_disables_thinking', False)
            and request_thinks(resolve_thinking(settings, params, profile), profile)
        ):
            return 'native'
        return mode

    async def __aenter__(self) -> Model:
        """Enter the model (a wrapper a capability adds is entered around each request it
        serves); a model holding resources opens them here. The default does nothing."""
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return None

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.model_name!r})'
