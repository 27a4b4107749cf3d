// The Threadline page: chat over /api/chat (the Vercel AI UI message stream), conversations,
// search, fork, delete and the audit. No build step and no library.
'use strict';
const $ = (id) => document.getElementById(id);
let current = null;

function headers(extra = {}) {
  const key = $('api-key').value.trim() || localStorage.getItem('threadline-key') || '';
  if ($('api-key').value.trim()) localStorage.setItem('threadline-key', key);
  return key ? { ...extra, 'x-api-key': key } : extra;
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: headers(options.headers) });
  if (!response.ok) {
    const detail = await response.json().catch(() => ({}));
    throw new Error(detail.error || `${response.status} ${response.statusText}`);
  }
  return response.status === 204 ? null : response.json();
}

function status(text) { $('status').textContent = text; }

function bubble(role) {
  const li = document.createElement('li');
  li.className = role;
  const label = document.createElement('span');
  label.className = 'role';
  label.textContent = role;
  const body = document.createElement('span');
  body.className = 'text';
  li.append(label, body);
  $('messages').append(li);
  return body;
}

function render(messages) {
  $('messages').replaceChildren();
  for (const message of messages) {
    const body = bubble(message.role);
    for (const part of message.parts) {
      if (part.type === 'text') body.append(part.text);
      else if (part.type.startsWith('tool-')) {
        const tool = document.createElement('div');
        tool.className = 'tool';
        tool.textContent = `${part.type.slice(5)}(${JSON.stringify(part.input)}) → ${part.state === 'output-error' ? part.errorText : JSON.stringify(part.output)}`;
        body.append(tool);
      }
    }
  }
}

function select(id, title) {
  current = id;
  $('title').textContent = title || id || 'New conversation';
  for (const button of ['fork', 'delete', 'audit']) $(button).disabled = !id;
  $('audit-view').hidden = true;
  for (const item of document.querySelectorAll('#conversations button')) {
    item.setAttribute('aria-current', String(item.dataset.id === id));
  }
}

let generation = 0;  // a refresh answered after a newer one started is dropped

async function refresh(query = '') {
  const mine = ++generation;
  const items = [];
  try {
    const rows = query
      ? [...new Map((await api(`/api/conversations?q=${encodeURIComponent(query)}`)).hits
          .map((h) => [h.conversationId, { id: h.conversationId, title: h.snippet }])).values()]  // one row per conversation
      : (await api('/api/conversations')).conversations;
    for (const row of rows) {
      const li = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset.id = row.id;
      button.textContent = row.title || row.id;
      const small = document.createElement('small');
      small.textContent = row.id;
      button.append(small);
      button.addEventListener('click', () => open(row.id, row.title));
      li.append(button);
      items.push(li);
    }
    if (mine !== generation) return;
    $('conversations').replaceChildren(...items);
    status(rows.length ? '' : query ? 'No matches.' : 'No conversations yet.');
  } catch (error) { status(error.message); }
}

const FINISHING = 'Finishing a turn after a restart…';
let finishing = null;  // the timer that looks again while a durable server finishes a turn

async function open(id, title) {
  clearTimeout(finishing);
  try {
    const conversation = await api(`/api/conversations/${encodeURIComponent(id)}`);
    select(id, conversation.title || title);
    render(conversation.messages);
    if (conversation.finishing) {
      status(FINISHING);
      finishing = setTimeout(() => { if (current === id) open(id, title); }, 1500);
    } else if ($('status').textContent === FINISHING) status('');
  } catch (error) { status(error.message); }
}

async function send(text) {
  const id = current || crypto.randomUUID();
  select(id, $('title').textContent === 'New conversation' ? text.slice(0, 60) : $('title').textContent);
  bubble('user').append(text);
  const body = bubble('assistant');
  status('Answering…');
  const response = await fetch('/api/chat', {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json' }),
    body: JSON.stringify({ id, messages: [{ id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text }] }] }),
  });
  if (!response.ok) { status((await response.json().catch(() => ({}))).error || response.statusText); return; }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const line = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const chunk = JSON.parse(line.slice(6));
      if (chunk.type === 'text-delta') body.append(chunk.delta);
      else if (chunk.type === 'error') status(chunk.errorText);
    }
  }
  if (!$('status').textContent.startsWith('The') && !$('status').textContent.includes('changed')) status('');
  refresh();
}

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text) return;
  $('prompt').value = '';
  send(text).catch((error) => status(error.message));
});
$('prompt').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('composer').requestSubmit(); }
});
$('new-chat').addEventListener('click', () => { select(null); $('messages').replaceChildren(); $('prompt').focus(); });
$('search-form').addEventListener('submit', (event) => { event.preventDefault(); refresh($('search').value.trim()); });
$('search').addEventListener('search', () => refresh($('search').value.trim()));
$('fork').addEventListener('click', async () => {
  try { const fork = await api(`/api/conversations/${encodeURIComponent(current)}/fork`, { method: 'POST' }); await refresh(); await open(fork.id); status('Forked.'); }
  catch (error) { status(error.message); }
});
$('delete').addEventListener('click', async () => {
  if (!confirm('Delete this conversation?')) return;
  try { await api(`/api/conversations/${encodeURIComponent(current)}`, { method: 'DELETE' }); select(null); $('messages').replaceChildren(); refresh(); status('Deleted.'); }
  catch (error) { status(error.message); }
});
$('audit').addEventListener('click', async () => {
  try {
    const report = await api(`/api/conversations/${encodeURIComponent(current)}/audit`);
    const view = $('audit-view');
    const rows = report.gates.map((g) => `<tr><td>${g.gate}</td><td class="${g.passed ? 'pass' : 'fail'}">${g.passed ? 'pass' : (g.verdicts.join(', ') || 'skipped')}</td></tr>`).join('');
    view.innerHTML = `<p>Verdict: <strong id="verdict">${report.verdict}</strong></p><table><thead><tr><th>Gate</th><th>Result</th></tr></thead><tbody>${rows}</tbody></table>`;
    view.hidden = false;
  } catch (error) { status(error.message); }
});
$('api-key').value = localStorage.getItem('threadline-key') || '';
$('api-key').addEventListener('change', () => { localStorage.setItem('threadline-key', $('api-key').value.trim()); refresh(); });
refresh();
