"""What `verify()` reports, built the same way by every backend: the history re-hashed along the
lineage's chain (the first message that fails), then the keyed seal (the first record that fails)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from threadline.storage._records import ChainCheck
from threadline.trust.sealing import GENESIS, Problem, Walk, extend_chain

__all__ = ['report']


def report(
    rows: list[tuple[int, str]],
    recorded: Mapping[int, tuple[int, str]],
    chain_head: str,
    walk: Walk,
    problem: Problem | None,
    key_id: str | None,
) -> ChainCheck:
    """The check of one conversation. `rows` are its (position, stored JSON) in order, `recorded`
    maps a whole batch's end to (its start, its link), `problem` is the seal's first failure."""
    key = None if problem is not None and problem.code == 'no_seals' else key_id
    bad = _rehash(rows, recorded, chain_head)
    if bad is not None:
        checked, position, reason = bad
        return ChainCheck(
            False, checked, chain_head, position, reason, None, key, walk.count, walk.tip, 'message_changed'
        )
    if problem is not None:
        reason = f'{problem.where}: {problem.why}'
        return ChainCheck(
            False, len(rows), chain_head, None, reason, problem.where, key, walk.count, walk.tip, problem.code
        )
    return ChainCheck(True, len(rows), chain_head, None, None, None, key, walk.count, walk.tip)


def _rehash(
    rows: Iterable[tuple[int, str]], recorded: Mapping[int, tuple[int, str]], chain_head: str
) -> tuple[int, int | None, str] | None:
    link, count = GENESIS, 0
    for expected, (position, body) in enumerate(rows):
        if position != expected:
            return expected, expected, 'stored positions have gaps'
        try:
            link = extend_chain(link, [body.encode()])
        except msgspec.DecodeError:
            return position, position, 'a stored message is not valid JSON'
        batch = recorded.get(position + 1)
        if batch is not None and batch[1] != link:
            return position + 1, batch[0], 'a stored message changed'
        count = position + 1
    if link != chain_head:
        return count, None, 'the chain head does not match'
    return None
