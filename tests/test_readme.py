"""The README's code example runs and does what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / 'README.md'


def printed_by(pattern: str, replacements: dict[str, str] | None = None) -> str:
    """What the README's code block after `pattern` prints, with `replacements` made in it."""
    block = re.search(pattern + r'.*?```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None, pattern
    code = block.group(1)
    for old, new in (replacements or {}).items():
        code = code.replace(old, new)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, 'README.md', 'exec'), {})
    return out.getvalue().strip()


def test_readme_example_runs(tmp_path: Path) -> None:
    printed = printed_by(r'## In ten lines\n\n', {"'app.db'": repr(str(tmp_path / 'app.db'))})
    assert printed == 'READY'
    declared = printed_by(
        r'## In ten lines\n\n',
        {
            "'app.db'": repr(str(tmp_path / 'declared.db')),
            'prompt_contract=contract)': 'prompt_contract=contract, expect_outcome=True)',
        },
    )
    assert declared == 'MISSING_OUTCOME_RECEIPT'


def test_readme_quick_start_is_what_ci_runs() -> None:
    ci = (README.parent / '.ci' / 'run').read_text()
    assert 'uv run pytest\n' in ci and 'uv run threadline demo' in ci
    assert 'uv run threadline demo' in README.read_text() and 'uv run pytest' in README.read_text()


def test_readme_stateless_pattern_runs() -> None:
    block = re.search(r'The stateless pattern:\n\n```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None and len(block.group(1).strip().splitlines()) <= 12
    assert printed_by(r'The stateless pattern:\n\n') == 'True None'


def test_readme_compaction_example_runs() -> None:
    text = README.read_text()
    start = text.index('from threadline import Agent\nfrom threadline.capabilities import KeepLastTurns')
    code = text[start:].split('```')[0].replace("'openai:gpt-5.2'", "'test'")  # no key needed
    namespace: dict[str, object] = {}
    exec(compile(code, 'README.md', 'exec'), namespace)
    assert namespace['agent'].run_sync('hi').output  # type: ignore[attr-defined]


def test_readme_pydantic_ai_example_runs(tmp_path: Path) -> None:
    assert printed_by(r'### With pydantic-ai ', {"'app.db'": repr(str(tmp_path / 'pa.db'))}) == 'True'


def test_readme_harness_example_runs(tmp_path: Path) -> None:
    printed = printed_by(r'Already on pydantic-ai-harness\?', {"'harness.db'": repr(str(tmp_path / 'harness.db'))})
    assert printed == 'support 2'


def test_readme_durable_example_defines_a_workflow(tmp_path: Path) -> None:
    from dbos import DBOS

    block = re.search(r'Runs that outlive their process.*?```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1).replace("'app.db'", repr(str(tmp_path / 'app.db'))), 'README.md', 'exec'), namespace)
    assert callable(namespace['support_turn']) and (tmp_path / 'app.db').exists()
    DBOS.destroy()  # the block configured DBOS; it was never launched


def test_readme_durable_approval_fragment_is_the_tested_loop() -> None:
    """The fragment is the loop `tests/durable/_approval_child.py` runs (killed while it waits)."""
    block = re.search(r'A run that pauses for approval waits.*?```python\n(.*?)```', README.read_text(), re.S)
    assert block is not None
    body = ''.join(f'    {line}\n' for line in block.group(1).splitlines())
    compile(f'async def workflow(agent, result, conversation_id, workflow_id, DBOS):\n{body}', 'README.md', 'exec')
    child = (README.parent / 'tests' / 'durable' / '_approval_child.py').read_text()
    for call in ('wait_for_approval(result.output)', "send_approval('approve-1'", 'deferred_tool_results=answers'):
        assert call.split('(')[0] in block.group(1) and call in child
