"""The fuzz run (`-m slow`, full counts with `HYPOTHESIS_PROFILE=thorough`: 106,000 inputs).

Every input is a real one mutated (`_mutate`): a history, UI messages, a server request body or
query. What a user relies on: no input crashes (each entry point raises only its documented error,
and the server answers every request without a 500), and none takes over a second. The counts are
printed for the note; `examples()` scales them to the profile.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest

from tests._hypothesis import examples
from tests.data.histories import history
from tests.fuzz._mutate import mutate_bytes, mutate_value
from threadline import Agent
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.exceptions import MessageValidationError
from threadline.messages import ModelMessagesTypeAdapter
from threadline.models.demo import DemoModel
from threadline.server import create_app
from threadline.storage import SQLiteStore
from threadline.trust import Keyring
from threadline.ui.ag_ui import AGUIAdapter
from threadline.ui.vercel_ai import VercelAIAdapter

pytestmark = pytest.mark.slow

HISTORY = history(12, seed=3)
HISTORY_JSON = json.dumps(HISTORY).encode()
MESSAGES = ModelMessagesTypeAdapter.validate_python(HISTORY)
UI = [m.model_dump(mode='json', by_alias=True) for m in VercelAIAdapter.dump_messages(MESSAGES)]
AG = [m.model_dump(mode='json', by_alias=True) for m in AGUIAdapter.dump_messages(MESSAGES)]
AUDIT = AuditContext(source='client', prompt_contract=PromptContract.unchecked(), key=b'k' * 32)
SLOW = 1.0


class Tally:
    """Inputs tried, crashes (by kind, with one example) and inputs slower than `SLOW`."""

    def __init__(self, name: str) -> None:
        self.name, self.count, self.slow = name, 0, 0
        self.crashes: Counter[str] = Counter()
        self.example: dict[str, Any] = {}

    def crash(self, kind: str, given: object) -> None:
        self.crashes[kind] += 1
        self.example.setdefault(kind, repr(given)[:300])

    def timed(self, seconds: float) -> None:
        self.count += 1
        self.slow += seconds > SLOW

    def check(self) -> None:
        print(
            f'fuzz {self.name}: {self.count} inputs, {sum(self.crashes.values())} crashes, {self.slow} over {SLOW:g} s'
        )
        assert not self.crashes, (self.crashes, self.example)
        assert self.slow == 0


def run(
    name: str,
    total: int,
    make: Callable[[random.Random], Any],
    call: Callable[[Any], None],
    allowed: tuple[type[BaseException], ...],
) -> None:
    tally, rng = Tally(name), random.Random(name)
    for _ in range(examples(total)):
        given = make(rng)
        start = time.perf_counter()
        try:
            call(given)
        except allowed:
            pass
        except Exception as exc:  # noqa: BLE001 - every other exception is a crash to report
            tally.crash(type(exc).__name__, given)
        tally.timed(time.perf_counter() - start)
    tally.check()


def _json_variant(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return mutate_bytes(HISTORY_JSON, rng)
    return json.dumps(mutate_value(HISTORY, rng)).encode()


def test_validate_json() -> None:
    run('validate_json', 30_000, _json_variant, ModelMessagesTypeAdapter.validate_json, (MessageValidationError,))


def test_validate_python() -> None:
    run(
        'validate_python',
        15_000,
        lambda rng: mutate_value(HISTORY, rng),
        ModelMessagesTypeAdapter.validate_python,
        (MessageValidationError,),
    )


def test_audit_history() -> None:
    def audit(data: bytes) -> None:
        report = audit_history(data, AUDIT)
        assert report.verdict

    run('audit_history', 15_000, _json_variant, audit, ())


def test_vercel_loader() -> None:
    run(
        'vercel load_messages',
        15_000,
        lambda rng: mutate_value(UI, rng),
        VercelAIAdapter.load_messages,
        (pydantic.ValidationError,),
    )


def test_ag_ui_loader() -> None:
    run(
        'ag-ui load_messages',
        10_000,
        lambda rng: mutate_value(AG, rng),
        AGUIAdapter.load_messages,
        (pydantic.ValidationError,),
    )


# -- the server ---------------------------------------------------------------------------------


def _turn(text: str, chat_id: str) -> dict[str, Any]:
    return {'id': chat_id, 'messages': [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': text}]}]}


async def _serve(
    name: str,
    total: int,
    tmp_path: Path,
    requests: Callable[[random.Random, dict[str, Any]], dict[str, Any]],
    *,
    stateless: bool = False,
) -> None:
    keyring = Keyring.single(b'f' * 32) if stateless else None
    app = create_app(SQLiteStore(tmp_path / f'{name}.db'), Agent(DemoModel()), keys=None, stateless=keyring)
    tally, rng = Tally(name), random.Random(name)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1') as http:
        held: dict[str, Any] = {}
        if stateless:
            first = await http.post('/api/chat', json=_turn('hello', 'fz'))
            chunks = [json.loads(x[6:]) for x in first.text.split('\n\n') if x.startswith('data: {')]
            held = next(c['data'] for c in chunks if c['type'] == 'data-threadline')
        else:
            await http.post('/api/chat', json=_turn('hello', 'fz'))
        for _ in range(examples(total)):
            request = requests(rng, held)
            start = time.perf_counter()
            try:
                response = await http.request(**request)
            except Exception as exc:  # noqa: BLE001 - the app raised: a crash
                tally.crash(type(exc).__name__, request)
            else:
                if response.status_code >= 500:
                    tally.crash(f'HTTP {response.status_code}', request)
            tally.timed(time.perf_counter() - start)
    tally.check()


def _body(value: Any, rng: random.Random) -> bytes:
    raw = json.dumps(value).encode()
    return mutate_bytes(raw, rng) if rng.random() < 0.3 else raw


JSON = {'content-type': 'application/json'}


def test_server_chat(tmp_path: Path) -> None:
    def request(rng: random.Random, held: dict[str, Any]) -> dict[str, Any]:
        body = (
            mutate_value(_turn('hi', 'fz'), rng)
            if rng.random() < 0.7
            else mutate_value({**_turn('hi', 'fz'), 'messages': UI[:3]}, rng)
        )
        return {'method': 'POST', 'url': '/api/chat', 'content': _body(body, rng), 'headers': JSON}

    asyncio.run(_serve('/api/chat', 8_000, tmp_path, request))


def test_server_ag_ui(tmp_path: Path) -> None:
    base = {
        'threadId': 'fz',
        'runId': 'r',
        'messages': [{'id': 'u', 'role': 'user', 'content': 'hi'}],
        'state': None,
        'tools': [],
        'context': [],
        'forwardedProps': None,
    }

    def request(rng: random.Random, held: dict[str, Any]) -> dict[str, Any]:
        return {'method': 'POST', 'url': '/api/ag-ui', 'content': _body(mutate_value(base, rng), rng), 'headers': JSON}

    asyncio.run(_serve('/api/ag-ui', 4_000, tmp_path, request))


def test_server_stateless(tmp_path: Path) -> None:
    def request(rng: random.Random, held: dict[str, Any]) -> dict[str, Any]:
        body = mutate_value({**_turn('again', 'fz'), **held}, rng)
        return {'method': 'POST', 'url': '/api/chat', 'content': _body(body, rng), 'headers': JSON}

    asyncio.run(_serve('stateless', 4_000, tmp_path, request, stateless=True))


def test_server_queries_paths_and_approvals(tmp_path: Path) -> None:
    values = [
        '',
        '0',
        '1',
        '50',
        '1000',
        '1001',
        '-1',
        '²',
        '\u0661',  # ARABIC-INDIC DIGIT ONE: isdigit() says yes
        '1e3',
        'x' * 600,
        '%00',
        '%ff',
        '😀' * 40,
        '"a b"',
        'refun*',
    ]

    def request(rng: random.Random, held: dict[str, Any]) -> dict[str, Any]:
        roll = rng.random()
        if roll < 0.4:
            query = '&'.join(
                f'{k}={rng.choice(values)}' for k in rng.sample(['limit', 'offset', 'q'], rng.randint(1, 3))
            )
            return {'method': 'GET', 'url': f'/api/conversations?{query}'}
        cid = rng.choice(['fz', 'nope', '%00', 'a%0Ab', 'x' * 600, '%ff%fe', '😀', '..'])
        if roll < 0.7:
            return {
                'method': rng.choice(['GET', 'DELETE']),
                'url': f'/api/conversations/{cid}' + rng.choice(['', '/audit']),
            }
        body = mutate_value({'approvals': {'call-1': True}}, rng)
        return {
            'method': 'POST',
            'url': f'/api/conversations/{cid}/approvals',
            'content': _body(body, rng),
            'headers': JSON,
        }

    asyncio.run(_serve('queries, paths, approvals', 3_000, tmp_path, request))
