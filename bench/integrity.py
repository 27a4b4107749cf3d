"""repair_messages and sanitize_messages: Threadline vs pydantic-ai on the shared workload.

    uv run python bench/integrity.py [--sizes 1000,10000,100000]

Each size runs on a clean history and on one with 1% of tool-call pairs broken deterministically
(every 100th turn loses its tool return, and every 100th turn, offset by 50, gains an orphan
return). Times are per message (µs) and ratios > 1 mean Threadline is faster.
"""

from __future__ import annotations

import argparse
import copy
import json
import warnings
from functools import partial
from typing import Any

from _common import best_of, workload

from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.messages import repair_messages, sanitize_messages


def broken(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """1% of pairs broken: drop the return of every 100th turn, add an orphan every 100th turn."""
    out = copy.deepcopy(raw)
    turns = len(out) // 4
    for turn in range(0, turns, 100):
        out[turn * 4 + 2]['parts'] = [
            {'content': 'no result', 'timestamp': out[turn * 4 + 2]['timestamp'], 'part_kind': 'user-prompt'}
        ]
    for turn in range(50, turns, 100):
        orphan = dict(out[turn * 4 + 2]['parts'][0], tool_call_id=f'orphan_{turn}')
        out[turn * 4 + 2]['parts'].append(orphan)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--sizes', default='1000,10000,100000')
    args = parser.parse_args()
    from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
    from pydantic_ai.messages import repair_messages as ref_repair
    from pydantic_ai.messages import sanitize_messages as ref_sanitize

    warnings.simplefilter('ignore')
    wl = workload()
    print(f'{"messages":>9} {"history":>7} {"op":>9} {"threadline µs/msg":>18} {"pydantic-ai µs/msg":>19} {"ratio":>7}')
    for size in (int(s) for s in args.sizes.split(',')):
        clean = wl.history(size)
        for label, raw in (('clean', clean), ('1% bad', broken(clean))):
            data = json.dumps(raw).encode()
            ours, theirs = OurTA.validate_json(data), ReferenceTA.validate_json(data)
            assert json.loads(OurTA.dump_json(repair_messages(ours))) == json.loads(
                ReferenceTA.dump_json(ref_repair(theirs))
            )
            repeat = 3 if size >= 100_000 else 7
            for op, mine, reference in (
                ('repair', partial(repair_messages, ours), partial(ref_repair, theirs)),
                ('sanitize', partial(sanitize_messages, ours), partial(ref_sanitize, theirs)),
            ):
                t_ours = best_of(mine, repeat=repeat) / len(ours) * 1e6
                t_ref = best_of(reference, repeat=repeat) / len(ours) * 1e6
                print(f'{len(ours):>9} {label:>7} {op:>9} {t_ours:18.3f} {t_ref:19.3f} {t_ref / t_ours:6.1f}x')


if __name__ == '__main__':
    main()
