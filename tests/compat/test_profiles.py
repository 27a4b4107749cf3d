"""Model profiles as pydantic-ai 2.62 applications write them: `profile={'context_window': N}`
(seed 000's form, which crashed before), a function of the default, `merge_profile`, and reading
a profile as a dict. One script body on both libraries, the results compared."""

import contextlib
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, profiles=('ModelProfile', 'merge_profile'))


def _openai(name: str, profile: Any) -> Any:
    if name == 'ref':
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
    else:
        from threadline.models.openai import OpenAIChatModel, OpenAIProvider  # type: ignore[assignment]
    return OpenAIChatModel('my-local-model', provider=OpenAIProvider(api_key='k'), profile=profile)


KEYS = ('context_window', 'supports_tools', 'supports_json_schema_output', 'supports_inline_system_prompts')


def _read(profile: Any) -> list[Any]:
    return [profile.get(key) for key in KEYS]


@pytest.mark.parametrize('lib', LIBS)
def test_a_partial_dict_is_merged_over_the_models_default(lib: str) -> None:
    model = _openai(lib, {'context_window': 128_000})
    assert model.profile['context_window'] == 128_000
    assert _read(model.profile) == _read(_openai('ref', {'context_window': 128_000}).profile)


def test_a_function_of_the_default_and_merge_profile() -> None:
    def no_json(default: Any) -> Any:
        return {**default, 'supports_json_schema_output': False, 'context_window': 9_000}

    seen = {lib: _read(_openai(lib, no_json).profile) for lib in LIBS}
    assert seen['ours'] == seen['ref'] == [9_000, True, False, True]
    merged = {
        lib: _read(_names(lib).merge_profile({'context_window': 5}, None, {'supports_tools': False})) for lib in LIBS
    }
    assert merged['ours'][:2] == merged['ref'][:2] == [5, False]


def test_the_window_a_profile_sets_is_the_one_a_run_measures_against() -> None:
    """Seed 000's compaction recipe: `ctx.context_window_used` against `profile={'context_window': N}`."""

    def used(lib_name: str) -> list[Any]:
        lib = _names(lib_name)
        seen: list[Any] = []

        def answer(messages: Any, info: Any) -> Any:
            if len(messages) == 1:
                return lib.ModelResponse(parts=[lib.ToolCallPart('probe', {})], usage=_usage(lib_name, 400))
            return lib.ModelResponse(parts=[lib.TextPart('done')], usage=_usage(lib_name, 600))

        agent = lib.Agent(lib.FunctionModel(answer, profile={'context_window': 1_000}))

        @agent.tool
        def probe(ctx: lib.RunContext[None]) -> str:  # type: ignore[name-defined]
            seen.append(ctx.context_window_used)
            return 'ok'

        agent.run_sync('hi')
        return seen

    assert used('ours') == used('ref') == [pytest.approx(0.4, abs=0.02)]


def _usage(lib: str, tokens: int) -> Any:
    if lib == 'ref':
        from pydantic_ai.usage import RequestUsage
    else:
        from threadline.usage import RequestUsage  # type: ignore[assignment]
    return RequestUsage(input_tokens=tokens - 10, output_tokens=10)


def test_a_key_neither_library_knows_is_named_in_the_error() -> None:
    from threadline.exceptions import UserError

    with pytest.raises(UserError, match="unknown profile key 'context_windw'"):
        _openai('ours', {'context_windw': 1})
    with pytest.raises(UserError, match="'context_window' takes an int or None, not str"):
        _openai('ours', {'context_window': '128k'})
    kept = _openai('ours', {'supports_thinking': True}).profile  # pydantic-ai's key: kept, read back
    assert kept['supports_thinking'] is True and kept.context_window is None


def _parameters(name: str, output: str) -> dict[str, Any]:
    lib = _names(name)
    seen: dict[str, Any] = {}

    class Reading(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            params = request_context.model_request_parameters
            seen.update(
                function_tools=[t.name for t in params.function_tools],
                output_tools=[t.name for t in params.output_tools],
                tool_defs=sorted(params.tool_defs),
                output_mode=params.output_mode,
                allow_text_output=params.allow_text_output,
                allow_image_output=params.allow_image_output,
                native_tools=list(params.native_tools),
                template=params.prompted_output_template,
                schema=params.output_object.json_schema if params.output_object else None,
            )
            return request_context

    class Answer(dict[str, int]):
        pass

    output_type: Any = {
        'text': str,
        'tool': int,
        'prompted': lib.PromptedOutput(int),
        'prompted, own template': lib.PromptedOutput(int, template='Answer as {schema}'),
    }[output]
    agent = lib.Agent(lib.TestModel(), output_type=output_type, capabilities=[Reading()])

    @agent.tool_plain
    def lookup(q: str) -> str:
        return q

    with contextlib.suppress(Exception):  # TestModel's answer may not fit: the first request is what is read
        agent.run_sync('hi')
    return seen


@pytest.mark.parametrize('output', ['text', 'tool', 'prompted', 'prompted, own template'])
def test_the_request_parameters_a_hook_reads(output: str) -> None:
    ours, reference = _parameters('ours', output), _parameters('ref', output)
    if output == 'tool':
        # pydantic-ai shows hooks a plain type's output unresolved ('auto': output tools, or JSON
        # text the model may write instead); Threadline shows the output tools the model is sent.
        assert (reference['output_mode'], ours['output_mode']) == ('auto', 'tool')
        for key in ('output_mode', 'allow_text_output', 'schema'):
            del ours[key], reference[key]
    assert ours == reference
