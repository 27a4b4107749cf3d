"""Bad input never crashes the loader or the audit: every loader path returns a history or one
`MessageValidationError` naming the place, and every audit returns a report, whatever the bytes
(deep nesting included: the limit is ours, documented, not the interpreter's recursion limit)."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline import ModelMessagesTypeAdapter as TA
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.exceptions import MessageValidationError
from threadline.messages._codec import MAX_JSON_DEPTH, json_depth

CORPUS = sorted((Path(__file__).resolve().parents[1] / 'data' / 'nasty').glob('*.json'))
assert CORPUS, 'the nasty-input corpus is missing from tests/data/nasty'
CONTEXT = AuditContext(
    source='client',
    prompt_contract=PromptContract.for_text('Be brief.', name='p', key=b'k'),
    key=b'k',
    now=datetime(2025, 6, 1, tzinfo=UTC),
)


def loads_or_our_error(load: Any, data: Any) -> None:
    try:
        load(data)
    except MessageValidationError as exc:
        assert exc.location.startswith('messages')


@pytest.mark.parametrize('path', CORPUS, ids=lambda p: p.stem)
def test_each_nasty_input_loads_or_is_one_located_error(path: Path) -> None:
    raw = path.read_bytes()
    loads_or_our_error(TA.validate_json, raw)
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return  # not JSON Python's parser can hold: only the bytes path applies
    loads_or_our_error(TA.validate_python, parsed)


@pytest.mark.parametrize('path', CORPUS, ids=lambda p: p.stem)
def test_the_audit_reports_on_each_nasty_input_without_echoing_it(path: Path) -> None:
    report = audit_history(path.read_bytes(), CONTEXT)
    assert report.verdict in ('SERIALIZATION_FAILURE', 'UNTRUSTED_HISTORY', 'READY') or report.verdict
    shown = json.dumps(report.to_json() if hasattr(report, 'to_json') else repr(report), default=str)
    assert '4111-SECRET' not in shown


def test_the_depth_limit_is_ours_and_named() -> None:
    too_deep = b'[' * (MAX_JSON_DEPTH + 5) + b']' * (MAX_JSON_DEPTH + 5)
    with pytest.raises(MessageValidationError, match=f'deeper than {MAX_JSON_DEPTH}'):
        TA.validate_json(too_deep)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=3), inner),
    max_leaves=40,
)


def reference_depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=examples(500))
@given(json_values)
def test_json_depth_counts_nesting_and_skips_strings(value: Any) -> None:
    assert json_depth(json.dumps(value)) == reference_depth(value)


def test_a_parsed_json_history_is_audited_like_its_bytes() -> None:
    from threadline.audit.cases import _turn  # a small valid history, in the wire form a client sends

    raw = TA.dump_json(_turn('c', 'run-1'))
    as_bytes = audit_history(raw, CONTEXT)
    as_parsed = audit_history(json.loads(raw), CONTEXT)  # what `await request.json()` hands a web handler
    assert as_parsed.verdict == as_bytes.verdict == 'UNTRUSTED_HISTORY'
    assert as_parsed.failures == as_bytes.failures


def _random_document(rng: Any, depth: int = 0) -> Any:
    """A random JSON value shaped like a history often enough to reach deep into the loader."""
    roll = rng.random()
    if depth > 6 or roll < 0.3:
        return rng.choice([None, True, 0, -1, 2**63, 1e308, -1e308, 'x', '', '\u0000', 'request', 'tool-return', []])
    if roll < 0.55:
        return [_random_document(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = [
        'kind',
        'parts',
        'part_kind',
        'content',
        'tool_name',
        'tool_call_id',
        'args',
        'usage',
        'state',
        'timestamp',
        'metadata',
        'input_tokens',
        'outcome',
        'media_type',
        'url',
        'data',
    ]
    document = {rng.choice(keys): _random_document(rng, depth + 1) for _ in range(rng.randrange(5))}
    if rng.random() < 0.5:
        document['kind'] = rng.choice(['request', 'response'])
        document['parts'] = [
            {
                'part_kind': rng.choice(['user-prompt', 'text', 'tool-call', 'tool-return', 'thinking', 'file']),
                **{rng.choice(keys): _random_document(rng, depth + 2) for _ in range(rng.randrange(4))},
            }
            for _ in range(rng.randrange(3))
        ]
    return document


@pytest.mark.slow
def test_100k_random_inputs_load_or_fail_cleanly_and_always_get_a_report() -> None:
    import random

    rng = random.Random(20261130)
    loaded = refused = 0
    for _ in range(100_000):
        document = [_random_document(rng) for _ in range(rng.randrange(3))]
        raw = json.dumps(document).encode()
        if rng.random() < 0.05:  # some nesting beyond the limit, and some truncation
            raw = b'[' * rng.randrange(100, 3000) + raw if rng.random() < 0.5 else raw[: rng.randrange(len(raw) + 1)]
        try:
            TA.validate_json(raw)
            loaded += 1
        except MessageValidationError:
            refused += 1
        assert audit_history(raw, CONTEXT).verdict
        with contextlib.suppress(MessageValidationError):
            TA.validate_python(document)
    print(f'fuzz: 100000 inputs, {loaded} loaded, {refused} refused with a located error, 0 crashed')
