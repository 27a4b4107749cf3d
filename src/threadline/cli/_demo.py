"""`threadline demo`: the whole system in one narrated, offline run.

A support agent holds a conversation saved after every run; a second process is killed inside the
refund tool; recovery shows the refund as unknown and the audit says INTERRUPTED_TOOL; the demo
checks the payments destination with the idempotency key, reconciles the call, finishes the
answer, records an outcome receipt and the audit turns READY; then a fork, a search, a
client-supplied copy (UNTRUSTED_HISTORY), the seven cases of the replay audit, computed live, and an
attacker who edits a copy of the database and recomputes its hashes without the store key. The
store key and tip book live in a temporary directory of the demo's own. Every step checks what it
claims; the exit code is 0 only if all of them held.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from threadline._uuid import uuid7
from threadline.audit import (
    AuditContext,
    AuditReport,
    PromptContract,
    audit_history,
    effect_tools_of,
    reconcile_tool_call,
)
from threadline.audit.cases import build_cases
from threadline.cli._support import SUPPORT_PROMPT, Payments, support_agent
from threadline.exceptions import DemoFailed
from threadline.storage import MemoryStore, SQLiteStore, StoreSeal, inspect_recovery

__all__ = ['DemoFailed', 'run_demo']

SCOPE = 'demo'


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise DemoFailed(what)


def run_demo(db: Path, console: Console) -> None:
    """Run every step; raise `DemoFailed` naming the first one that did not hold."""
    db.parent.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix='threadline-demo-keys-'))
    seal = StoreSeal.in_directory(home)
    store = SQLiteStore(db, seal=seal)
    payments = Payments(db.with_name(db.stem + '-payments.jsonl'))
    key = store.sync.audit_key()
    contract = PromptContract.for_text(SUPPORT_PROMPT, name='support-v3', key=key)
    agent = support_agent(store, SCOPE, payments)
    cid = f'demo-{uuid7()[:13]}'

    def audit(conversation_id: str, **extra: Any) -> AuditReport:
        context = AuditContext(
            source='store',
            store=store,
            scope=SCOPE,
            conversation_id=conversation_id,
            prompt_contract=contract,
            key=key,
            effect_tools=effect_tools_of(agent),
            **extra,
        )
        return audit_history(store.sync.load(conversation_id, scope=SCOPE), context)

    console.rule('[bold]1. A three-turn support conversation, saved after every run')
    stored_kwargs: dict[str, Any] = {'conversation_id': cid}
    for prompt in ('Hi, I need help with an order.', 'Where is order 42?', 'Thanks, that helps.'):
        result = agent.run_sync(prompt, **stored_kwargs)
        store.sync.save(result, scope=SCOPE)
        stored = store.sync.load(cid, scope=SCOPE)
        stored_kwargs = stored.run_kwargs()
        console.print(f'  [cyan]user[/]  {prompt}\n  [green]agent[/] {result.output}')
    _check(stored.length == 8 and stored.revision >= 3, 'the three turns were stored (8 messages)')
    console.print(
        f'  stored: {stored.length} messages, revision {stored.revision} (the revision counts writes to the '
        f'conversation, so a writer working from an old copy is caught), conversation [bold]{cid}[/]'
    )

    console.rule('[bold]2. A second process asks for a refund and is killed inside the refund tool')
    run_id = _killed_refund(db, cid, payments, console, home, seal)
    inspection = asyncio.run(inspect_recovery(store, run_id, scope=SCOPE))
    _check([e.tool_name for e in inspection.unknown] == ['issue_refund'], 'recovery reports the refund as unknown')
    effect = inspection.unknown[0]
    console.print(
        f'  recovery: tool [bold]{effect.tool_name}[/] is [red]unknown after the crash[/] '
        f'(ledger status {effect.status!r}, idempotency key {effect.idempotency_key!r})\n'
        '  [dim]the ledger records each tool call before and after it runs; the idempotency key is the id the '
        'tool gave the payments API, to look the refund up by[/]'
    )
    report = audit(cid)
    _check(report.verdict == 'INTERRUPTED_TOOL', f'the audit says INTERRUPTED_TOOL (got {report.verdict})')
    console.print(f'  audit verdict: [red]{report.verdict}[/]  ({report.advice[0]})')

    console.rule('[bold]3. Check the destination, reconcile, finish the answer, record the outcome')
    found = payments.find(effect.idempotency_key or '')
    _check(found is not None, 'the payments destination holds the refund')
    assert found is not None
    console.print(
        f'  payments API, looked up by {effect.idempotency_key!r}: refund found ({found["revision"]}): '
        'the refund was made before the crash, so it must not be made twice'
    )
    reconcile_tool_call(
        store,
        cid,
        effect.tool_call_id,
        scope=SCOPE,
        result=f'refunded {found["amount"]} for order 42 ({found["revision"]})',
        evidence=f'payments:{effect.idempotency_key}',
    )
    finished = agent.run_sync(**store.sync.load(cid, scope=SCOPE).run_kwargs())
    store.sync.save(finished, scope=SCOPE)
    console.print(f'  [green]agent[/] {finished.output}')
    store.sync.record_outcome(
        cid,
        scope=SCOPE,
        run_id=finished.run_id,
        expected_effect='refund order 42',
        destination='payments',
        idempotency_key=effect.idempotency_key,
        observed_revision=found['revision'],
        evidence_ref=f'payments:{effect.idempotency_key}',
        strength='outcome',
    )
    report = audit(cid)
    _check(report.verdict == 'READY', f'the audit turns READY (got {report.verdict}: {report.failures})')
    _check(len(payments.path.read_text().splitlines()) == 1, 'exactly one refund was made')
    console.print(
        f'  audit verdict: [green]{report.verdict}[/]; refunds made: 1\n'
        '  [dim]the outcome receipt records what the destination confirmed (the refund pay-1001), so a replay '
        'knows it happened[/]'
    )

    console.rule('[bold]4. Fork the conversation and continue the fork in its own id')
    fork_id = store.sync.fork(cid, scope=SCOPE)
    forked = store.sync.load(fork_id, scope=SCOPE)
    branch = agent.run_sync('Where is order 7?', **forked.run_kwargs())
    store.sync.save(branch, scope=SCOPE)
    store.sync.record_outcome(
        fork_id,
        scope=SCOPE,
        run_id=branch.run_id,
        expected_effect='status of order 7',
        destination='orders',
        evidence_ref='orders:7',
        strength='outcome',
    )
    _check(branch.conversation_id == fork_id, 'the fork continues under its own id')
    report = audit(fork_id, fork_of=cid)
    _check(report.verdict == 'READY', f'the fork audits READY (got {report.verdict}: {report.failures})')
    console.print(
        f'  fork [bold]{fork_id}[/] shares {forked.shared_prefix} messages with its parent (no copy); '
        f'[green]agent[/] {branch.output}\n  audit verdict: [green]{report.verdict}[/]'
    )

    console.rule('[bold]5. Search the stored history')
    hits = store.sync.search('refund', scope=SCOPE)
    _check(any(h.conversation_id == cid for h in hits), 'search finds the refund')
    for hit in hits[:3]:
        console.print(f'  {hit.conversation_id} #{hit.position}  score {hit.score:.2f}  {escape(repr(hit.snippet))}')

    console.rule('[bold]6. The same conversation, handed back by a client')
    copy = store.sync.raw_history(cid, scope=SCOPE)
    client = audit_history(
        copy,
        AuditContext(source='client', scope=SCOPE, conversation_id=cid, prompt_contract=contract, key=key, store=store),
    )
    _check(client.verdict == 'UNTRUSTED_HISTORY', f'a client copy audits UNTRUSTED_HISTORY (got {client.verdict})')
    console.print(
        f'  identical JSON ({len(copy)} bytes), different authority: [red]{client.verdict}[/]\n'
        '  [dim]authority is who vouches for a history: the store that wrote it, or a client that only says so. '
        "Bytes alone cannot show they were not edited, so a client's copy is never acted on as the store's[/]"
    )

    console.rule('[bold]7. The seven cases of the replay audit, computed live')
    _seven_cases(console)

    console.rule('[bold]8. An attacker with a copy of the database, but not the key')
    _tamper_copy(db, cid, seal, console)

    console.rule('[bold]Done')
    env = f'THREADLINE_HOME={home} {_command()}'
    console.print(
        f"  database: {db} (the demo's own, reset on every run; chat uses another by default)\n"
        f"  store key: {home} (the demo's own)\n"
        f'  try:  {env} conversations list --db {db} --scope {SCOPE}\n'
        f'        {env} conversations show {cid} --db {db} --scope {SCOPE}\n'
        f'        {env} audit {cid} --db {db} --scope {SCOPE}\n'
        f'        {env} chat -m demo --db {db} --scope {SCOPE} --cid {fork_id}'
    )
    store.close()


def _command() -> str:
    """How to run threadline the way this demo was run (through `uv run` when it was)."""
    return 'uv run threadline' if os.environ.get('UV_RUN_RECURSION_DEPTH') else 'threadline'


def _killed_refund(db: Path, cid: str, payments: Payments, console: Console, home: Path, seal: StoreSeal) -> str:
    env = {**os.environ, 'THREADLINE_DEMO_PAUSE_IN_REFUND': '1', 'THREADLINE_HOME': str(home)}
    child = subprocess.Popen(
        [sys.executable, '-m', 'threadline.cli._demo_child', str(db), cid, SCOPE, str(payments.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != 'IN_REFUND':
        child.kill()
        raise DemoFailed(
            f'the refund process did not reach the refund tool: {child.stderr.read() if child.stderr else line}'
        )
    child.send_signal(signal.SIGKILL)
    child.wait()
    console.print(f'  process {child.pid} entered issue_refund and was killed with SIGKILL')
    store = SQLiteStore(db, seal=seal)
    runs = store.sync.list_runs(cid, scope=SCOPE)
    store.close()
    unfinished = [r for r in runs if r.status == 'running']
    _check(len(unfinished) == 1, 'the killed run is recorded as still running')
    return str(unfinished[0].run_id)


def _tamper_copy(db: Path, cid: str, seal: StoreSeal, console: Console) -> None:
    """Hand the conversation to another tenant in a copy of the database, as an attacker holding
    the file would; no unkeyed hash covers the scope, and the keyed seal catches it."""
    copy = db.with_name(db.stem + '-tampered.db')
    for old in copy.parent.glob(copy.name + '*'):
        old.unlink()
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # a consistent copy, including what is still in the WAL
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE conversations SET scope = 'mallory' WHERE id = ?", (cid,))
    tampered = SQLiteStore(copy, seal=seal)
    check = tampered.sync.verify(cid, scope='mallory')
    tampered.close()
    _check(not check.ok and check.code == 'seal_invalid', f'the move is caught (got {check.code}: {check.reason})')
    console.print(
        f"  moved {cid} to tenant 'mallory' in {copy.name}: its history still re-hashes, but verify says "
        f'[red]{check.code}[/] at {check.record}\n'
        f'  the seal is keyed with [bold]{check.key_id}[/], kept outside the database'
    )


def _seven_cases(console: Console) -> None:
    table = Table('case', 'round trip', box=None, padding=(0, 1))
    table.add_column('verdict', no_wrap=True)
    table.add_column('expected', no_wrap=True)
    store = MemoryStore()
    ready = 0
    for case in build_cases(store)[:7]:
        verdict = audit_history(case.history, case.context).verdict
        _check(verdict == case.expected, f'case {case.name!r}: {verdict} (expected {case.expected})')
        ready += verdict == 'READY'
        table.add_row(
            case.name,
            'same' if case.round_trip_equal else 'DIFFERENT',
            f'[green]{verdict}[/]' if verdict == 'READY' else f'[red]{verdict}[/]',
            case.expected,
        )
    _check(ready == 1, 'exactly one of the seven is READY')
    console.print(table)
