"""`useChat`'s regenerate and edit against the server, with the real `ai` package's chat under Node:
each is stored as a branch from the turn it answers again, so the stored history reads as the
chat shows it after every step, and every earlier answer stays reachable."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import httpx

from tests.server._live import site  # noqa: F401 - the fixture: a live server over a SQLite store
from tests.ui.test_vercel_ai_client import JS, node  # noqa: F401 - the fixture that provides Node and the packages
from threadline.messages import ModelMessage, ModelRequest, TextPart, UserPromptPart
from threadline.storage import AsyncStore, SyncStore


def shown(history: list[ModelMessage]) -> list[dict[str, str]]:
    """A history as the chat shows it: each user turn, then the text of the answer."""
    out: list[dict[str, str]] = []
    for message in history:
        if isinstance(message, ModelRequest):
            out += [{'role': 'user', 'text': str(p.content)} for p in message.parts if isinstance(p, UserPromptPart)]
        else:
            out.append(
                {'role': 'assistant', 'text': ''.join(p.content for p in message.parts if isinstance(p, TextPart))}
            )
    return out


def session(node: str, url: str, *steps: str) -> list[dict[str, Any]]:  # noqa: F811
    done = subprocess.run(
        [node, str(JS / 'use_chat_session.mjs'), url, 'key-a', 'chat-1', *steps],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=JS,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_regenerate_and_edit_are_branches_the_store_agrees_with(
    node: str,  # noqa: F811
    site: tuple[str, AsyncStore[SyncStore]],  # noqa: F811
) -> None:
    url, store = site
    views = session(node, url, 'send:first', 'send:second', 'regenerate', 'edit:0:changed', 'send:third')
    assert [v['messages'] for v in views][2:] == [
        [
            {'role': 'user', 'text': 'first'},
            {'role': 'assistant', 'text': 'answer 1 to first'},
            {'role': 'user', 'text': 'second'},
            {'role': 'assistant', 'text': 'answer 3 to second'},
        ],
        [{'role': 'user', 'text': 'changed'}, {'role': 'assistant', 'text': 'answer 4 to changed'}],
        [
            {'role': 'user', 'text': 'changed'},
            {'role': 'assistant', 'text': 'answer 4 to changed'},
            {'role': 'user', 'text': 'third'},
            {'role': 'assistant', 'text': 'answer 5 to third'},
        ],
    ]
    [summary] = store.sync.list('tenant-a')
    cid = summary.conversation_id
    assert shown(store.sync.load(cid, scope='tenant-a').messages) == views[-1]['messages']
    # Every view the chat showed begins a branch of the stored conversation: old answers included.
    kept = [
        shown(store.sync.load_at(cid, scope='tenant-a', branch_id=branch, position=length))
        for branch, length in store.sync.branches(cid, scope='tenant-a')
    ]
    for view in views:
        assert any(branch[: len(view['messages'])] == view['messages'] for branch in kept), view['step']
    assert [r.status for r in store.sync.list_runs(cid, scope='tenant-a')] == ['completed'] * 5
    assert store.sync.verify(cid, scope='tenant-a').ok


def test_a_client_that_shows_more_turns_than_are_stored_is_told_to_reload(
    site: tuple[str, AsyncStore[SyncStore]],  # noqa: F811
) -> None:
    url, _ = site
    headers = {'authorization': 'Bearer key-a'}
    user = [{'id': 'u1', 'role': 'user', 'parts': [{'type': 'text', 'text': 'hello'}]}]
    first = httpx.post(f'{url}/api/chat', json={'id': 'c', 'messages': user}, headers=headers)
    assert first.status_code == 200
    three = [*user, {'id': 'a1', 'role': 'assistant', 'parts': []}, *user, *user]
    body = {'id': 'c', 'messages': three, 'trigger': 'regenerate-message'}
    stale = httpx.post(f'{url}/api/chat', json=body, headers=headers)
    assert stale.status_code == 409 and 'reload' in stale.json()['error']
    odd = httpx.post(f'{url}/api/chat', json={**body, 'trigger': 'resume'}, headers=headers)
    assert odd.status_code == 400 and odd.json()['error'].startswith('trigger:')


def test_an_edit_from_a_client_that_shows_other_turns_rewrites_nothing(
    site: tuple[str, AsyncStore[SyncStore]],  # noqa: F811
) -> None:
    url, store = site
    headers = {'authorization': 'Bearer key-a'}

    def user(text: str, mid: str) -> dict[str, Any]:
        return {'id': mid, 'role': 'user', 'parts': [{'type': 'text', 'text': text}]}

    for text in ('first', 'second'):
        assert httpx.post(
            f'{url}/api/chat', json={'id': 'c', 'messages': [user(text, text)]}, headers=headers
        ).is_success
    [summary] = store.sync.list('tenant-a')
    before = store.sync.load(summary.conversation_id, scope='tenant-a').messages
    # an edit of turn 2 from a view whose turn 1 is not the stored one (another branch, or a partial list)
    stale = [user('not first', 'x'), {'id': 'a', 'role': 'assistant', 'parts': []}, user('edited', 'second')]
    body = {'id': 'c', 'messages': stale, 'trigger': 'submit-message', 'messageId': 'second'}
    refused = httpx.post(f'{url}/api/chat', json=body, headers=headers)
    assert refused.status_code == 409 and 'reload' in refused.json()['error']
    assert store.sync.load(summary.conversation_id, scope='tenant-a').messages == before
    assert len(store.sync.branches(summary.conversation_id, scope='tenant-a')) == 1
