"""`pip install 'threadline[server]'` holds everything the server serves: every third-party module
the server's code and the UI protocols it answers import is a core requirement or in the `server`
extra (durable turns, `--durable`, take the `dbos` extra on top, and say so)."""

from __future__ import annotations

import ast
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement

SRC = Path(__file__).resolve().parents[2] / 'src' / 'threadline'
SERVED = [*sorted((SRC / 'server').glob('*.py')), *sorted((SRC / 'ui').rglob('*.py'))]
OWN_EXTRA = {'_durable.py': 'dbos'}


def _third_party(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        modules |= {n.split('.')[0] for n in names}
    return {m for m in modules if m != 'threadline' and m not in sys.stdlib_module_names and m != '__future__'}


def _requirements(extra: str, distribution: str = 'threadline') -> set[str]:
    """What installing `distribution[extra]` installs: its requirements and theirs."""
    names, todo = set(), [(distribution, extra)]
    while todo:
        name, wanted = todo.pop()
        try:
            lines = requires(name) or []
        except PackageNotFoundError:  # a requirement whose marker leaves it out of this install
            continue
        for line in lines:
            requirement = Requirement(line)
            marker = requirement.marker
            found = requirement.name.lower().replace('_', '-')
            if (marker is None or marker.evaluate({'extra': wanted})) and found not in names:
                names.add(found)
                todo.append((found, ''))
    return names


def test_the_server_extra_holds_what_the_server_imports() -> None:
    distributions = packages_distributions()
    missing = []
    for path in SERVED:
        allowed = _requirements('server') | (_requirements(OWN_EXTRA[path.name]) if path.name in OWN_EXTRA else set())
        for module in sorted(_third_party(path)):
            names = {d.lower().replace('_', '-') for d in distributions.get(module, [module])}
            if not names & allowed:
                missing.append(f'{path.relative_to(SRC)} imports {module} ({", ".join(sorted(names))})')
    assert missing == []
