"""Commands that act on what `threadline audit` finds, and the lines that tell a person which to run.

- `threadline reconcile CID CALL_ID --result TEXT --evidence REF` closes a tool call the ledger
  left unknown (INTERRUPTED_TOOL) with what the destination says happened.
- `threadline outcome CID --expected TEXT --evidence REF` records what the destination confirmed
  for the conversation's last run (MISSING_OUTCOME_RECEIPT).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from threadline.cli._app import cli, dump, shared_options, state_for

if TYPE_CHECKING:  # the CLI loads what a command uses when it runs (see cli/README.md)
    from threadline.audit import AuditReport
    from threadline.storage import AsyncStore, SyncStore

__all__ = ['fix_lines', 'outcome', 'reconcile']


@cli.command(short_help='Close a tool call a crash left unknown.')
@click.argument('conversation_id')
@click.argument('tool_call_id')
@click.option('--result', required=True, help='What the destination says the call did (the tool result to record).')
@click.option('--evidence', required=True, help='Where that was read (e.g. payments:refund-42).')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: {conversation_id, tool_call_id, revision}.')
@shared_options
def reconcile(
    conversation_id: str,
    tool_call_id: str,
    result: str,
    evidence: str,
    as_json: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Close a tool call left unknown by a crash (audit: INTERRUPTED_TOOL) with its real result,
    after checking the destination by the ledger's idempotency key. Never re-runs the tool."""
    from threadline.audit import reconcile_tool_call

    state = state_for(db, scope, debug)
    revision = reconcile_tool_call(
        state.existing, conversation_id, tool_call_id, scope=state.scope, result=result, evidence=evidence
    )
    if as_json:
        dump({'conversation_id': conversation_id, 'tool_call_id': tool_call_id, 'revision': revision})
    else:
        click.echo(f'reconciled {tool_call_id} in {conversation_id} (revision {revision})')


@cli.command(short_help='Record what the destination confirmed.')
@click.argument('conversation_id')
@click.option('--expected', required=True, help='The effect the run was meant to have (e.g. "refund order 42").')
@click.option('--evidence', required=True, help='Where it was confirmed (e.g. payments:pay-1001).')
@click.option('--destination', default=None, help='The system that holds the effect (e.g. payments).')
@click.option('--key', 'idempotency_key', default=None, help='The idempotency key the effect was made under.')
@click.option('--observed', default=None, help='The revision or id the destination reported.')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: the receipt.')
@shared_options
def outcome(
    conversation_id: str,
    expected: str,
    evidence: str,
    destination: str | None,
    idempotency_key: str | None,
    observed: str | None,
    as_json: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Record what the destination confirmed for the conversation's last run (audit:
    MISSING_OUTCOME_RECEIPT)."""
    state = state_for(db, scope, debug)
    store = state.existing.sync
    tail = store.load(conversation_id, scope=state.scope, last=1).messages
    run_id = tail[-1].run_id if tail else None
    receipt = store.record_outcome(
        conversation_id,
        scope=state.scope,
        run_id=run_id,
        expected_effect=expected,
        destination=destination,
        idempotency_key=idempotency_key,
        observed_revision=observed,
        evidence_ref=evidence,
    )
    if as_json:
        dump(receipt.__dict__)
    else:
        click.echo(f'recorded the outcome of run {run_id} in {conversation_id}')


def fix_lines(report: AuditReport, target: str, store: AsyncStore[SyncStore], scope: str, stored: bool) -> list[str]:
    """For each finding of an audit, the command that acts on it (or, where none can, what to do)."""
    cid = shlex.quote(target)
    lines: list[str] = []
    for failure in report.failures:
        if failure == 'INTERRUPTED_TOOL' and stored:
            for effect in store.sync.tool_effects_for_conversation(target, scope=scope, status='started'):
                key = f' (look it up by {effect.idempotency_key!r})' if effect.idempotency_key else ''
                lines.append(
                    f"threadline reconcile {cid} {shlex.quote(effect.tool_call_id)} --result '…' --evidence '…'{key}"
                )
        elif failure == 'MISSING_OUTCOME_RECEIPT' and stored:
            lines.append(f"threadline outcome {cid} --expected '…' --evidence '…'")
        elif failure == 'SCOPE_DRIFT' and stored:
            lines.append(f'threadline conversations fork {cid}   (continue under its own id)')
        elif failure == 'UNTRUSTED_HISTORY':
            lines.append("threadline audit <the stored conversation's id>   (act on the store's copy, not this one)")
        elif failure == 'SYSTEM_PROMPT_GAP':
            lines.append(f'threadline audit {cid} --prompt-file PROMPT.txt   (check it against the prompt you require)')
    return lines
