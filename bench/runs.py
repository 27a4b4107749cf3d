"""Framework time of agent runs: Threadline vs pydantic-ai on the same FunctionModel workload.

    uv run python bench/runs.py

"Framework time" is a run's wall time minus the time spent inside the model function, so only
what the framework itself does is compared. Model functions return responses with usage set, so
neither side estimates tokens.

(a) per model request in a 50-step tool loop, with an async tool and with a sync tool (which both
    sides run in a worker thread), and with the tools in a toolset of 20 and a structured output
    through the output tool;
(b) a one-step run whose message_history is 1k and 10k messages of the shared workload: the same
    history objects every run, and a history loaded afresh from JSON before every run (as from a
    store; the load itself is not counted, the previous history is dropped before it);
Both sides are timed interleaved, run by run, with GC on; figures are medians.
(c) `import threadline` vs `import pydantic_ai` in a fresh interpreter;
(d) streaming 1,000 text chunks from `FunctionModel(stream_function=...)`: time to the first delta
    the caller sees, and framework time per chunk = (stream wall time - time inside the stream
    function) / chunks.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import print_load_average, workload

STEPS = 50
INSTRUMENT = '--instrument' in sys.argv


class Side:
    """One framework's classes, so the same scenario runs on both."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == 'threadline':
            import threadline as root
            from threadline import messages as m
            from threadline.models.function import FunctionModel

            self.ta = root.ModelMessagesTypeAdapter
        else:
            import pydantic_ai as root  # type: ignore[no-redef]
            from pydantic_ai import messages as m  # type: ignore[no-redef]
            from pydantic_ai.models.function import FunctionModel  # type: ignore[no-redef]

            self.ta = root.ModelMessagesTypeAdapter
        self.Agent = root.Agent
        self.UsageLimits = root.UsageLimits
        self.m = m
        self.FunctionModel = FunctionModel

    def capabilities(self) -> list[Any]:
        """With --instrument: tracing on both sides (the OpenTelemetry API's default, no-op provider)."""
        if not INSTRUMENT:
            return []
        if self.name == 'threadline':
            from threadline.capabilities import Instrumentation

            return [Instrumentation()]
        from pydantic_ai.capabilities import Instrumentation as RefInstrumentation  # type: ignore[attr-defined]

        return [RefInstrumentation()]

    def usage(self) -> Any:
        return self.m.RequestUsage(input_tokens=100, output_tokens=10)


def tool_loop_agent(side: Side, inside: list[float], sync_tool: bool = False) -> Any:
    m = side.m

    async def respond(messages: list[Any], info: Any) -> Any:
        start = time.perf_counter()
        answered = sum(1 for msg in messages if isinstance(msg, m.ModelResponse))
        if answered < STEPS - 1:
            response = m.ModelResponse(
                parts=[m.ToolCallPart('step', {'n': answered}, f'call_{answered}')], usage=side.usage()
            )
        else:
            response = m.ModelResponse(parts=[m.TextPart('done')], usage=side.usage())
        inside[0] += time.perf_counter() - start
        return response

    agent = side.Agent(side.FunctionModel(respond), capabilities=side.capabilities())

    if sync_tool:

        @agent.tool_plain
        def step(n: int) -> int:
            return n + 1

    else:

        @agent.tool_plain
        async def step(n: int) -> int:  # type: ignore[no-redef]
            return n + 1

    return agent


def one_step_agent(side: Side, inside: list[float]) -> Any:
    m = side.m

    async def respond(messages: list[Any], info: Any) -> Any:
        start = time.perf_counter()
        response = m.ModelResponse(parts=[m.TextPart('ok')], usage=side.usage())
        inside[0] += time.perf_counter() - start
        return response

    return side.Agent(side.FunctionModel(respond), capabilities=side.capabilities())


