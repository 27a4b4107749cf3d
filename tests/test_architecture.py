"""The walls between Threadline's packages, held by reading the source (ARCHITECTURE.md, "Layers").

1. The order of packages: a module imports only its own package and the packages before it in
   `ORDER`, at module level, inside functions and under `TYPE_CHECKING` alike. `ui` imports only
   `messages` and `exceptions`. A pinned public name that would cross the order resolves lazily
   through its module's `__getattr__`, and only the re-exports in `LAZY_REEXPORTS` may.
2. Private means private: no module imports another package's `_x` module (what siblings need is
   exported, or named in a small public-internal module such as `messages.wire`). An import made
   inside a function is of an optional extra (`EXTRAS`), of a deferred core dependency
   (`DEFERRED`), of a module that needs an extra (`OPTIONAL`), a listed lazy re-export, one of the
   few listed imports inside a package (`CYCLES`), or made by the CLI (`LAZY_ROOMS`).
3. Trust owns every MAC: no module outside `threadline.trust` imports `hmac`.
4. `Any` stays rare: at most `ANY_PER_THOUSAND_LINES` uses per 1,000 lines of `src/`.

Each rule is checked on the tree and, to show the check can fail, on a module with the forbidden
import added.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src' / 'threadline'

ORDER: tuple[str, ...] = (
    'exceptions',
    '_uuid',
    '_public',
    'messages',
    'trust',
    '_errors',
    'storage',
    'models',
    'agent',
    'usage',
    'profiles',
    'concurrency',
    'toolsets',
    'realtime',
    'capabilities',
    'audit',
    'steps',
    'search',
    'memory',
    'durable',
    'ui',
    'server',
    'cli',
    '__init__',  # the package itself: `from threadline import Agent` gathers what users import first
    '__main__',
    'pydantic_ai',  # last: Threadline's features for a pydantic-ai Agent may use every package
)
"""Every package and top-level module of `threadline`, each allowed to import those before it."""

UI_MAY_IMPORT = frozenset({'exceptions', 'messages', 'ui'})

LAZY_REEXPORTS: frozenset[tuple[str, str]] = frozenset(
    {
        ('threadline.storage', 'threadline.steps'),  # StepPersistence, continue_run, ... (pinned)
        ('threadline.models.anthropic', 'threadline.memory.anthropic'),  # MemoryTool (pinned)
        # `import threadline` does not load the storage layer; these two load it when first used
        ('threadline', 'threadline.search'),  # ConversationSearch
        ('threadline', 'threadline.memory'),  # Memory
    }
)
"""(module whose `__getattr__` re-exports, module it imports from): the only imports against the
order, or made inside a function without an optional extra. The module may also import the names
under `TYPE_CHECKING`, for type checkers."""

PYDANTIC_AI: frozenset[str] = frozenset({'pydantic_ai', 'pydantic_ai_harness'})
"""Imported only by `threadline.pydantic_ai`: inside its functions, under `TYPE_CHECKING`, or at
the top of the modules in `PYDANTIC_AI_SUBCLASSES`, which the package loads on first use."""

PYDANTIC_AI_SUBCLASSES: frozenset[str] = frozenset(
    {
        'threadline.pydantic_ai._step_persistence',
        'threadline.pydantic_ai._adapted',
        'threadline.pydantic_ai._served',
        'threadline.pydantic_ai._harness_store',
    }
)
"""Modules whose classes subclass pydantic-ai's (its capabilities) or build the harness's records:
reached only through the package's `__getattr__`, so `import threadline.pydantic_ai` does not load
pydantic-ai (or the harness)."""

BRIDGES: frozenset[tuple[str, str]] = frozenset(
    {
        # `threadline serve --agent` handed a pydantic-ai Agent serves it through ServedAgent
        ('threadline.cli._serve', 'threadline.pydantic_ai'),
    }
)
"""(module, module it imports inside a function against the order): the imports of
`threadline.pydantic_ai`, last in the order, made only when a pydantic-ai object is handed over."""

OPTIONAL: frozenset[str] = frozenset(
    {
        'threadline.models.anthropic',
        'threadline.models.google',
        'threadline.models.openai',
        'threadline.models.openai_responses',
        'threadline.server',
        'threadline.storage.postgres',
        'threadline.ui.ag_ui',
        'threadline.ui.vercel_ai',
        'threadline.durable._dbos',
        'threadline.durable._approval',
    }
    | PYDANTIC_AI_SUBCLASSES
)
"""Modules that import an optional extra (a provider SDK, psycopg, starlette, ag-ui) when loaded:
the only ones another package may import inside a function, so that a command or an import that
does not use the extra does not need it."""


EXTRAS: frozenset[str] = frozenset(
    {
        'anthropic',
        'openai',
        'google',
        'httpx',
        'genai_prices',
        'psycopg',
        'psycopg_pool',
        'starlette',
        'uvicorn',
        'ag_ui',
        'pydantic_ai',
        'pydantic_ai_harness',
        'dbos',
    }
    | {'readline', 'fcntl'}  # not on every platform (imported where a lock or a prompt needs them)
)
"""Third-party packages that only an extra installs: imported inside the functions that use them."""

DEFERRED: frozenset[str] = frozenset({'pydantic', 'pydantic_core', 'opentelemetry', 'griffe'})
"""Core dependencies that are also imported inside functions, because loading them costs: pydantic
and pydantic-core only build schemas and validators (for tools, outputs and pydantic models that
hold messages), opentelemetry only matters to `Instrumentation`, and griffe only reads a tool's
docstring. At module level they made
`import threadline` take 267 ms instead of 196 ms (medians of 11, `python -X importtime`)."""

CYCLES: frozenset[tuple[str, str]] = frozenset(
    {
        # pydantic builds a message's schema long after import; the codec it needs imports the
        # message classes, which import this module
        ('threadline.messages._pydantic', 'threadline.messages._adapter'),
        ('threadline.messages._pydantic', 'threadline.messages._codec'),
        # `threadline.models` imports FallbackModel, which resolves model names with its infer_model
        ('threadline.models.fallback', 'threadline.models'),
        ('threadline.models.concurrency', 'threadline.models'),  # infer_model, as FallbackModel does
        # `_pydantic` builds messages' pydantic schemas with pydantic-core (DEFERRED): it loads with them
        ('threadline.messages._base', 'threadline.messages._pydantic'),
        # not a cycle: realtime sessions load when `agent.realtime()` is first called, not with the agent
        ('threadline.agent._agent', 'threadline.agent.realtime'),
    }
)
"""(module, module it imports inside a function) within one package, each with its reason: module
cycles, and one load deferred to first use."""


LAZY_ROOMS: frozenset[str] = frozenset({'cli'})
"""Rooms whose functions import what they use: a CLI command loads only what it needs, so
`threadline --help` and a light command do not pay for storage, the audit or the models."""


@dataclass(frozen=True)
class Import:
    """One import of a Threadline module, as the checks see it."""

    source: str  # the importing module, dotted
    target: str  # the module imported (for `from m import n`, `m.n` when that is a module)
    line: int
    in_function: str | None  # the enclosing function's name, if any
    type_only: bool  # under `if TYPE_CHECKING:`


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def room(module: str) -> str:
    """The entry of `ORDER` a dotted module belongs to."""
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else '__init__'


def is_lazy(imp: Import) -> bool:
    if (imp.source, imp.target) in BRIDGES:
        return imp.in_function is not None and not imp.type_only
    return (imp.source, imp.target) in LAZY_REEXPORTS and (imp.in_function == '__getattr__' or imp.type_only)


def needs_extra(module: str) -> bool:
    return any(module == m or module.startswith(m + '.') for m in OPTIONAL)


def is_module(dotted: str) -> bool:
    path = SRC.parent.joinpath(*dotted.split('.'))
    return path.with_suffix('.py').is_file() or (path / '__init__.py').is_file()


WATCHED = frozenset({'threadline', 'hmac'}) | PYDANTIC_AI  # recorded wherever they are imported


def imports_of(source: str, tree: ast.Module) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, function: str | None, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, function or child.name, type_only)
            elif isinstance(child, ast.If) and ast.unparse(child.test) in ('TYPE_CHECKING', 'typing.TYPE_CHECKING'):
                visit(child, function, True)
            elif isinstance(child, ast.Import):
                found.extend(
                    Import(source, alias.name, child.lineno, function, type_only)
                    for alias in child.names
                    if alias.name.split('.')[0] in WATCHED or function
                )
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                if child.module.split('.')[0] not in WATCHED and not function:
                    continue
                if child.module.split('.')[0] != 'threadline':
                    found.append(Import(source, child.module, child.lineno, function, type_only))
                    continue
                for alias in child.names:
                    dotted = f'{child.module}.{alias.name}'
                    target = dotted if is_module(dotted) else child.module
                    found.append(Import(source, target, child.lineno, function, type_only))
            else:
                visit(child, function, type_only)

    visit(tree, None, False)
    return found


def all_imports(extra: dict[str, str] | None = None) -> list[Import]:
    """Every Threadline import in `src/`, plus those of `extra` ({dotted module: source text})."""
    found: list[Import] = []
    for path in sorted(SRC.rglob('*.py')):
        found.extend(imports_of(module_name(path), ast.parse(path.read_text(), str(path))))
    for source, text in (extra or {}).items():
        found.extend(imports_of(source, ast.parse(text)))
    return found


def order_violations(imports: list[Import]) -> list[str]:
    rank = {name: index for index, name in enumerate(ORDER)}
    out = []
    for imp in imports:
        if imp.target.split('.')[0] != 'threadline':
            continue
        mine, theirs = room(imp.source), room(imp.target)
        if imp.target == 'threadline':
            theirs = '__init__'
        if mine == theirs:
            continue
        if is_lazy(imp):
            continue
        if mine == 'ui' and theirs not in UI_MAY_IMPORT:
            out.append(f'{imp.source}:{imp.line} imports {imp.target}: ui imports only messages and exceptions')
        elif rank[theirs] > rank[mine]:
            out.append(f'{imp.source}:{imp.line} imports {imp.target}, which comes after {mine} in the order')
    return out


def private_violations(imports: list[Import]) -> list[str]:
    out = []
    for imp in imports:
        own = imp.target.split('.')[0] == 'threadline'
        if own and room(imp.source) != room(imp.target) and any(p.startswith('_') for p in imp.target.split('.')[2:]):
            out.append(f'{imp.source}:{imp.line} imports {imp.target}, a private module of another package')
        elif imp.in_function and not imp.type_only and not lazy_import_allowed(imp):
            out.append(
                f'{imp.source}:{imp.line} imports {imp.target} inside {imp.in_function}(): import it at the top '
                '(only an optional extra, a module needing one, a listed lazy re-export or a listed module '
                'cycle is imported inside a function)'
            )
    return out


def lazy_import_allowed(imp: Import) -> bool:
    """Whether an import made inside a function is one rule 2 allows."""
    if room(imp.source) in LAZY_ROOMS and imp.target.split('.')[0] != 'hmac':
        return True
    if imp.target.split('.')[0] != 'threadline':
        return imp.target.split('.')[0] in EXTRAS | DEFERRED | {'hmac'}  # hmac: reported by the MAC rule
    return is_lazy(imp) or needs_extra(imp.target) or (imp.source, imp.target) in CYCLES


def mac_violations(imports: list[Import]) -> list[str]:
    return [
        f'{imp.source}:{imp.line} imports hmac: keyed digests are computed by threadline.trust (trust.keys.mac)'
        for imp in imports
        if imp.target.split('.')[0] == 'hmac' and room(imp.source) != 'trust'
    ]


def pydantic_ai_violations(imports: list[Import]) -> list[str]:
    out = []
    for imp in imports:
        if imp.target.split('.')[0] not in PYDANTIC_AI:
            continue
        if room(imp.source) != 'pydantic_ai':
            out.append(f'{imp.source}:{imp.line} imports {imp.target}: only threadline.pydantic_ai imports pydantic-ai')
        elif not imp.in_function and not imp.type_only and imp.source not in PYDANTIC_AI_SUBCLASSES:
            out.append(
                f'{imp.source}:{imp.line} imports {imp.target} at module level: it is an extra, import it lazily'
            )
    return out


def test_only_threadline_pydantic_ai_imports_pydantic_ai_and_lazily() -> None:
    assert pydantic_ai_violations(all_imports()) == []
    eager = [
        imp
        for imp in all_imports()
        if imp.target in PYDANTIC_AI_SUBCLASSES and not imp.type_only and imp.in_function != '__getattr__'
    ]
    assert eager == [], 'a module that subclasses pydantic-ai is loaded on first use only'


def test_importing_threadline_pydantic_ai_does_not_load_pydantic_ai() -> None:
    import subprocess
    import sys

    code = 'import sys, threadline.pydantic_ai; print("pydantic_ai" in sys.modules)'
    assert (
        subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
        == 'False'
    )


def test_every_package_has_a_place_in_the_order() -> None:
    rooms = {room(module_name(path)) for path in SRC.rglob('*.py') if path.name != 'py.typed'}
    assert rooms <= set(ORDER), f'add {sorted(rooms - set(ORDER))} to ORDER (and to ARCHITECTURE.md)'


def test_packages_import_only_the_packages_before_them() -> None:
    assert order_violations(all_imports()) == []


def test_no_package_imports_another_packages_private_modules() -> None:
    assert private_violations(all_imports()) == []


def test_only_trust_computes_a_mac() -> None:
    assert mac_violations(all_imports()) == []


def test_lazy_reexports_are_the_listed_ones_and_still_resolve() -> None:
    import importlib

    for module, target in LAZY_REEXPORTS:
        assert is_module(target), f'{target} is listed as a lazy re-export but does not exist'
        namespace, source = importlib.import_module(module), importlib.import_module(target)
        lazy = [name for name in namespace.__all__ if name not in vars(namespace) and name in source.__all__]
        assert lazy, f'{module} re-exports nothing of {target} lazily any more: drop it from LAZY_REEXPORTS'
        for name in lazy:
            assert getattr(namespace, name) is getattr(source, name)


# -- the checks fail when a forbidden import is added --------------------------------------------

FORBIDDEN = {
    'order': ('threadline.messages._planted', 'from threadline.agent import Agent\n'),
    'order-type-only': (
        'threadline.trust._planted',
        'if TYPE_CHECKING:\n    from threadline.storage import SQLiteStore\n',
    ),
    'ui': ('threadline.ui._planted', 'from threadline.storage import SQLiteStore\n'),
    'lazy-elsewhere': (
        'threadline.storage._planted',
        'def load():\n    from threadline.steps import StepPersistence\n',
    ),
    'private': ('threadline.search._planted', 'from threadline.storage.index._query import parse_query\n'),
    'private-from': ('threadline.server._planted', 'from threadline.messages import _codec\n'),
    'in-function': ('threadline.server._planted', 'def f():\n    from threadline.storage import SQLiteStore\n'),
    'mac': ('threadline.storage._planted', 'import hmac\n'),
    'lazy-stdlib': ('threadline.agent._planted', 'def f():\n    import json\n'),
    'lazy-own': ('threadline.agent._planted', 'def f():\n    from threadline.agent._graph import End\n'),
    'pydantic-ai-elsewhere': ('threadline.storage._planted', 'def f():\n    import pydantic_ai\n'),
    'pydantic-ai-eager': ('threadline.pydantic_ai._planted', 'from pydantic_ai import Agent\n'),
    'before-pydantic-ai': ('threadline.server._planted', 'from threadline.pydantic_ai import to_pydantic_ai\n'),
}


@pytest.mark.parametrize('case', sorted(FORBIDDEN))
def test_a_planted_forbidden_import_is_reported(case: str) -> None:
    module, text = FORBIDDEN[case]
    planted = imports_of(module, ast.parse(text))
    reported = (
        order_violations(planted)
        + private_violations(planted)
        + mac_violations(planted)
        + pydantic_ai_violations(planted)
    )
    assert reported, f'the {case!r} import was not reported'
    assert all(line.startswith(module) for line in reported)


def test_an_allowed_import_is_not_reported() -> None:
    text = (
        'from threadline.messages import ModelMessage\n'
        'from threadline.storage.index import parse_query\n'
        'def serve():\n    from threadline.server import create_app\n'
        'def request():\n    import openai\n'
    )
    planted = imports_of('threadline.cli._planted', ast.parse(text))
    assert order_violations(planted) + private_violations(planted) + mac_violations(planted) == []


ANY_PER_THOUSAND_LINES = 25  # issue 34: from 53; wire fields (metadata, tool arguments) count too


def any_per_thousand_lines(root: pathlib.Path) -> float:
    """How often `Any` is written in annotations and expressions (imports of it not counted)."""
    import io
    import tokenize

    lines = uses = 0
    for path in root.rglob('*.py'):
        text = path.read_text()
        lines += len(text.splitlines())
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME and token.string == 'Any':
                uses += not token.line.lstrip().startswith(('from ', 'import '))
    return 1000 * uses / lines


def test_any_stays_rare() -> None:
    """New code states its types: a JSON body is `messages.wire.JSONObject`, an untrusted input
    `object` narrowed by isinstance, an SDK value its SDK type (under TYPE_CHECKING)."""
    assert any_per_thousand_lines(SRC) <= ANY_PER_THOUSAND_LINES


MAX_MODULE_LINES = 500
"""A module that outgrows a screenful of screens has more than one job: split it by job."""


def modules_over(root: pathlib.Path, limit: int) -> dict[str, int]:
    """The Python modules under `root` longer than `limit` lines, with their lengths."""
    lengths = {str(path.relative_to(root)): len(path.read_text().splitlines()) for path in root.rglob('*.py')}
    return {name: n for name, n in sorted(lengths.items()) if n > limit}


def test_modules_stay_small() -> None:
    assert modules_over(SRC, MAX_MODULE_LINES) == {}


def test_an_oversized_module_is_reported(tmp_path: pathlib.Path) -> None:
    (tmp_path / 'big.py').write_text('x = 1\n' * (MAX_MODULE_LINES + 1))
    (tmp_path / 'small.py').write_text('x = 1\n' * MAX_MODULE_LINES)
    assert modules_over(tmp_path, MAX_MODULE_LINES) == {'big.py': MAX_MODULE_LINES + 1}
