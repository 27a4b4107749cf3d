"""A real provider request over a long history: Threadline vs pydantic-ai, both through the official
`openai` / `anthropic` SDKs against the same local server (the test suite's recorded replies).

    uv run python bench/providers.py

For a history of N messages of the shared workload, one agent run that sends one request: the time
covers rendering the history, mapping it to the provider's request body, the SDK's serialization
and the local round trip (identical on both sides), and parsing the reply. Median of 5 runs. pydantic-ai's AnthropicModel
always streams, so its reply is the recorded stream; ours gets the recorded message.

Where the difference comes from (`threadline/models/_provider.py`): our request body is encoded
once, by msgspec, and handed to the SDK as finished bytes (`client.post(..., content=...)`), so
the SDK's request transform (which walks and deep-copies the body's dicts, about 0.5 s per 1,000
messages) and its `json.dumps` are skipped; the reply is decoded by msgspec too. Both sides still
go through the SDK's client: its retries, headers, timeouts and error types.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _common import workload

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
    else:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=url, api_key='k'))
    return Agent(model), ModelMessagesTypeAdapter


async def one_run(server: ProviderServer, agent: Any, history: list[Any], reply: dict[str, Any]) -> float:
    server.queue(reply)
    start = time.perf_counter()
    await agent.run('And next?', message_history=history)
    return time.perf_counter() - start


async def main() -> None:
    wl = workload()
    print('one request over an N-message history, median of 5 (ms)')
    print(f'{"provider":>10} {"N":>7} {"threadline":>11} {"pydantic-ai":>12} {"ratio":>7}')
    with ProviderServer() as server:
        for provider in ('openai', 'anthropic'):
            for size in SIZES:
                times = {}
                for name, build in (('ours', ours), ('ref', reference)):
                    # pydantic-ai's AnthropicModel streams even a non-streaming request: each side
                    # gets the reply shape it asks for.
                    streamed = provider == 'anthropic' and name == 'ref'
                    reply = fixture(f'{provider}_stream.json' if streamed else f'{provider}_text.json')
                    agent, adapter = build(provider, server.url)
                    history = adapter.validate_python(wl.history(size, conversation_id='bench'))
                    await one_run(server, agent, history, reply)  # warm up the client and caches
                    times[name] = statistics.median([await one_run(server, agent, history, reply) for _ in range(5)])
                    server.requests.clear()
                print(
                    f'{provider:>10} {size:>7} {times["ours"] * 1e3:11.2f} {times["ref"] * 1e3:12.2f} '
                    f'{times["ref"] / times["ours"]:6.1f}x'
                )


if __name__ == '__main__':
    asyncio.run(main())