def interleaved(runs: dict[str, tuple[Callable[[], Any], list[float]]], repeat: int) -> dict[str, float]:
    """Median framework time (wall minus model-function time) of each run, in seconds: the runs
    take turns, repetition by repetition, so both sides meet the same machine state, and which
    side goes first rotates each repetition (the first of a pair meets the other's garbage less);
    GC stays on."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for run, _ in runs.values():
        asyncio.run(run())  # warm up (lazy imports, schema building)
    for k in range(repeat):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            run, inside = runs[name]
            inside[0] = 0.0
            start = time.perf_counter()
            asyncio.run(run())
            samples[name].append(time.perf_counter() - start - inside[0])
    return {name: statistics.median(values) for name, values in samples.items()}


def tool_loop_run(side: Side, sync_tool: bool) -> tuple[Callable[[], Any], list[float]]:
    inside = [0.0]
    agent = tool_loop_agent(side, inside, sync_tool)
    limits = side.UsageLimits(request_limit=None)

    async def run() -> Any:
        result = await agent.run('go', usage_limits=limits)
        assert result.output == 'done', result.output
        return result

    return run, inside


def toolset_output_run(side: Side) -> tuple[Callable[[], Any], list[float]]:
    """The loop with the tools in a toolset of 20 (the model calls each in turn) and a structured
    output that ends the run through the output tool."""
    import pydantic

    m = side.m
    inside = [0.0]

    class Answer(pydantic.BaseModel):
        total: int

    if side.name == 'threadline':
        from threadline.toolsets import FunctionToolset
    else:
        from pydantic_ai.toolsets import FunctionToolset  # type: ignore[assignment]
    toolset: Any = FunctionToolset()
    for k in range(20):

        async def tool(n: int, k: int = k) -> int:
            return n + k

        toolset.add_function(tool, name=f'tool_{k}')

    async def respond(messages: list[Any], info: Any) -> Any:
        start = time.perf_counter()
        answered = sum(1 for msg in messages if isinstance(msg, m.ModelResponse))
        if answered < STEPS - 1:
            call = m.ToolCallPart(f'tool_{answered % 20}', {'n': answered}, f'call_{answered}')
        else:
            call = m.ToolCallPart(info.output_tools[0].name, {'total': answered}, 'final')
        response = m.ModelResponse(parts=[call], usage=side.usage())
        inside[0] += time.perf_counter() - start
        return response

    agent = side.Agent(side.FunctionModel(respond), output_type=Answer, toolsets=[toolset])
    limits = side.UsageLimits(request_limit=None)

    async def run() -> Any:
        result = await agent.run('go', usage_limits=limits)
        assert result.output.total == STEPS - 1, result.output
        return result

    return run, inside


def long_history_run(side: Side, raw: list[dict[str, Any]]) -> tuple[Callable[[], Any], list[float]]:
    inside = [0.0]
    agent = one_step_agent(side, inside)
    history = side.ta.validate_python(raw)

    async def run() -> Any:
        return await agent.run('one more question', message_history=history)

    return run, inside


def fresh_history_run(side: Side, raw: list[dict[str, Any]]) -> tuple[Callable[[], Any], list[float]]:
    """A run over a history decoded from JSON just before it (new objects each run); the decode
    is counted as time outside the framework."""
    import json

    inside = [0.0]
    agent = one_step_agent(side, inside)
    data = json.dumps(raw).encode()

    async def run() -> Any:
        start = time.perf_counter()
        history = side.ta.validate_json(data)
        inside[0] += time.perf_counter() - start
        return await agent.run('one more question', message_history=history)

    return run, inside


CHUNKS = 1000


def streaming_run(side: Side) -> Callable[[], Any]:
    """One streamed run of `side`, as a coroutine function returning (time to first delta,
    framework time per chunk)."""
    inside = [0.0]

    async def stream_fn(messages: list[Any], info: Any) -> Any:
        for index in range(CHUNKS):
            start = time.perf_counter()
            chunk = f'w{index} '
            inside[0] += time.perf_counter() - start
            yield chunk

    agent = side.Agent(side.FunctionModel(stream_function=stream_fn))

    async def once() -> tuple[float, float]:
        inside[0] = 0.0
        start = time.perf_counter()
        first = None
        count = 0
        async with agent.run_stream('go') as result:
            # Both libraries group deltas every 0.1 s by default; both yield every delta here.
            async for _ in result.stream_text(delta=True, debounce_by=None):
                if first is None:
                    first = time.perf_counter() - start
                count += 1
        wall = time.perf_counter() - start
        assert count >= CHUNKS * 0.9, count
        return first or 0.0, (wall - inside[0]) / CHUNKS

    return once


def bench_streaming(runs: dict[str, Callable[[], Any]]) -> list[tuple[float, float]]:
    """Per side, (time to first delta, framework time per chunk): medians of 7 runs, the sides
    interleaved with the first rotating, as in `interleaved`."""
    names = list(runs)
    for once in runs.values():
        asyncio.run(once())  # warm up
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for k in range(7):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            samples[name].append(asyncio.run(runs[name]()))
    return [(statistics.median(s[0] for s in samples[n]), statistics.median(s[1] for s in samples[n])) for n in names]


def loop_over_history_run(side: Side, raw: list[dict[str, Any]]) -> tuple[Callable[[], Any], list[float]]:
    """A 50-step tool loop continuing a history of `raw` (per-request time is what grows, if anything)."""
    m = side.m
    inside = [0.0]
    steps = [0]

    async def respond(messages: list[Any], info: Any) -> Any:
        start = time.perf_counter()
        steps[0] += 1
        if steps[0] < STEPS:
            parts = [m.ToolCallPart('step', {'n': steps[0]}, f'loop_{steps[0]}')]
        else:
            parts = [m.TextPart('done')]
        response = m.ModelResponse(parts=parts, usage=side.usage())
        inside[0] += time.perf_counter() - start
        return response

    agent = side.Agent(side.FunctionModel(respond), capabilities=side.capabilities())

    @agent.tool_plain
    async def step(n: int) -> int:
        return n + 1

    history = side.ta.validate_python(raw)
    limits = side.UsageLimits(request_limit=None)

    async def run() -> Any:
        steps[0] = 0
        return await agent.run('go', message_history=history, usage_limits=limits)

    return run, inside


def import_time(module: str) -> float:
    code = f'import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)'
    samples = [float(subprocess.check_output([sys.executable, '-c', code], text=True)) for _ in range(5)]
    return statistics.median(samples)


def main() -> None:
    print_load_average()
    wl = workload()
    ours, theirs = Side('threadline'), Side('pydantic-ai')
    print(f'(a) framework time per model request, {STEPS}-step tool loop (medians of 15, interleaved, GC on)')
    for label, sync_tool in (('async tool', False), ('sync tool', True)):
        t = interleaved({'ours': tool_loop_run(ours, sync_tool), 'theirs': tool_loop_run(theirs, sync_tool)}, 15)
        a_ours, a_theirs = t['ours'] / STEPS, t['theirs'] / STEPS
        print(
            f'    {label:>10}: threadline {a_ours * 1e3:8.3f} ms   pydantic-ai {a_theirs * 1e3:8.3f} ms'
            f'   ratio {a_theirs / a_ours:5.1f}x'
        )
    t = interleaved({'ours': toolset_output_run(ours), 'theirs': toolset_output_run(theirs)}, 15)
    a_ours, a_theirs = t['ours'] / STEPS, t['theirs'] / STEPS
    print(
        f'    {"toolset of 20 + output tool":>10}: threadline {a_ours * 1e3:8.3f} ms   pydantic-ai {a_theirs * 1e3:8.3f} ms'
        f'   ratio {a_theirs / a_ours:5.1f}x'
    )
    loops = {}
    for size in (10, 10_000):
        raw = wl.history(size)
        loops[size] = interleaved(
            {'ours': loop_over_history_run(ours, raw), 'theirs': loop_over_history_run(theirs, raw)}, 5
        )
    for size, t in loops.items():
        print(
            f'    over a {size:>6}-message history: threadline {t["ours"] / STEPS * 1e3:6.3f} ms per request   '
            f'pydantic-ai {t["theirs"] / STEPS * 1e3:7.3f} ms   ratio {t["theirs"] / t["ours"]:5.1f}x'
        )
    print(f'    per request at 10,000 messages vs 10: threadline {loops[10_000]["ours"] / loops[10]["ours"]:.2f}x')
    print('(b) framework time of a one-step run over a long message_history (interleaved, GC on)')
    for size in (1000, 10_000):
        raw = wl.history(size)
        t = interleaved(
            {'ours': long_history_run(ours, raw), 'theirs': long_history_run(theirs, raw)}, 9 if size <= 1000 else 5
        )
        print(
            f'    {size:>6} msgs: threadline {t["ours"] * 1e3:8.2f} ms   pydantic-ai {t["theirs"] * 1e3:8.2f} ms'
            f'   ratio {t["theirs"] / t["ours"]:5.1f}x'
        )
        t = interleaved(
            {'ours': fresh_history_run(ours, raw), 'theirs': fresh_history_run(theirs, raw)}, 9 if size <= 1000 else 5
        )
        print(
            f'    {size:>6} msgs, loaded afresh each run: threadline {t["ours"] * 1e3:8.2f} ms   pydantic-ai '
            f'{t["theirs"] * 1e3:8.2f} ms   ratio {t["theirs"] / t["ours"]:5.1f}x'
        )
    print(f'(d) streaming {CHUNKS} chunks')
    (f_ours, c_ours), (f_theirs, c_theirs) = bench_streaming(
        {'ours': streaming_run(ours), 'theirs': streaming_run(theirs)}
    )
    print(
        f'    first delta: threadline {f_ours * 1e3:7.3f} ms   pydantic-ai {f_theirs * 1e3:7.3f} ms   ratio {f_theirs / f_ours:5.1f}x'
    )
    print(
        f'    per chunk:   threadline {c_ours * 1e6:7.2f} us   pydantic-ai {c_theirs * 1e6:7.2f} us   ratio {c_theirs / c_ours:5.1f}x'
    )
    print('(c) import time in a fresh interpreter')
    c_ours, c_theirs = import_time('threadline'), import_time('pydantic_ai')
    print(
        f'    threadline {c_ours * 1e3:7.1f} ms   pydantic_ai {c_theirs * 1e3:7.1f} ms   ratio {c_theirs / c_ours:5.1f}x'
    )


if __name__ == '__main__':
    main()
