"""`threadline --help` (and every command before it uses a model) loads no provider SDK: importing
them cost every command about a second."""

from __future__ import annotations

import json
import subprocess
import sys

SDKS = ('openai', 'anthropic', 'google.genai')


def test_help_imports_no_provider_sdk() -> None:
    probe = (
        'import json, sys\n'
        'from click.testing import CliRunner\n'
        'from threadline.cli import cli\n'
        "result = CliRunner().invoke(cli, ['--help'])\n"
        'assert result.exit_code == 0, result.output\n'
        f'print(json.dumps(sorted(m for m in sys.modules if m.startswith({SDKS!r}))))\n'
    )
    out = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == []
