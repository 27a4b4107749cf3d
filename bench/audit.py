"""Auditing a stored history vs loading it: the audit must cost at most 5x one `validate_json`.

    uv run python bench/audit.py [--sizes 1000,10000]

The audit time includes every store read it makes (raw history, chain verification, receipts,
waits, ledger, lineage) on SQLite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import workload

from threadline import ModelMessagesTypeAdapter as TA
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.storage import SQLiteStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--sizes', default='1000,10000')
    args = parser.parse_args()
    wl = workload()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / 'audit.db')
        for size in (int(s) for s in args.sizes.split(',')):
            cid = f'audit-{size}'
            raw = json.dumps(wl.history(size, conversation_id=cid)).encode()
            store.sync.append(cid, TA.validate_json(raw), scope='bench')
            contract = PromptContract.for_text('You are a concise support agent.', name='bench', store=store)
            context = AuditContext(
                source='store', store=store, scope='bench', conversation_id=cid, prompt_contract=contract
            )
            samples, loads = [], []
            for _ in range(5):
                start = time.perf_counter()
                report = audit_history(store.sync.load(cid, scope='bench'), context)
                samples.append(time.perf_counter() - start)
                start = time.perf_counter()
                TA.validate_json(raw)
                loads.append(time.perf_counter() - start)
            audit_t, load_t = statistics.median(samples), statistics.median(loads)
            print(
                f'{size:>6} messages: audit (store reads included) {audit_t * 1e3:7.1f} ms   validate_json {load_t * 1e3:6.1f} ms'
                f'   ratio {audit_t / load_t:4.1f}x (target <= 5x)   verdict {report.verdict}'
            )


if __name__ == '__main__':
    main()
