// The Threadline page: chat over /api/chat (the Vercel AI UI message stream), conversations,
// search, fork, delete, approvals and the audit. No build step: marked and DOMPurify are vendored
// (static/vendor), and assistant Markdown reaches the page only through DOMPurify.
//
// Rules: an error stays on screen until the person acts again (nothing overwrites it); a message
// that was not answered goes back into the message box; the open conversation is in the URL.
'use strict';
const $ = (id) => document.getElementById(id);
let current = null;  // the open conversation's id
let answering = null;  // the AbortController of the turn streaming now
const titles = new Map();  // conversation id -> title, from the last list

function headers(extra = {}) {
  const key = $('api-key').value.trim();
  return key ? { ...extra, 'x-api-key': key } : extra;
}

async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, { ...options, headers: headers(options.headers) });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new Error('The server cannot be reached. Is threadline serve running?');
  }
  if (!response.ok) {
    const detail = await response.json().catch(() => ({}));
    throw new Error(detail.error || `${response.status} ${response.statusText}`);
  }
  return response.status === 204 ? null : response.json();
}

function status(text, error = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', error);
}

function markdown(element, text) {
  element.innerHTML = DOMPurify.sanitize(marked.parse(text));
}

function bubble(role) {
  const li = document.createElement('li');
  li.className = role;
  const label = document.createElement('span');
  label.className = 'role';
  label.textContent = role;
  li.append(label);
  $('messages').append(li);
  return li;
}

function textPart(li, text) {
  const body = document.createElement('div');
  body.className = 'text';
  if (li.classList.contains('user')) body.textContent = text;
  else markdown(body, text);
  li.append(body);
  return body;
}

function toolPart(li, name, input) {
  const tool = document.createElement('details');
  tool.className = 'tool';
  const summary = document.createElement('summary');
  summary.textContent = `${name}(${JSON.stringify(input ?? {})})`;
  tool.append(summary);
  li.append(tool);
  return tool;
}

function toolResult(tool, output, error) {
  const result = document.createElement('pre');
  result.textContent = error ? error : (typeof output === 'string' ? output : JSON.stringify(output, null, 2));
  tool.classList.toggle('error', Boolean(error));
  tool.querySelector('summary').textContent += error ? ' → failed' : ' → done';
  tool.append(result);
}

// A paused run's calls that wait for a person: one question each; sent together once all are answered.
function approvals(li, calls) {
  const decisions = {};
  for (const call of calls) {
    const box = document.createElement('div');
    box.className = 'approval';
    const question = document.createElement('p');
    question.textContent = `Allow ${call.toolName}(${JSON.stringify(call.input ?? {})})?`;
    const yes = Object.assign(document.createElement('button'), { type: 'button', className: 'approve', textContent: 'Approve' });
    const no = Object.assign(document.createElement('button'), { type: 'button', className: 'deny', textContent: 'Deny' });
    const decide = (answer) => {
      decisions[call.toolCallId] = answer;
      yes.disabled = no.disabled = true;
      question.textContent += answer ? ' Approved.' : ' Denied.';
      if (Object.keys(decisions).length === calls.length) resume(decisions);
    };
    yes.addEventListener('click', () => decide(true));
    no.addEventListener('click', () => decide(false));
    box.append(question, yes, no);
    li.append(box);
  }
}

function render(messages) {
  $('messages').replaceChildren();
  messages.forEach((message, index) => {
    const li = bubble(message.role);
    const waiting = [];
    for (const part of message.parts) {
      if (part.type === 'text') textPart(li, part.text);
      else if (part.type.startsWith('tool-')) {
        const tool = toolPart(li, part.type.slice(5), part.input);
        if (part.state === 'output-available' || part.state === 'output-error') toolResult(tool, part.output, part.errorText);
        else waiting.push({ toolCallId: part.toolCallId, toolName: part.type.slice(5), input: part.input });
      }
    }
    if (waiting.length && index === messages.length - 1 && message.role === 'assistant') approvals(li, waiting);
  });
}

function select(id, title) {
  current = id;
  $('title').textContent = title || (id ? 'Conversation' : 'New conversation');
  for (const button of ['fork', 'delete', 'audit']) $(button).disabled = !id;
  for (const item of document.querySelectorAll('#conversations button')) {
    item.setAttribute('aria-current', String(item.dataset.id === id));
  }
  history.replaceState(null, '', id ? `#c=${encodeURIComponent(id)}` : location.pathname);
  document.body.classList.remove('list-open');
  $('show-list').setAttribute('aria-expanded', 'false');
}

