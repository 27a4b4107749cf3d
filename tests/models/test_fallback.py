"""`FallbackModel` at the level of a run: which errors move on to the next model, what is raised
when all fail, streaming, and the window and profile it presents."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from threadline import Agent, ModelMessage, ModelResponse, TextPart
from threadline.exceptions import FallbackExceptionGroup, ModelConnectionError, ModelHTTPError
from threadline.models import FallbackModel, ModelProfile
from threadline.models.function import AgentInfo, FunctionModel


def failing(error: Exception, calls: list[str], name: str) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(name)
        raise error

    return FunctionModel(model, model_name=name)


def answering(text: str, calls: list[str], name: str, **kwargs: object) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(name)
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(model, model_name=name, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    'error',
    [ModelHTTPError(503, 'a'), ModelHTTPError(429, 'a'), ModelConnectionError('a', 'refused'), TimeoutError()],
)
def test_server_trouble_moves_on_to_the_next_model(error: Exception) -> None:
    calls: list[str] = []
    model = FallbackModel(failing(error, calls, 'a'), answering('from b', calls, 'b'))
    result = Agent(model).run_sync('hi')
    assert result.output == 'from b' and calls == ['a', 'b']
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse) and response.model_name == 'b'  # the model that answered


def test_a_request_error_is_raised_at_once() -> None:
    calls: list[str] = []
    model = FallbackModel(failing(ModelHTTPError(400, 'a', 'bad tool schema'), calls, 'a'), answering('', calls, 'b'))
    with pytest.raises(ModelHTTPError) as raised:
        Agent(model).run_sync('hi')
    assert raised.value.status_code == 400 and calls == ['a']


def test_when_all_fail_every_error_is_kept_in_order() -> None:
    calls: list[str] = []
    first, second = ModelHTTPError(500, 'a'), ModelConnectionError('b', 'no route to host')
    model = FallbackModel(failing(first, calls, 'a'), failing(second, calls, 'b'))
    with pytest.raises(FallbackExceptionGroup) as raised:
        Agent(model).run_sync('hi')
    assert list(raised.value.exceptions) == [first, second]
    assert 'all 2 models failed (a, b)' in str(raised.value)


def test_fallback_on_names_the_errors() -> None:
    calls: list[str] = []
    model = FallbackModel(failing(ValueError('odd'), calls, 'a'), answering('b', calls, 'b'), fallback_on=(ValueError,))
    assert Agent(model).run_sync('hi').output == 'b'
    only_429 = FallbackModel(
        failing(ModelHTTPError(503, 'a'), calls, 'a'),
        answering('b', calls, 'b'),
        fallback_on=lambda e: isinstance(e, ModelHTTPError) and e.status_code == 429,
    )
    with pytest.raises(ModelHTTPError):
        Agent(only_429).run_sync('hi')


def streaming(chunks: list[str], fail_after: int | None, calls: list[str], name: str) -> FunctionModel:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        calls.append(name)
        for index, chunk in enumerate(chunks):
            if index == fail_after:
                raise ModelHTTPError(503, name)
            yield chunk
        if fail_after == len(chunks):
            raise ModelHTTPError(503, name)

    return FunctionModel(stream_function=stream, model_name=name)


async def test_a_stream_falls_back_before_its_first_chunk() -> None:
    calls: list[str] = []
    model = FallbackModel(streaming(['x'], 0, calls, 'a'), streaming(['from ', 'b'], None, calls, 'b'))
    async with Agent(model).run_stream('hi') as result:
        texts = [t async for t in result.stream_text()]
    assert texts[-1] == 'from b' and calls == ['a', 'b']


async def test_a_stream_that_started_is_not_retried_elsewhere() -> None:
    calls: list[str] = []
    model = FallbackModel(streaming(['partial ', 'answer'], 1, calls, 'a'), streaming(['b'], None, calls, 'b'))
    with pytest.raises(ModelHTTPError):
        async with Agent(model).run_stream('hi') as result:
            async for _ in result.stream_text():
                pass
    assert calls == ['a']  # the caller saw part of a's answer: b is never asked


def test_window_is_the_smallest_known_and_the_profile_what_all_accept() -> None:
    calls: list[str] = []
    big = answering('', calls, 'big', profile=ModelProfile(context_window=200_000, supports_inline_system_prompts=True))
    small = answering('', calls, 'small', profile=ModelProfile(context_window=32_000))
    unknown = answering('', calls, 'unknown')
    model = FallbackModel(big, unknown, small)
    assert model.context_window == 32_000  # an unknown window does not constrain (as pydantic-ai)
    assert model.profile.supports_inline_system_prompts is False
    assert FallbackModel(unknown).context_window is None
    assert model.model_name == 'fallback:big,unknown,small'
