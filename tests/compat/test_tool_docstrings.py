"""Tool descriptions read from Google, NumPy and Sphinx docstrings, against pydantic-ai 2.62: the same
description and the same parameter descriptions in the schema the model is sent."""

from __future__ import annotations

from typing import Any

import pytest

DOCSTRINGS = {
    'google': "Forecast for a city.\n\nArgs:\n    city: The city's name,\n        spelled out.\n    days: How many days.\n\nReturns:\n    The forecast.\n",
    'google typed return': 'Forecast.\n\nArgs:\n    city: Name.\n\nReturns:\n    str: The forecast.\n',
    'google with sections': 'Forecast.\n\nArgs:\n    city: Name.\n\nRaises:\n    ValueError: when bad.\n\nNote:\n    Be careful.\n',
    'numpy': "Forecast for a city.\n\nParameters\n----------\ncity : str\n    The city's name.\ndays : int\n    How many\n    days.\n\nReturns\n-------\nstr\n    The forecast.\n",
    'numpy without returns': 'Forecast.\n\nParameters\n----------\ncity : str\n    Name of the city.\n',
    'sphinx': "Forecast for a city.\n\n:param city: The city's name.\n:param days: How many days.\n:returns: The forecast.\n",
    'sphinx typed': 'Forecast.\n\n:param str city: Name.\n:type days: int\n:rtype: str\n',
    'plain': 'Just a description,\nno sections.',
    'paragraphs': 'First line.\n\nSecond paragraph.\n\nArgs:\n    city: Name.\n',
    'text after the sections': 'Forecast.\n\nArgs:\n    city: Name.\n\nMore text after.\n',
    'only returns': 'Returns:\n    The forecast.\n',
    'unknown parameter': 'Forecast.\n\nArgs:\n    town: Not a parameter.\n    city: Name.\n',
}


def forecast(city: str, days: int = 1) -> str:
    return f'{city} {days}'


def sent(agent_class: Any, model_class: Any, doc: str, **options: Any) -> tuple[str | None, dict[str, Any]]:
    def tool(city: str, days: int = 1) -> str:
        return forecast(city, days)

    tool.__doc__ = doc
    model = model_class()
    agent = agent_class(model)
    agent.tool_plain(**options)(tool)
    agent.run_sync('go')
    [definition] = model.last_model_request_parameters.function_tools
    return definition.description, definition.parameters_json_schema


def both(doc: str, **options: Any) -> tuple[Any, Any]:
    from pydantic_ai import Agent as TheirAgent
    from pydantic_ai.models.test import TestModel as TheirModel

    from threadline import Agent
    from threadline.models.test import TestModel

    return sent(Agent, TestModel, doc, **options), sent(TheirAgent, TheirModel, doc, **options)


@pytest.mark.parametrize('doc', DOCSTRINGS.values(), ids=DOCSTRINGS.keys())
def test_descriptions_are_read_as_the_reference_reads_them(doc: str) -> None:
    ours, theirs = both(doc)
    assert ours == theirs


@pytest.mark.parametrize('style', ['google', 'numpy', 'sphinx'])
def test_a_named_style_is_read_as_the_reference_reads_it(style: str) -> None:
    ours, theirs = both(DOCSTRINGS['sphinx'], docstring_format=style)
    assert ours == theirs
