"""`threadline audit` on an ordinary chat passes, and asks for a receipt only where one is owed."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.cli import main
from threadline.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from threadline.storage import SQLiteStore


def audit(capsys: pytest.CaptureFixture[str], db: Path, cid: str, *flags: str) -> tuple[int, str]:
    code = main(['audit', cid, '--db', str(db), '--scope', 'me', *flags])
    return code, capsys.readouterr().out


def test_a_chat_owes_no_receipt_unless_an_outcome_is_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / 'a.db'
    store = SQLiteStore(db)
    hello = [
        ModelRequest(parts=[UserPromptPart('hello there')], run_id='r1'),
        ModelResponse(parts=[TextPart('Hello!')], run_id='r1'),
    ]
    store.sync.append('chat', hello, scope='me')
    refund = [
        ModelRequest(parts=[UserPromptPart('refund order 9')], run_id='r2'),
        ModelResponse(parts=[ToolCallPart('issue_refund', {'order': 9}, 'c1')], run_id='r2'),
        ModelRequest(parts=[ToolReturnPart('issue_refund', 'done', 'c1')], run_id='r2'),
        ModelResponse(parts=[TextPart('Refunded.')], run_id='r2'),
    ]
    store.sync.append('refund', refund, scope='me')
    store.close()

    code, out = audit(capsys, db, 'chat')
    assert code == 0 and 'verdict: READY' in out and 'no outcome expected' in out
    code, out = audit(capsys, db, 'chat', '--expect-outcome')
    assert code == 11 and 'verdict: MISSING_OUTCOME_RECEIPT' in out and 'no outcome expected' not in out
    assert audit(capsys, db, 'refund')[0] == 0
    code, out = audit(capsys, db, 'refund', '--effect-tool', 'issue_refund')
    assert code == 11 and 'fix: threadline outcome refund' in out  # says how to record the receipt
