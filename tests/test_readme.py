"""The README's code example runs and does what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / 'README.md'


def test_readme_example_runs(tmp_path: Path) -> None:
    block = re.search(r'## In ten lines\n\n```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None
    code = block.group(1).replace("'app.db'", repr(str(tmp_path / 'app.db')))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, 'README.md', 'exec'), {})
    assert out.getvalue().strip() == 'MISSING_OUTCOME_RECEIPT'


def test_readme_quick_start_is_what_ci_runs() -> None:
    ci = (README.parent / '.ci' / 'run').read_text()
    assert 'uv run pytest\n' in ci and 'uv run threadline demo' in ci
    assert 'uv run threadline demo' in README.read_text() and 'uv run pytest' in README.read_text()


def test_readme_stateless_pattern_runs() -> None:
    block = re.search(r'The stateless pattern:\n\n```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None and len(block.group(1).strip().splitlines()) <= 12
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), 'README.md', 'exec'), {})
    assert out.getvalue().strip() == 'True None'


def test_readme_compaction_example_runs() -> None:
    text = README.read_text()
    start = text.index('from threadline import Agent\nfrom threadline.capabilities import KeepLastTurns')
    code = text[start:].split('```')[0].replace("'openai:gpt-5.2'", "'test'")  # no key needed
    namespace: dict[str, object] = {}
    exec(compile(code, 'README.md', 'exec'), namespace)
    assert namespace['agent'].run_sync('hi').output  # type: ignore[attr-defined]


def test_readme_pydantic_ai_example_runs(tmp_path: Path) -> None:
    block = re.search(r'### With pydantic-ai .*?\n\n```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None
    code = block.group(1).replace("'app.db'", repr(str(tmp_path / 'pa.db')))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, 'README.md', 'exec'), {})
    assert out.getvalue().strip() == 'True'


def test_readme_harness_example_runs(tmp_path: Path) -> None:
    block = re.search(r'Already on pydantic-ai-harness\?.*?```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None
    code = block.group(1).replace("'harness.db'", repr(str(tmp_path / 'harness.db')))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, 'README.md', 'exec'), {})
    assert out.getvalue().strip() == 'support 2'
