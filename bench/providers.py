"""A real provider request over a long history: Threadline vs pydantic-ai, both through the official
`openai` / `anthropic` / `google-genai` SDKs against the same local server (the test suite's recorded
replies): OpenAI Chat Completions, the OpenAI Responses API, Anthropic and Gemini.

    uv run python bench/providers.py [--providers openai,anthropic] [--sizes 100,1000,10000]

For a history of N messages of the shared workload, one agent run that sends one request: the time
covers rendering the history, mapping it to the provider's request body, the SDK's serialization
and the local round trip (identical on both sides), and parsing the reply. Median of 7 runs, ours and pydantic-ai's interleaved, GC on. pydantic-ai's
AnthropicModel always streams, so its reply is the recorded stream; ours gets the recorded message.

Where the difference comes from (`threadline/models/_provider.py`): our request body is encoded
once, by msgspec, and handed to the SDK as finished bytes (`client.post(..., content=...)`), so
the SDK's request transform (which walks and deep-copies the body's dicts, about 0.5 s per 1,000
messages) and its `json.dumps` are skipped; the reply is decoded by msgspec too. Both sides still
go through the SDK's client: its retries, headers, timeouts and error types. Gemini too: ours
builds the API's JSON itself (`threadline/models/_google_wire.py`) and posts it through the SDK's
API client, where pydantic-ai's goes through `generate_content`, which validates the request into
pydantic models and converts it back. At 10,000 messages about half of our Gemini request is the
garbage collector, run by the dicts the two-step mapping builds (measured with `gc.callbacks`).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _common import print_load_average, workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.models.providers.server import ProviderServer, fixture

SIZES = (100, 1_000, 10_000)


def ours(provider: str, url: str) -> tuple[Any, Any]:
    from threadline import Agent, ModelMessagesTypeAdapter

    if provider == 'openai':
        from threadline.models.openai import OpenAIChatModel, OpenAIProvider

        model: Any = OpenAIChatModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=url + '/v1', api_key='k', max_retries=0)
        )
    elif provider == 'openai-responses':
        from threadline.models.openai import OpenAIProvider
        from threadline.models.openai_responses import OpenAIResponsesModel

        model = OpenAIResponsesModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=url + '/v1', api_key='k', max_retries=0)
        )
    elif provider == 'google':
        from threadline.models.google import GoogleModel, GoogleProvider

        model = GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=url))
    else:
        from threadline.models.anthropic import AnthropicModel, AnthropicProvider

        model = AnthropicModel(
            'claude-sonnet-4-6', provider=AnthropicProvider(base_url=url, api_key='k', max_retries=0)
        )
    return Agent(model), ModelMessagesTypeAdapter


def reference(provider: str, url: str) -> tuple[Any, Any]:
    from pydantic_ai import Agent, ModelMessagesTypeAdapter

    if provider == 'openai':
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model: Any = OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(base_url=url + '/v1', api_key='k'))
    elif provider == 'openai-responses':
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIResponsesModel('gpt-5.2', provider=OpenAIProvider(base_url=url + '/v1', api_key='k'))
    elif provider == 'google':
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        model = GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=url))
    else:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=url, api_key='k'))
    return Agent(model), ModelMessagesTypeAdapter


REPLIES = {
    'openai': 'openai_text.json',
    'openai-responses': 'openai_responses_text.json',
    'google': 'gemini_text.json',
    'anthropic': 'anthropic_text.json',
}


def reply_for(provider: str, side: str) -> dict[str, Any]:
    """The recorded reply each side asks for: pydantic-ai's AnthropicModel streams every request."""
    if provider == 'anthropic' and side == 'ref':
        return fixture('anthropic_stream.json')
    return fixture(REPLIES[provider])


async def one_run(server: ProviderServer, agent: Any, history: list[Any], reply: dict[str, Any]) -> float:
    server.queue(reply)
    start = time.perf_counter()
    await agent.run('And next?', message_history=history)
    return time.perf_counter() - start


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument('--providers', default='openai,openai-responses,anthropic,google')
    parser.add_argument('--sizes', default=','.join(map(str, SIZES)))
    args = parser.parse_args()
    print_load_average()
    wl = workload()
    print(f'one request over an N-message history, median of {REPEAT} interleaved runs, GC on (ms)')
    print(f'{"provider":>17} {"N":>7} {"threadline":>11} {"pydantic-ai":>12} {"ratio":>7}')
    with ProviderServer(record=False) as server:
        for provider in args.providers.split(','):
            for size in (int(n) for n in args.sizes.split(',')):
                sides = {}
                for side, build in (('ours', ours), ('ref', reference)):
                    agent, adapter = build(provider, server.url)
                    history = adapter.validate_python(wl.history(size, conversation_id='bench'))
                    await one_run(server, agent, history, reply_for(provider, side))  # warm up
                    sides[side] = (agent, history)
                times: dict[str, list[float]] = {'ours': [], 'ref': []}
                for k in range(REPEAT):
                    order = ('ours', 'ref') if k % 2 == 0 else ('ref', 'ours')
                    for side in order:
                        agent, history = sides[side]
                        times[side].append(await one_run(server, agent, history, reply_for(provider, side)))
                ours_t, ref_t = statistics.median(times['ours']), statistics.median(times['ref'])
                print(f'{provider:>17} {size:>7} {ours_t * 1e3:11.2f} {ref_t * 1e3:12.2f} {ref_t / ours_t:6.1f}x')


REPEAT = 7


if __name__ == '__main__':
    asyncio.run(main())
