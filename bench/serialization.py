"""JSON dump and load of a history: Threadline vs pydantic-ai, with bare `orjson.loads` as the floor.

    uv run python bench/serialization.py [--sizes 1000,10000,100000]

Both sides load the same bytes (the shared workload dumped by `json.dumps`) and dump what they
loaded. Ratios > 1 mean Threadline is faster; `vs orjson` is Threadline's load time over a bare
`orjson.loads` of the same bytes (a typed decoder cannot do less work than parsing).
"""

from __future__ import annotations

import argparse
import json
from functools import partial

import orjson
from _common import best_of, ms, workload

from threadline import ModelMessagesTypeAdapter as ThreadlineTA


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--sizes', default='1000,10000,100000')
    args = parser.parse_args()
    from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA

    wl = workload()
    print(f'{"messages":>9} {"side":>10} {"dump_json":>12} {"validate_json":>14} {"orjson.loads":>13}')
    for size in (int(s) for s in args.sizes.split(',')):
        data = json.dumps(wl.history(size)).encode()
        ours = ThreadlineTA.validate_json(data)
        theirs = ReferenceTA.validate_json(data)
        assert orjson.loads(ThreadlineTA.dump_json(ours)) == orjson.loads(data), 'Threadline round trip differs'
        repeat = 3 if size >= 100_000 else 7
        t_floor = best_of(partial(orjson.loads, data), repeat=repeat)
        t_load = best_of(partial(ThreadlineTA.validate_json, data), repeat=repeat)
        t_dump = best_of(partial(ThreadlineTA.dump_json, ours), repeat=repeat)
        r_load = best_of(partial(ReferenceTA.validate_json, data), repeat=repeat)
        r_dump = best_of(partial(ReferenceTA.dump_json, theirs), repeat=repeat)
        print(f'{len(ours):>9} {"threadline":>10} {ms(t_dump):>12} {ms(t_load):>14} {ms(t_floor):>13}')
        print(f'{"":>9} {"pydantic-ai":>10} {ms(r_dump):>12} {ms(r_load):>14}')
        print(
            f'{"":>9} {"ratios":>10}  dump {r_dump / t_dump:5.1f}x faster   load {r_load / t_load:5.1f}x faster'
            f'   load vs orjson.loads {t_load / t_floor:4.2f}x   ({len(data) / 1e6:.1f} MB)'
        )


if __name__ == '__main__':
    main()
