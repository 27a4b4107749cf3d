"""JSON dump and load of a history: Threadline vs pydantic-ai, with bare `orjson.loads` beside them.

    uv run python bench/serialization.py [--sizes 1000,10000,100000] [--best-case]

Both sides load the same bytes (the shared workload dumped by `json.dumps`) and dump what they
loaded. Ratios > 1 mean Threadline is faster. Timing: the median of 7 runs, GC on, the two sides
interleaved with the heap disturbed between runs (`--best-case`: the minimum with GC off, which
flatters everyone). `orjson.loads` is a familiar reference, not a floor: it builds generic
objects, which a typed msgspec decode does not have to; `msgspec.json.decode` into plain objects
is the decoder's own pace, which the typed load aims to stay within 1.2x of.

With GC on, a full collection (about 100 ms over this benchmark's heap of live histories) is paid
by whichever call crosses the collector's threshold. Threadline's message structs are not tracked
by the collector, so its loads rarely cross it; bare `orjson.loads`, which makes hundreds of
thousands of tracked dicts and lists, often does, and its column then carries that cost.

The last rows load histories with fields Threadline does not declare (an unknown key, as a newer
pydantic-ai writes): one odd message in 10,000, and every message odd; and a history whose values
spell legacy field names (`"added"` in a tool argument), which must cost nothing. They are timed
twice: in isolation (the size loop's histories freed first) and on a live heap (the 100k
histories of both sides still alive, as an application holding them would be), because a full
collection over that heap lands on whichever case crosses the collector's threshold.
"""

from __future__ import annotations

import argparse
import gc
import json
from functools import partial
from typing import Any

import msgspec
import orjson
from _common import best_of, medians, ms, print_load_average, workload

from threadline import ModelMessagesTypeAdapter as ThreadlineTA


def main() -> None:
    print_load_average()
    parser = argparse.ArgumentParser()
    parser.add_argument('--sizes', default='1000,10000,100000')
    parser.add_argument('--best-case', action='store_true', help='minimum of 7 with GC off (flattering)')
    args = parser.parse_args()
    from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA

    wl = workload()
    method = 'best case: minimum, GC off' if args.best_case else 'median of 7, GC on, interleaved'
    print(f'({method})')
    print(f'{"messages":>9} {"side":>10} {"dump_json":>12} {"validate_json":>14} {"orjson.loads":>13}')
    kept = _sizes(wl, ReferenceTA, args)
    print('\nhistories with fields Threadline does not declare, or values that spell legacy names (10,000 messages)')
    _odd_histories(wl, ReferenceTA, args.best_case, 'live heap (the largest histories of both sides alive)')
    del kept
    gc.collect()
    _odd_histories(wl, ReferenceTA, args.best_case, 'in isolation (earlier data freed)')


def _sizes(wl: Any, ReferenceTA: Any, args: argparse.Namespace) -> list[Any]:
    kept: list[Any] = []
    for size in (int(s) for s in args.sizes.split(',')):
        kept.clear()  # each size is measured with the previous size's data freed
        data = json.dumps(wl.history(size)).encode()
        ours = ThreadlineTA.validate_json(data)
        theirs = ReferenceTA.validate_json(data)
        assert orjson.loads(ThreadlineTA.dump_json(ours)) == orjson.loads(data), 'Threadline round trip differs'
        cases = {
            'orjson': partial(orjson.loads, data),
            'msgspec': partial(msgspec.json.decode, data),
            'load': partial(ThreadlineTA.validate_json, data),
            'dump': partial(ThreadlineTA.dump_json, ours),
            'r_load': partial(ReferenceTA.validate_json, data),
            'r_dump': partial(ReferenceTA.dump_json, theirs),
        }
        t = _time(cases, args.best_case, 3 if size >= 100_000 else 7)
        print(f'{len(ours):>9} {"threadline":>10} {ms(t["dump"]):>12} {ms(t["load"]):>14} {ms(t["orjson"]):>13}')
        print(f'{"":>9} {"pydantic-ai":>10} {ms(t["r_dump"]):>12} {ms(t["r_load"]):>14}')
        print(
            f'{"":>9} {"ratios":>10}  dump {t["r_dump"] / t["dump"]:5.1f}x faster   load {t["r_load"] / t["load"]:5.1f}x '
            f'faster   load vs orjson.loads {t["load"] / t["orjson"]:4.2f}x   vs msgspec.json.decode (plain '
            f'objects) {t["load"] / t["msgspec"]:4.2f}x   ({len(data) / 1e6:.1f} MB)'
        )
        kept.extend((ours, theirs))
        del cases
    return kept


def _time(cases: dict[str, Any], best_case: bool, repeat: int) -> dict[str, float]:
    if best_case:
        return {name: best_of(fn, repeat=repeat) for name, fn in cases.items()}
    return medians(cases, runs=7)


def _odd_histories(wl: Any, reference: Any, best_case: bool, heading: str) -> None:
    messages = wl.history(10_000)
    clean = json.dumps(messages).encode()
    one = list(messages)
    one[5_000] = {**one[5_000], 'x_field_from_a_newer_version': 1}
    every = [{**m, 'x_field_from_a_newer_version': 1} for m in messages]
    spelled = json.dumps(_spell_legacy_names(messages)).encode()
    print(f' {heading}')
    t = _time(
        {
            'clean': partial(ThreadlineTA.validate_json, clean),
            'one': partial(ThreadlineTA.validate_json, json.dumps(one).encode()),
            'every': partial(ThreadlineTA.validate_json, json.dumps(every).encode()),
            'r_one': partial(reference.validate_json, json.dumps(one).encode()),
            'r_every': partial(reference.validate_json, json.dumps(every).encode()),
            'spelled': partial(ThreadlineTA.validate_json, spelled),
        },
        best_case,
        7,
    )
    print(
        f'  one odd message:  {ms(t["one"])} ({t["one"] / t["clean"]:.2f}x a clean load)   '
        f'pydantic-ai {ms(t["r_one"])}   {t["r_one"] / t["one"]:.1f}x faster'
    )
    print(
        f'  every message:    {ms(t["every"])}   pydantic-ai {ms(t["r_every"])}   {t["r_every"] / t["every"]:.1f}x faster'
    )
    print(f'  legacy names as values: {ms(t["spelled"])} ({t["spelled"] / t["clean"]:.2f}x a clean load)')


def _spell_legacy_names(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool call's arguments gain `"added"` and `"request_tokens"` keys and values."""
    out = []
    for message in messages:
        parts = []
        for part in message['parts']:
            if part.get('part_kind') == 'tool-call' and isinstance(part.get('args'), dict):
                part = {**part, 'args': {**part['args'], 'added': 'request_tokens', 'request_tokens': 'added'}}
            parts.append(part)
        out.append({**message, 'parts': parts})
    return out


if __name__ == '__main__':
    main()
