"""`audit_history` reports on any bytes: the inputs fuzzing found raising now give a report."""

from __future__ import annotations

import pytest

from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.messages import ModelMessagesTypeAdapter
from threadline.storage.testing import turn

CONTEXT = AuditContext(source='client', prompt_contract=PromptContract.unchecked(), key=b'k' * 32)
BASE = ModelMessagesTypeAdapter.dump_json(turn(0, conversation_id='c'))


@pytest.mark.parametrize(
    'data',
    [
        BASE.replace(b'"input_tokens":10', b'"input_tokens":10,"cost":-1e400'),
        BASE.replace(b'"input_tokens":10', b'"input_tokens":10,"cost":1e400'),
        BASE.replace(b'question 0', b'question \xff\xfe'),
        BASE.replace(b'question 0', b'question \\ud800'),
        b'[' * 5000 + b']' * 5000,
        b'\x00\xff',
    ],
)
def test_any_bytes_produce_a_report(data: bytes) -> None:
    report = audit_history(data, CONTEXT)
    assert report.verdict == 'SERIALIZATION_FAILURE'
    assert b'question' not in repr(report).encode()
