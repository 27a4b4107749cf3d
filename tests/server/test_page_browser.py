"""The web page in a real headless Chromium (Debian's package, driven by Playwright's Python API):
chat with a streamed answer, reload, search, fork, audit, and a second tenant who sees nothing.
A failing test leaves a screenshot beside its database."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_serve_cli import free_port, serve, wait_until_up

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason='Chromium is not installed (apt-get install -y chromium; .ci/run does)'
)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = serve(tmp_path, '--port', str(port), env={'THREADLINE_API_KEYS': 'alice-key=tenant-a,bob-key=tenant-b'})
    url = f'http://127.0.0.1:{port}'
    try:
        wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.fixture
def page(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox'])
        page = browser.new_page()
        try:
            yield page
        finally:
            report = getattr(request.node, 'rep_call', None)
            if report is not None and report.failed:
                shot = tmp_path / 'failure.png'
                page.screenshot(path=str(shot), full_page=True)
                print(f'screenshot of the failure: {shot}')
            browser.close()


def test_chat_reload_search_fork_audit_and_tenants(site: str, page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(site)
    page.get_by_label('API key').fill('alice-key')
    page.get_by_label('API key').dispatch_event('change')
    page.get_by_label('Message').fill('hello from the browser')
    page.get_by_label('Message').press('Enter')
    answer = page.locator('#messages li.assistant').last
    expect(answer).not_to_have_text('assistant', timeout=15_000)
    expect(page.locator('#conversations button')).to_have_count(1)
    page.screenshot(path=str(tmp_path / 'chat.png'))

    page.reload()
    page.locator('#conversations button').first.click()
    expect(page.locator('#messages li.user')).to_have_text('userhello from the browser')

    page.get_by_label('Search').fill('browser')
    page.get_by_label('Search').press('Enter')
    expect(page.locator('#conversations button')).to_have_count(1)

    page.get_by_role('button', name='Audit').click()
    expect(page.locator('#verdict')).not_to_be_empty()
    expect(page.locator('#audit-view tbody tr')).to_have_count(6)
    page.get_by_role('button', name='Close the audit').click()

    page.get_by_role('button', name='Fork').click()
    expect(page.locator('#status')).to_have_text('Forked.')
    page.get_by_label('Search').fill('')
    page.get_by_label('Search').press('Enter')
    expect(page.locator('#conversations button')).to_have_count(2)

    page.get_by_label('API key').fill('bob-key')
    page.get_by_label('API key').dispatch_event('change')
    expect(page.locator('#list-note')).to_have_text('No conversations yet.')
    expect(page.locator('#conversations button')).to_have_count(0)
    expect(page.locator('#messages li')).to_have_count(0)  # the other tenant's messages are gone
