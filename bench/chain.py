"""The hash chain before and after canonical bytes are computed once per message.

    uv run python bench/chain.py [--size 10000] [--runs 9]

Before, a write chained each message by encoding it to wire JSON, decoding that JSON and encoding
it again with sorted keys; now it encodes the message once with a sorted encoder
(`messages.wire.canonical_bytes`), byte-identical (tests/trust/test_canonical.py). Printed, GC on,
medians of interleaved runs, both ways in the same process:
- chaining a history of `--size` messages (what `sign_history` and a first save pay);
- a SQLite `append` of one 4-message turn onto a conversation of `--size` messages (the write path
  the change touches, with the old chaining swapped in for "before");
- `verify()` of that conversation, which re-hashes the stored JSON and is unchanged.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from _common import medians, workload

import threadline.storage.sql._base as sql_base
from threadline import ModelMessagesTypeAdapter
from threadline.messages import ModelMessage
from threadline.messages.wire import encoder
from threadline.storage import SQLiteStore
from threadline.trust.sealing import GENESIS, extend_chain, extend_chain_messages


def chained_as_before(link: str, messages: Iterable[ModelMessage]) -> str:
    """The write path's chaining before: wire JSON, decoded and encoded again, per message."""
    return extend_chain(link, (encoder.encode(m) for m in messages))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--size', type=int, default=10_000)
    parser.add_argument('--runs', type=int, default=9)
    args = parser.parse_args()
    print(f'load average: {os.getloadavg()[0]:.2f}; {args.size} messages, medians of {args.runs} interleaved runs')
    wl = workload()
    history = ModelMessagesTypeAdapter.validate_python(wl.history(args.size))
    assert chained_as_before(GENESIS, history) == extend_chain_messages(GENESIS, history)
    chain = medians(
        {
            'before': lambda: chained_as_before(GENESIS, history),
            'after': lambda: extend_chain_messages(GENESIS, history),
        },
        runs=args.runs,
    )
    report(f'chain {args.size} messages', chain)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / 'bench.db')
        store.sync.append('c', history, scope='s')
        turns = iter(range(10**9))

        def append(chaining: Callable[[str, Iterable[ModelMessage]], str]) -> Callable[[], Any]:
            def run() -> None:
                sql_base.extend_chain_messages = chaining  # the only difference between the two
                n = next(turns)
                turn = ModelMessagesTypeAdapter.validate_python(wl.turn(args.size + n, conversation_id='c'))
                store.sync.append('c', turn, scope='s')

            return run

        writes = medians({'before': append(chained_as_before), 'after': append(extend_chain_messages)}, runs=args.runs)
        sql_base.extend_chain_messages = extend_chain_messages
        report(f'append a turn at {args.size}', writes)
        check = store.sync.verify('c', scope='s')
        assert check.ok, check
        verify = medians({'now': lambda: store.sync.verify('c', scope='s')}, runs=max(3, args.runs // 3))
        print(
            f'{"verify() at " + str(check.checked):>28} {verify["now"] * 1e3:9.2f} ms (unchanged: re-hashes stored JSON)'
        )
        store.close()


def report(label: str, times: dict[str, float]) -> None:
    before, after = times['before'], times['after']
    print(f'{label:>28} before {before * 1e3:9.2f} ms   after {after * 1e3:9.2f} ms   {before / after:5.2f}x')


if __name__ == '__main__':
    main()
