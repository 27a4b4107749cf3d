"""`MemoryTool`: Anthropic's provider-defined `memory` tool, backed by storage you own.

The model drives a virtual `/memories` directory with the commands of Anthropic's contract
(`memory_20250818`): `view`, `create`, `str_replace`, `insert`, `delete` and `rename`. To Anthropic
the tool is sent as that provider-defined tool (with its beta header); to any other provider it is
an ordinary function tool with the same arguments, so the same agent works everywhere.

Where the files live:
- `MemoryTool(store, scope=..., namespace=...)`: in a Threadline store's notebooks (the store
  `threadline.memory.Memory` uses), one notebook per namespace, scope and namespace resolved from
  the run (usually from deps), never from a tool argument. Every command is one compare-and-set
  write; a retried tool call applies once (the store's operation receipt). Its notebooks are named
  `memory-tool` + U+001F + namespace: a namespace of `Memory` (which holds no control character)
  can never name one, so the two never read each other's notes.
- `MemoryTool(directory=...)`: in a directory on disk. A command holds the directory's lock
  (`flock`, so across processes too) from its read to its write, so concurrent edits all land;
  a file is written to a fresh temporary file (`O_CREAT|O_EXCL|O_NOFOLLOW`) and renamed over the
  old one, so a reader sees the old text or the new, and a link planted beside it is never followed.

Path rules (a security decision; each is tested): a path must be `/memories` or lie under it, given
as an absolute path with `/` separators; `..` and `.` components, empty components, backslashes and
control characters are refused, as are a component over 255 bytes, more than 32 levels, and a
path over 1,024 characters; on disk every existing component must be a plain directory or file,
never a symbolic link. A file cannot hold files, and nothing can be renamed into itself. A refused
path, and any error of the file system, is a tool error naming the path and the rule, never a
crashed run, and nothing is read or written.

Memory files are model-written content: they come back in later conversations as tool results,
which the model may trust more than it should (see `threadline.memory` for the same caveat).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from threadline.agent import RunContext, Tool
from threadline.agent.capability import AbstractCapability, CapabilityDepsT
from threadline.agent.tools import FunctionToolset
from threadline.exceptions import ConflictError, ModelRetry, UserError
from threadline.storage import AsyncStore, SyncStore

__all__ = ['ANTHROPIC_MEMORY_TOOL', 'MemoryTool']

ROOT = '/memories'
ANTHROPIC_MEMORY_TOOL = {'name': 'memory', 'type': 'memory_20250818'}
"""What the Anthropic mapping sends in place of the function definition."""

Command = Literal['view', 'create', 'str_replace', 'insert', 'delete', 'rename']
MAX_NAME, MAX_DEPTH, MAX_PATH = 255, 32, 1_024
NOTEBOOK_PREFIX = 'memory-tool\x1f'
"""What the notebook of a namespace is named after (see the module docstring)."""


def check_path(path: Any) -> list[str]:
    """The components of `path` under `/memories` (empty for the root), or `ModelRetry` naming the
    rule it breaks (see the module docstring)."""
    if not isinstance(path, str) or not path:
        raise ModelRetry(f'a path is required, under {ROOT}')
    if '\\' in path or not path.isprintable():
        raise ModelRetry(f'the path {path!r} is refused: use "/" separators and no control characters')
    if len(path) > MAX_PATH:
        raise ModelRetry(f'the path is refused: over {MAX_PATH} characters')
    if path != ROOT and not path.startswith(ROOT + '/'):
        raise ModelRetry(f'the path {path!r} is outside {ROOT}: every path must start with {ROOT}/')
    if path in (ROOT, ROOT + '/'):
        return []
    rest = path[len(ROOT) + 1 :]
    parts = (rest[:-1] if rest.endswith('/') else rest).split('/')  # one trailing "/" names a directory
    for part in parts:
        if part in ('', '.', '..'):
            raise ModelRetry(f'the path {path!r} is refused: "{part or "//"}" would leave or blur {ROOT}')
        if len(part.encode('utf-8', 'surrogatepass')) > MAX_NAME:
            raise ModelRetry(f'the path is refused: a name in it is over {MAX_NAME} bytes')
    if len(parts) > MAX_DEPTH:
        raise ModelRetry(f'the path is refused: over {MAX_DEPTH} levels deep')
    return parts


class _Files(Protocol):
    """Where the files live: paths are component lists under the root."""

    def listing(self, parts: list[str]) -> list[tuple[str, int]] | None: ...
    def read(self, parts: list[str]) -> str | None: ...
    def write(self, parts: list[str], text: str) -> None: ...
    def remove(self, parts: list[str]) -> bool: ...
    def move(self, old: list[str], new: list[str]) -> None: ...


class _DictFiles:
    """Files as a `{relative path: text}` mapping (a notebook's content)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def listing(self, parts: list[str]) -> list[tuple[str, int]] | None:
        prefix = '/'.join(parts) + '/' if parts else ''
        if parts and '/'.join(parts) in self.files:
            return None
        names = sorted(p for p in self.files if p.startswith(prefix))
        if parts and not names:
            return None
        return [(p, len(self.files[p].encode())) for p in names]

    def read(self, parts: list[str]) -> str | None:
        return self.files.get('/'.join(parts))

    def write(self, parts: list[str], text: str) -> None:
        self.files['/'.join(parts)] = text

    def remove(self, parts: list[str]) -> bool:
        key = '/'.join(parts)
        doomed = [p for p in self.files if p == key or p.startswith(key + '/') or not key]
        for p in doomed:
            del self.files[p]
        return bool(doomed)

    def move(self, old: list[str], new: list[str]) -> None:
        key, target = '/'.join(old), '/'.join(new)
        for p in [p for p in self.files if p == key or p.startswith(key + '/')]:
            self.files[target + p[len(key) :]] = self.files.pop(p)


_TEMP_PREFIX = '.threadline-memory-'


class _DirectoryFiles:
    """Files in a directory; no component may be a symbolic link."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _real(self, parts: list[str]) -> Path:
        current = self.root
        for part in parts:
            current = current / part
            if current.is_symlink():
                raise ModelRetry(f'the path {ROOT}/{"/".join(parts)} is refused: it goes through a symbolic link')
        return current

    def listing(self, parts: list[str]) -> list[tuple[str, int]] | None:
        base = self._real(parts)
        if not base.is_dir():
            return None
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if not path.is_symlink() and not name.startswith(_TEMP_PREFIX):
                    out.append((path.relative_to(self.root).as_posix(), path.stat().st_size))
        return out

    def read(self, parts: list[str]) -> str | None:
        path = self._real(parts)
        return path.read_text(encoding='utf-8') if path.is_file() else None

    def write(self, parts: list[str], text: str) -> None:
        path = self._real(parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._real(parts)  # a link made between the check and the mkdir is still refused
        # mkstemp opens O_CREAT|O_EXCL|O_NOFOLLOW under a fresh name: nothing planted is reused.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=_TEMP_PREFIX)
        try:
            with os.fdopen(fd, 'w', encoding='utf-8') as handle:
                handle.write(text)
            os.replace(temporary, path)  # atomic: a reader sees the old file or the new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def remove(self, parts: list[str]) -> bool:

        path = self._real(parts)
        if path.is_dir():
            shutil.rmtree(path)
            return True
        if path.is_file():
            path.unlink()
            return True
        return False

    def move(self, old: list[str], new: list[str]) -> None:
        target = self._real(new)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._real(old).rename(target)


def run_command(files: _Files, command: str, args: dict[str, Any]) -> str:
    """Apply one command of the contract to `files`; the text the model reads back."""
    if command == 'rename':
        source, target = check_path(args.get('old_path')), check_path(args.get('new_path'))
        if not source or not target:
            raise ModelRetry(f'{ROOT} itself cannot be renamed, nor anything renamed to it')
        if files.read(source) is None and files.listing(source) is None:
            raise ModelRetry(f'{args["old_path"]} does not exist')
        if files.read(target) is not None or files.listing(target) is not None:
            raise ModelRetry(f'{args["new_path"]} already exists: delete it first, or pick another name')
        if target[: len(source)] == source:
            raise ModelRetry(f'{args["old_path"]} cannot be renamed into itself')
        _no_file_above(files, target, str(args['new_path']))
        files.move(source, target)
        return f'Renamed {args["old_path"]} to {args["new_path"]}'
    path = args.get('path')
    parts = check_path(path)
    if command == 'view':
        return _view(files, parts, str(path), args.get('view_range'))
    if not parts:
        raise ModelRetry(f'{command} needs a file under {ROOT}, not {ROOT} itself')
    if command == 'create':
        text = args.get('file_text')
        if not isinstance(text, str):
            raise ModelRetry('create needs file_text')
        if files.listing(parts) is not None:
            raise ModelRetry(f'{path} is a directory')
        _no_file_above(files, parts, str(path))
        files.write(parts, text)
        return f'File created successfully at {path}'
    if command == 'delete':
        if not files.remove(parts):
            raise ModelRetry(f'{path} does not exist')
        return f'Deleted {path}'
    current = files.read(parts)
    if current is None:
        raise ModelRetry(f'{path} does not exist (create it first)')
    if command == 'str_replace':
        old, replacement = args.get('old_str'), args.get('new_str') or ''
        if not isinstance(old, str) or not old:
            raise ModelRetry('str_replace needs old_str')
        count = current.count(old)
        if count != 1:
            what = 'does not appear' if count == 0 else f'appears {count} times'
            raise ModelRetry(f'No replacement was made: old_str {what} in {path}; it must appear exactly once')
        files.write(parts, current.replace(old, str(replacement), 1))
        return f'The file {path} has been edited'
    if command == 'insert':
        line, text = args.get('insert_line'), args.get('insert_text')
        lines = current.split('\n')
        if not isinstance(line, int) or not 0 <= line <= len(lines) or not isinstance(text, str):
            raise ModelRetry(f'insert needs insert_text and an insert_line from 0 to {len(lines)}')
        files.write(parts, '\n'.join([*lines[:line], *text.split('\n'), *lines[line:]]))
        return f'The file {path} has been edited'
    raise ModelRetry(f'unknown command {command!r}: use view, create, str_replace, insert, delete or rename')


def _no_file_above(files: _Files, parts: list[str], path: str) -> None:
    """A file cannot hold files: refuse a path under an existing file."""
    for end in range(1, len(parts)):
        if files.read(parts[:end]) is not None:
            raise ModelRetry(f'{path} is refused: {ROOT}/{"/".join(parts[:end])} is a file, not a directory')


def _view(files: _Files, parts: list[str], path: str, view_range: Any) -> str:
    listing = files.listing(parts)
    if listing is not None:
        rows = '\n'.join(f'{size}\t{ROOT}/{name}' for name, size in listing)
        return f'Files in {path} (size in bytes, path):\n{rows}' if rows else f'{path} is empty'
    text = files.read(parts)
    if text is None:
        raise ModelRetry(f'{path} does not exist')
    lines = text.split('\n')
    start, end = 1, len(lines)
    if view_range is not None:
        if not (isinstance(view_range, list) and len(view_range) == 2 and all(isinstance(v, int) for v in view_range)):
            raise ModelRetry('view_range must be [first line, last line] (-1 for the end)')
        start, end = view_range[0], len(lines) if view_range[1] == -1 else view_range[1]
        if not 1 <= start <= end <= len(lines):
            raise ModelRetry(f'view_range must lie within 1..{len(lines)}')
    return '\n'.join(f'{n:6}\t{lines[n - 1]}' for n in range(start, end + 1))


class MemoryTool(AbstractCapability[CapabilityDepsT]):
    """Gives the agent Anthropic's `memory` tool over storage you own (see the module docstring)."""

    def __init__(
        self,
        store: AsyncStore[SyncStore] | None = None,
        *,
        scope: str | Callable[[RunContext[CapabilityDepsT]], str] | None = None,
        namespace: str | Callable[[RunContext[CapabilityDepsT]], str] | None = None,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if (store is None) == (directory is None):
            raise UserError('MemoryTool needs a store (with scope= and namespace=) or a directory=, not both')
        if store is not None and (scope is None or namespace is None):
            raise UserError('MemoryTool(store, ...) needs scope= and namespace= (resolved from the run, e.g. deps)')
        self.store, self.scope, self.namespace = store, scope, namespace
        self.directory = Path(directory) if directory is not None else None
        tool: Tool[Any] = Tool(self._memory, takes_ctx=True, name='memory')
        tool.tool_def.provider_definitions = {'anthropic': ANTHROPIC_MEMORY_TOOL}
        self._toolset: FunctionToolset[CapabilityDepsT] = FunctionToolset([tool], id='memory')

    def __repr__(self) -> str:
        return f'MemoryTool(directory={str(self.directory)!r})' if self.directory else 'MemoryTool(store)'

    def get_toolset(self) -> FunctionToolset[CapabilityDepsT]:
        return self._toolset

    async def _memory(
        self,
        ctx: RunContext[CapabilityDepsT],
        command: Command,
        path: str | None = None,
        view_range: list[int] | None = None,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        insert_text: str | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> str:
        """Read and edit your memory files under /memories: view a directory or a file, create a
        file, replace a unique string in it, insert lines, delete, rename."""

        args = {k: v for k, v in locals().items() if k not in ('self', 'ctx', 'command') and v is not None}
        if self.directory is not None:
            return await asyncio.to_thread(_in_directory, self.directory, command, args)
        return await asyncio.to_thread(self._in_notebook, ctx, command, args)

    def _resolve(
        self,
        ctx: RunContext[CapabilityDepsT],
        value: str | Callable[[RunContext[CapabilityDepsT]], str] | None,
        what: str,
    ) -> str:
        resolved = value(ctx) if callable(value) else value
        if not isinstance(resolved, str) or not resolved or not resolved.isprintable():
            raise UserError(f'MemoryTool {what} must resolve to a non-empty string without control characters')
        return resolved

    def _in_notebook(self, ctx: RunContext[CapabilityDepsT], command: str, args: dict[str, Any]) -> str:
        """One command as one compare-and-set write of the namespace's notebook (retried on a
        concurrent writer; a retried tool call applies once)."""
        assert self.store is not None  # __init__ takes a store or a directory, and _memory picked the store
        scope = self._resolve(ctx, self.scope, 'scope')
        name = NOTEBOOK_PREFIX + self._resolve(ctx, self.namespace, 'namespace')
        store = self.store.sync
        for _ in range(5):
            notebook = store.read_notebook(name, scope=scope)
            files = _DictFiles(json.loads(notebook.content) if notebook and notebook.content else {})
            before = dict(files.files)
            answer = run_command(files, command, args)
            if files.files == before:
                return answer
            try:
                store.write_notebook(
                    name,
                    json.dumps(files.files, ensure_ascii=False, sort_keys=True),
                    scope=scope,
                    expected_version=notebook.version if notebook else 0,
                    operation_id=f'{ctx.run_id}:{ctx.tool_call_id}',
                )
            except ConflictError:
                continue  # another writer came first: apply the command to what is there now
            return answer
        raise ModelRetry('the memory files kept changing under this command; try it again')


def _in_directory(directory: Path, command: str, args: dict[str, Any]) -> str:
    """One command on the directory's files, under its lock; a file system error is a tool error."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise UserError(f'MemoryTool cannot use its directory {directory}: {exc.strerror}') from None
    try:
        import fcntl  # POSIX only: imported here, so importing this module works everywhere

        fcntl.flock(fd, fcntl.LOCK_EX)  # across threads and processes, released with the descriptor
        return run_command(_DirectoryFiles(directory), command, args)
    except OSError as exc:
        where = args.get('path') or args.get('old_path') or ROOT
        raise ModelRetry(f'{command} on {where} failed: {exc.strerror or type(exc).__name__}') from None
    finally:
        os.close(fd)