function snippetLine(snippet) {
  // A search snippet marks its matches as [word]: show them highlighted, never as markup.
  const small = document.createElement('small');
  snippet.split(/\[([^\]]*)\]/).forEach((piece, i) => {
    if (i % 2) small.append(Object.assign(document.createElement('mark'), { textContent: piece }));
    else small.append(piece);
  });
  return small;
}

let generation = 0;  // a list answered after a newer one was asked for is dropped

async function refresh(query = $('search').value.trim()) {
  const mine = ++generation;
  let rows;
  try {
    if (query) {
      const hits = (await api(`/api/conversations?q=${encodeURIComponent(query)}`)).hits;
      rows = [...new Map(hits.map((h) => [h.conversationId, { id: h.conversationId, snippet: h.snippet }])).values()];
    } else {
      rows = (await api('/api/conversations')).conversations;
      titles.clear();
      for (const row of rows) titles.set(row.id, row.title);
    }
  } catch (error) {
    if (!$('status').classList.contains('error')) status(error.message, true);  // the first error stays
    return;
  }
  if (mine !== generation) return;
  const items = rows.map((row) => {
    const li = document.createElement('li');
    const button = Object.assign(document.createElement('button'), { type: 'button' });
    button.dataset.id = row.id;
    button.setAttribute('aria-current', String(row.id === current));
    const title = row.title || titles.get(row.id) || 'Conversation';
    button.append(title, row.snippet ? snippetLine(row.snippet) : Object.assign(document.createElement('small'), { textContent: row.id }));
    button.addEventListener('click', () => open(row.id, title));
    li.append(button);
    return li;
  });
  $('conversations').replaceChildren(...items);
  $('list-note').textContent = rows.length ? '' : query ? 'No matches.' : 'No conversations yet.';
}

const FINISHING = 'Finishing a turn after a restart…';
let finishing = null;  // the timer that looks again while a durable server finishes a turn

async function open(id, title) {
  clearTimeout(finishing);
  try {
    const conversation = await api(`/api/conversations/${encodeURIComponent(id)}`);
    select(id, conversation.title || title);
    render(conversation.messages);
    $('messages').scrollTop = $('messages').scrollHeight;
    if (conversation.finishing) {
      status(FINISHING);
      finishing = setTimeout(() => { if (current === id) open(id, title); }, 1500);
    } else if ($('status').textContent === FINISHING) status('');
  } catch (error) { status(error.message, true); }
}

// One streamed answer into `li`; returns the error text the stream ended with, or null.
async function stream(response, li) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const tools = new Map();
  const waiting = [];
  let buffer = '', text = null, said = '', failure = null;
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
      if (chunk.type === 'text-start') { text = textPart(li, ''); said = ''; }
      else if (chunk.type === 'text-delta' && text) { said += chunk.delta; markdown(text, said); }
      else if (chunk.type === 'tool-input-available') tools.set(chunk.toolCallId, { tool: toolPart(li, chunk.toolName, chunk.input), ...chunk });
      else if (chunk.type === 'tool-output-available' && tools.has(chunk.toolCallId)) toolResult(tools.get(chunk.toolCallId).tool, chunk.output);
      else if (chunk.type === 'tool-output-error' && tools.has(chunk.toolCallId)) toolResult(tools.get(chunk.toolCallId).tool, null, chunk.errorText);
      else if (chunk.type === 'data-approval-requested') waiting.push({ ...chunk.data, input: tools.get(chunk.data.toolCallId)?.input });
      else if (chunk.type === 'error') failure = chunk.errorText;
      $('messages').scrollTop = $('messages').scrollHeight;
    }
  }
  if (waiting.length) approvals(li, waiting);
  return failure;
}

// A turn's request and its answer. `restore` puts the typed text back when nothing was answered.
async function turn(path, body, li, restore) {
  answering = new AbortController();
  $('send').disabled = true;
  $('stop').hidden = false;
  status('Answering…');
  try {
    let response;
    try {
      response = await fetch(path, {
        method: 'POST', signal: answering.signal, body: JSON.stringify(body),
        headers: headers({ 'content-type': 'application/json' }),
      });
    } catch (error) {
      throw new Error(error.name === 'AbortError' ? 'Stopped.' : 'The server cannot be reached: the message was not sent.');
    }
    if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error || response.statusText);
    const failure = await stream(response, li);
    if (failure) throw new Error(`The answer failed: ${failure}`);
    status('');
  } catch (error) {
    const stopped = error.name === 'AbortError' || error.message === 'Stopped.';
    li.classList.add('failed');
    li.append(Object.assign(document.createElement('p'), { className: 'error-text', textContent: stopped ? 'Stopped.' : error.message }));
    if (restore) restore();
    status(stopped ? 'Stopped.' : `${error.message}${restore ? ' Your message is back in the box.' : ''}`, !stopped);
  } finally {
    answering = null;
    $('send').disabled = false;
    $('stop').hidden = true;
  }
  await refresh();
}

