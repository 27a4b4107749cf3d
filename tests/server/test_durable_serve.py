"""`threadline serve --durable`, killed (SIGKILL) inside a tool mid-turn: the turn is finished by
the server when it starts again, or, on PostgreSQL, by another server that sees the first one's
heartbeat lapse. Meanwhile the conversation (and the page) says it is finishing; the finished turn
is stored once, its first model request is not made again, and the tool's effect is applied once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_page_browser import CHROMIUM
from tests.server.test_serve_cli import free_port, serve
from tests.storage.conftest import fresh_postgres_url, needs_postgres

ROOT = Path(__file__).resolve().parents[2]
AGENT = 'tests.server._durable_agent:agent'


class Servers:
    def __init__(self, directory: Path, db: str) -> None:
        self.directory, self.db = directory, db
        self.env = {'PYTHONPATH': f'{ROOT / "src"}{os.pathsep}{ROOT}', 'THREADLINE_TEST_DIRECTORY': str(directory)}
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, port: int, executor: str) -> str:
        args = ('--durable', '--agent', AGENT, '--db', self.db, '--port', str(port), '--executor-id', executor)
        process = serve(self.directory, *args, '--lease-ttl', '3', env=self.env)
        self.processes.append(process)
        url = f'http://127.0.0.1:{port}'
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f'the server exited: {process.communicate()[1][-3000:]}')
            try:
                if httpx.get(url + '/healthz', timeout=1).status_code == 200:
                    return url
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError('the durable server did not come up')

    def kill(self, index: int) -> None:
        os.kill(self.processes[index].pid, signal.SIGKILL)
        self.processes[index].communicate(timeout=30)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=60)


@pytest.fixture
def servers(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Servers]:
    db = fresh_postgres_url() if request.param == 'postgres' else str(tmp_path / 'chat.db')
    running = Servers(tmp_path, db)
    try:
        yield running
    finally:
        running.close()


def _turn(text: str) -> dict[str, object]:
    return {'id': 'orders', 'messages': [{'id': text, 'role': 'user', 'parts': [{'type': 'text', 'text': text}]}]}


def _send_and_drop(url: str) -> None:
    """A turn sent from a thread: the server dies under it, so its answer never comes."""
    with contextlib.suppress(httpx.TransportError):
        httpx.post(url + '/api/chat', json=_turn('ship A-17'), timeout=120)


def _wait_for(check: Any, what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f'{what} did not happen within {seconds:g} s')


def _crash_mid_turn(servers: Servers, url: str) -> None:
    threading.Thread(target=_send_and_drop, args=(url,), daemon=True).start()
    _wait_for(lambda: list(servers.directory.glob('started-*')), 'the tool starting')
    servers.kill(0)
    for started in servers.directory.glob('started-*'):
        started.unlink()


def _finish_and_check(servers: Servers, url: str, *, greeted: bool) -> None:
    conversation = lambda: httpx.get(url + '/api/conversations/orders', timeout=10).json()  # noqa: E731
    _wait_for(lambda: list(servers.directory.glob('started-*')), 'the resumed turn reaching its tool again')
    assert conversation()['finishing'] is True
    if greeted:  # the conversation is listed: the page opens it and says so
        _page_says_finishing(url, servers.directory)
    (servers.directory / 'go').write_text('')
    finished = _wait_for(lambda: (c := conversation()) and not c['finishing'] and c['messages'] and c, 'the turn')
    parts = [p['type'] for m in finished['messages'] for p in m['parts']]
    greeting = ['text', 'step-start', 'text'] if greeted else []
    assert parts == [*greeting, 'text', 'step-start', 'tool-ship', 'step-start', 'text']  # stored once
    assert finished['messages'][-1]['parts'][-1]['text'] == 'A-17 is on its way'
    requests = (servers.directory / 'requests.log').read_text().split()
    # the request that called the tool was answered once, before the kill, and not asked again
    assert requests[0::2] == (['1', '3', '5'] if greeted else ['1', '3']), requests
    import sqlite3

    applied = sqlite3.connect(servers.directory / 'effects.db').execute('SELECT times FROM applied').fetchall()
    assert applied == [(1,)]


def _page_says_finishing(url: str, directory: Path) -> None:
    if CHROMIUM is None:
        return  # the API said so above; the page needs Chromium (.ci/run installs it)
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox'])
        page = browser.new_page(viewport={'width': 1280, 'height': 800})
        page.goto(url)
        page.locator('#conversations button').first.click()
        expect(page.locator('#status')).to_have_text('Finishing a turn after a restart…', timeout=15_000)
        page.screenshot(path=str(directory / 'finishing.png'))
        browser.close()


@pytest.mark.parametrize('servers', ['sqlite', pytest.param('postgres', marks=needs_postgres)], indirect=True)
def test_a_killed_server_finishes_its_turn_when_it_starts_again(servers: Servers) -> None:
    port = free_port()
    url = servers.start(port, 'serve-a')
    assert httpx.post(url + '/api/chat', json=_turn('hi'), timeout=60).status_code == 200
    _crash_mid_turn(servers, url)
    url = servers.start(port, 'serve-a')  # the same executor: DBOS resumes its pending turn at launch
    _finish_and_check(servers, url, greeted=True)


@needs_postgres
@pytest.mark.parametrize('servers', ['postgres'], indirect=True)
def test_another_server_finishes_the_turn_of_one_that_never_comes_back(servers: Servers) -> None:
    url = servers.start(free_port(), 'serve-a')
    other = servers.start(free_port(), 'serve-b')
    _crash_mid_turn(servers, url)
    _finish_and_check(servers, other, greeted=False)  # a first turn: not stored until it is finished


@needs_postgres
@pytest.mark.parametrize('servers', ['postgres'], indirect=True)
def test_a_live_server_keeps_its_turn(servers: Servers) -> None:
    url = servers.start(free_port(), 'serve-a')
    servers.start(free_port(), 'serve-b')
    threading.Thread(target=_send_and_drop, args=(url,), daemon=True).start()
    _wait_for(lambda: list(servers.directory.glob('started-*')), 'the tool starting')
    time.sleep(4)  # the other server's watch looks at the pending turn several times (every 1 s)
    (servers.directory / 'go').write_text('')
    conversation = lambda: httpx.get(url + '/api/conversations/orders', timeout=10).json()  # noqa: E731
    _wait_for(lambda: conversation().get('messages'), 'the turn')
    assert [p.name for p in servers.directory.glob('started-*')] == [f'started-{servers.processes[0].pid}']
    other = servers.processes[1]
    other.terminate()
    assert 'recovering' not in other.communicate(timeout=60)[1]  # it never took the live server's turns


@pytest.mark.parametrize('servers', ['sqlite'], indirect=True)
def test_an_approval_resumes_a_durable_turn(servers: Servers) -> None:
    url = servers.start(free_port(), 'serve-a')
    asked = httpx.post(url + '/api/chat', json=_turn('refund A-17'), timeout=60).text
    chunks = [json.loads(line[6:]) for line in asked.split('\n\n') if line.startswith('data: {')]
    [approval] = [c['data'] for c in chunks if c['type'] == 'data-approval-requested']
    assert approval == {'toolCallId': 'refund-1', 'toolName': 'refund'}
    body = {'approvals': {'refund-1': True}}
    answered = httpx.post(url + '/api/conversations/orders/approvals', json=body, timeout=60).text
    assert '"delta":"A-17 refunded"' in answered
    stored = httpx.get(url + '/api/conversations/orders', timeout=10).json()
    assert [p['type'] for m in stored['messages'] for p in m['parts']][-2:] == ['step-start', 'text']
    # A regenerate of a durable turn is stored as a branch from the turn, as on any server.
    assert httpx.post(url + '/api/chat', json=_turn('hi'), timeout=60).status_code == 200
    shown = httpx.get(url + '/api/conversations/orders', timeout=10).json()['messages']
    again = {'id': 'orders', 'messages': shown[:-1], 'trigger': 'regenerate-message'}
    assert '"delta":"hello"' in httpx.post(url + '/api/chat', json=again, timeout=60).text
    after = httpx.get(url + '/api/conversations/orders', timeout=10).json()['messages']
    assert [m['role'] for m in after] == [m['role'] for m in shown]  # answered again, not added
    from threadline.storage import SQLiteStore

    store = SQLiteStore(servers.db)
    try:
        assert len(store.sync.branches('orders', scope='local')) == 2
    finally:
        store.close()


def test_durable_turns_refuse_a_stateless_server(tmp_path: Path) -> None:
    from threadline import Agent, UserError
    from threadline.models.demo import DemoModel
    from threadline.server import create_app
    from threadline.storage import SQLiteStore
    from threadline.trust import Keyring

    with pytest.raises(UserError, match='history held by the server'):
        create_app(
            SQLiteStore(tmp_path / 's.db'), Agent(DemoModel()), stateless=Keyring.single(b'k' * 32), durable=True
        )


def test_the_durable_turn_names_are_pinned() -> None:
    """Workflows in flight resume only under the names they were recorded with: a change is a migration."""
    from threadline.server._durable import SAVE_STEP, TURN_WORKFLOW

    assert (TURN_WORKFLOW, SAVE_STEP) == ('threadline.serve.turn', 'threadline.serve.save')
