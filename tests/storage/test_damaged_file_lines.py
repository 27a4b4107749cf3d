"""A FileStore whose middle batch line was deleted: `verify()` reports the gap, `load()` says the
file is damaged; neither raises a raw KeyError."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.exceptions import CorruptRecordError
from threadline.storage import FileStore, StoreSeal
from threadline.storage.testing import turn


def test_a_deleted_middle_batch_is_reported_not_raised(tmp_path: Path) -> None:
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = FileStore(tmp_path / 'files', seal=seal).sync
    for k in range(3):
        store.append('c', turn(k, conversation_id='c'), scope='s')
    [path] = (tmp_path / 'files' / 'conversations').glob('*.jsonl')
    lines = path.read_bytes().split(b'\n')
    middle = [i for i, line in enumerate(lines) if b'"t":"batch"' in line][1]
    path.write_bytes(b'\n'.join(lines[:middle] + lines[middle + 1 :]))
    fresh = FileStore(tmp_path / 'files', seal=seal).sync
    check = fresh.verify('c', scope='s')
    assert not check.ok and check.reason == 'stored positions have gaps' and check.first_bad_position == 4
    with pytest.raises(CorruptRecordError, match='message 4 is missing'):
        fresh.load('c', scope='s')
