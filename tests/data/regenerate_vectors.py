"""Regenerate the reference vectors in `tests/data/vectors/` with pydantic-ai (the dev-group oracle).

The inputs are ours (each file's `input`, or the wire history itself); every output is what
pydantic-ai 2.62 computes from them, so the vectors are project data that anyone can rebuild:

    uv run python -m tests.data.regenerate_vectors           # rewrite the outputs in place
    uv run python -m tests.data.regenerate_vectors --check   # exit 1 if any file would change

- `wire/NAME.json`: the history as the reference's `ModelMessagesTypeAdapter.dump_json` writes it
  after loading it. Files in `KEPT_AS_WRITTEN` hold kinds the reference rewrites on load (see
  `vectors/README.md`); they are checked to load in the reference and kept as written.
- `repair/NAME.json`: `repaired` and `repaired_keep_last_response` from the reference's
  `repair_messages` over `input`.
- `sanitize/NAME.json`: `expected` from the reference's `sanitize_messages(input, **options)`.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
from pydantic_ai import messages as ref

from tests.data import VECTORS

KEPT_AS_WRITTEN = {'04_retry_and_string_args.json'}

__all__ = ['VECTORS', 'regenerate']


def _dump(messages: list[Any]) -> Any:
    return json.loads(ReferenceTA.dump_json(messages))


def _wire(path: Path, data: Any) -> Any:
    loaded = ReferenceTA.validate_python(data)
    return data if path.name in KEPT_AS_WRITTEN else _dump(loaded)


def _repair(data: dict[str, Any]) -> dict[str, Any]:
    history = ReferenceTA.validate_python(data['input'])
    return {
        'input': data['input'],
        'repaired': _dump(ref.repair_messages(history)),
        'repaired_keep_last_response': _dump(ref.repair_messages(history, repair_last_response=False)),
    }


def _sanitize(data: dict[str, Any]) -> dict[str, Any]:
    history = ReferenceTA.validate_python(data['input'])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the reference warns about what it strips; the output is what counts
        expected = ref.sanitize_messages(history, **data['options'])
    return {'options': data['options'], 'input': data['input'], 'expected': _dump(expected)}


def regenerate() -> dict[Path, tuple[Any, Any]]:
    """Every vector file with its (stored, regenerated) contents."""
    out: dict[Path, tuple[Any, Any]] = {}
    for path in sorted(VECTORS.glob('*/*.json')):
        stored = json.loads(path.read_bytes())
        kind = path.parent.name
        if kind == 'wire':
            fresh = _wire(path, stored)
        elif kind == 'repair':
            fresh = _repair(stored)
        else:
            fresh = _sanitize(stored)
        out[path] = (stored, fresh)
    return out


def main(argv: list[str]) -> int:
    check = '--check' in argv
    stale = []
    vectors = regenerate()
    for path, (stored, fresh) in vectors.items():
        if stored == fresh:
            continue
        stale.append(path)
        if not check:
            path.write_text(json.dumps(fresh, indent=2) + '\n')
    for path in stale:
        print(f'{"stale" if check else "rewrote"}: {path.relative_to(VECTORS)}')
    print(f'{len(stale)} of {len(vectors)} vectors {"differ" if check else "rewritten"}')
    return 1 if check and stale else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
