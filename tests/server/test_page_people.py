"""The page as a person meets it, in Chromium at a desktop's 1280x800 and a phone's 390x844: a
Markdown answer with a code block, a reload that keeps the conversation open, a tool call and an
approval, a model that fails and a server that is down (the message stays, the error is shown),
an answer that tries to inject markup, and a layout that fits the phone. Screenshots go to
THREADLINE_SCREENSHOTS (a directory) when it is set, else beside the test's files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_page_browser import CHROMIUM
from tests.server.test_serve_cli import free_port, serve, wait_until_up

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason='Chromium is not installed (apt-get install -y chromium; .ci/run does)'
)
SIZES = {'desktop': (1280, 800), 'phone': (390, 844)}


class Site:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        env = {'PYTHONPATH': f'{ROOT / "src"}{os.pathsep}{ROOT}'}
        self.process = serve(directory, '--port', str(self.port), '--agent', 'tests.server._page_agent:agent', env=env)
        wait_until_up(self.url, self.process)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.communicate(timeout=30)


@pytest.fixture(scope='module')
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One server for the module's tests (each opens its own conversations)."""
    running = Site(tmp_path_factory.mktemp('site'))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def own_site(tmp_path: Path) -> Iterator[Site]:
    """A server of the test's own, for a test that stops it."""
    running = Site(tmp_path)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope='module')
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox'])
        yield launched
        launched.close()


@pytest.fixture(params=list(SIZES))
def page(request: pytest.FixtureRequest, browser: Any, tmp_path: Path) -> Iterator[Any]:
    width, height = SIZES[request.param]
    shots = Path(os.environ.get('THREADLINE_SCREENSHOTS') or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={'width': width, 'height': height})
    page = context.new_page()
    page.shot = lambda name: page.screenshot(path=str(shots / f'{name}-{request.param}.png'))  # type: ignore[attr-defined]
    page.size = request.param  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        context.close()


def say(page: Any, text: str) -> None:
    page.get_by_label('Message').fill(text)
    page.get_by_label('Message').press('Enter')


def test_markdown_reload_tools_and_approval(site: Site, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(site.url)
    say(page, 'show me some code')
    answer = page.locator('#messages li.assistant').last
    expect(answer.locator('pre code')).to_have_text("print('hi')", timeout=15_000)
    expect(answer.locator('strong')).to_have_text('bold')
    expect(answer).not_to_contain_text('```')
    page.shot('markdown')

    page.reload()  # the conversation is in the URL: it stays open
    expect(page.locator('#messages li.assistant pre code')).to_have_text("print('hi')")
    expect(page.locator('#title')).to_have_text('show me some code')

    say(page, 'look up order 42')
    tool = page.locator('#messages li.assistant').last.locator('details.tool')
    expect(tool.locator('summary')).to_have_text('lookup_order({"order_id":"42"}) → done', timeout=15_000)
    expect(page.locator('#messages li.assistant').last).to_contain_text('Done: order 42 ships Monday')

    say(page, 'refund order 42')
    question = page.locator('.approval p')
    expect(question).to_have_text('Allow refund({"order_id":"42"})?', timeout=15_000)
    page.shot('approval')
    page.get_by_role('button', name='Approve').click()
    expect(page.locator('#messages li.assistant').last).to_contain_text('Done: order 42 refunded', timeout=15_000)
    expect(page.locator('#status')).to_have_text('')
    page.shot('tools')


def test_a_paused_run_asks_again_after_a_reload(site: Site, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(site.url)
    say(page, 'refund order 42')
    expect(page.locator('.approval')).to_have_count(1, timeout=15_000)
    page.reload()
    expect(page.locator('.approval p')).to_have_text('Allow refund({"order_id":"42"})?')
    page.get_by_role('button', name='Deny').click()
    expect(page.locator('#messages li.assistant').last).to_contain_text('Done:', timeout=15_000)


def test_errors_stay_and_the_message_is_not_lost(own_site: Site, page: Any) -> None:
    from playwright.sync_api import expect

    site = own_site
    page.goto(site.url)
    say(page, 'this will fail')
    status = page.locator('#status')
    expect(status).to_contain_text('The answer failed: The run failed.', timeout=15_000)
    expect(status).to_have_class('error')
    page.wait_for_timeout(800)  # the list refresh after the turn must not overwrite it
    expect(status).to_contain_text('The answer failed')
    expect(page.get_by_label('Message')).to_have_value('this will fail')
    page.shot('model-error')

    site.stop()
    say(page, 'is anyone there?')
    expect(status).to_contain_text('cannot be reached: the message was not sent', timeout=15_000)
    page.wait_for_timeout(500)  # the list's own failure to refresh does not replace it
    expect(status).to_contain_text('Your message is back in the box.')
    expect(page.get_by_label('Message')).to_have_value('is anyone there?')
    page.shot('server-down')


def test_markup_in_an_answer_is_not_run(site: Site, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(site.url)
    say(page, 'inject something')
    answer = page.locator('#messages li.assistant').last
    expect(answer).to_contain_text('done', timeout=15_000)
    assert page.evaluate('window.pwned') is None
    assert answer.locator('script, [onerror]').count() == 0
    assert answer.locator('a[href^="javascript"]').count() == 0


def test_the_layout_fits_the_screen(site: Site, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(site.url)
    say(page, 'hello')
    expect(page.locator('#messages li.assistant').last).to_have_text('assistanthello', timeout=15_000)
    width = SIZES[page.size][0]
    assert page.evaluate('document.documentElement.scrollWidth') <= width  # nothing falls off the side
    for name in ('Fork', 'Delete', 'Audit', 'Send'):
        box = page.get_by_role('button', name=name, exact=True).bounding_box()
        assert box is not None and box['x'] >= 0 and box['x'] + box['width'] <= width, name
    assert page.get_by_label('Message').bounding_box()['width'] >= width * 0.5  # not a sliver
    if page.size == 'phone':
        page.get_by_role('button', name='Conversations').click()
        expect(page.locator('#conversations button').first).to_be_visible()
        page.shot('phone-list')
        page.locator('#conversations button[aria-current="true"]').click()
        expect(page.locator('#conversations')).to_be_hidden()
    page.get_by_role('button', name='Audit').click()
    expect(page.locator('#verdict')).to_have_text('READY')  # an ordinary chat: no receipt is owed
    expect(page.locator('#audit-outcome')).to_contain_text('No outcome expected')
    box = page.get_by_label('Message').bounding_box()
    assert box is not None and box['y'] + box['height'] <= SIZES[page.size][1]  # the audit covers, never pushes
    page.shot('audit')


def test_the_favicon_is_served(site: Site) -> None:
    response = httpx.get(site.url + '/favicon.ico', timeout=10)
    assert response.status_code == 200 and response.headers['content-type'].startswith('image/svg+xml')