async function send(text) {
  const id = current || crypto.randomUUID();
  const fresh = !current;
  select(id, fresh ? text.slice(0, 60) : $('title').textContent);
  textPart(bubble('user'), text);
  const li = bubble('assistant');
  const message = { id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text }] };
  await turn('/api/chat', { id, messages: [message] }, li, () => { $('prompt').value = text; if (fresh) select(null); });
}

async function resume(decisions) {
  const li = bubble('assistant');
  await turn(`/api/conversations/${encodeURIComponent(current)}/approvals`, { approvals: decisions }, li, null);
}

// Which case of the outcome gate applies: a receipt is owed only where an effect was expected.
const OUTCOME_CASES = {
  none: 'No outcome expected: no run here was meant to change anything outside the chat, so no receipt is owed.',
  declared: 'An outcome is expected of every run (the server was started with --expect-outcome): the last run needs a receipt.',
  effect_tool: 'The last run called a tool with external effects: it needs a receipt of what that changed.',
  receipt: 'A receipt was recorded for the last run, but not one of an accepted strength (a re-read of the destination).',
};

async function showAudit() {
  const report = await api(`/api/conversations/${encodeURIComponent(current)}/audit`);
  const view = $('audit-view');
  const verdict = document.createElement('p');
  verdict.append('Verdict: ', Object.assign(document.createElement('strong'), { id: 'verdict', textContent: report.verdict }));
  const explain = Object.assign(document.createElement('p'), { className: 'explain' });
  explain.textContent = report.verdict === 'READY' ? 'Every gate passed.' : `Needs attention: ${report.failures.join(', ') || report.verdict}.`;
  const outcome = Object.assign(document.createElement('p'), { className: 'explain', id: 'audit-outcome' });
  outcome.textContent = OUTCOME_CASES[report.outcome] || '';
  const table = document.createElement('table');
  table.innerHTML = '<thead><tr><th>Gate</th><th>Result</th></tr></thead><tbody></tbody>';
  for (const gate of report.gates) {
    const row = table.tBodies[0].insertRow();
    row.insertCell().textContent = gate.gate;
    const cell = row.insertCell();
    cell.className = gate.passed ? 'pass' : 'fail';
    cell.textContent = gate.passed ? 'pass' : (gate.verdicts.join(', ') || 'skipped');
  }
  view.replaceChildren(verdict, explain, outcome, table);
  $('audit-dialog').showModal();
}

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || answering) return;
  $('prompt').value = '';
  send(text).catch((error) => status(error.message, true));
});
$('prompt').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('composer').requestSubmit(); }
});
$('stop').addEventListener('click', () => { if (answering) answering.abort(); });
$('new-chat').addEventListener('click', () => { select(null); $('messages').replaceChildren(); status(''); $('prompt').focus(); });
$('show-list').addEventListener('click', () => {
  const open = document.body.classList.toggle('list-open');
  $('show-list').setAttribute('aria-expanded', String(open));
});
$('search-form').addEventListener('submit', (event) => { event.preventDefault(); refresh(); });
$('search').addEventListener('search', () => refresh());
$('fork').addEventListener('click', async () => {
  try { const fork = await api(`/api/conversations/${encodeURIComponent(current)}/fork`, { method: 'POST' }); await refresh(); await open(fork.id); status('Forked.'); }
  catch (error) { status(error.message, true); }
});
$('delete').addEventListener('click', async () => {
  if (!confirm('Delete this conversation?')) return;
  try { await api(`/api/conversations/${encodeURIComponent(current)}`, { method: 'DELETE' }); select(null); $('messages').replaceChildren(); await refresh(); status('Deleted.'); }
  catch (error) { status(error.message, true); }
});
$('audit').addEventListener('click', () => showAudit().catch((error) => status(error.message, true)));
$('api-key').addEventListener('change', () => {
  // Another key is another tenant: nothing of the last one stays on screen.
  localStorage.setItem('threadline-key', $('api-key').value.trim());
  select(null);
  $('messages').replaceChildren();
  status('');
  refresh();
});

$('api-key').value = localStorage.getItem('threadline-key') || '';
refresh();
const opened = new URLSearchParams(location.hash.slice(1)).get('c');
if (opened) open(opened);
