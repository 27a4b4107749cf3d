// Two turns of @ag-ui/client's HttpAgent against a Threadline server's AG-UI endpoint; prints what
// each runAgent() reported as new, and the messages the client holds at the end, as JSON.
//   node ag_ui_two_turns.mjs URL KEY
import { HttpAgent } from '@ag-ui/client';

const [url, key] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${url}/api/ag-ui`, threadId: 'thread-1', headers: { authorization: `Bearer ${key}` } });
const turns = [];
for (const [id, text] of [['u1', 'first'], ['u2', 'second']]) {
  agent.addMessage({ id, role: 'user', content: text });
  const { newMessages } = await agent.runAgent();
  turns.push(newMessages.map((m) => ({ id: m.id, role: m.role, content: m.content })));
}
process.stdout.write(JSON.stringify({ turns, messages: agent.messages.map((m) => ({ id: m.id, role: m.role })) }));
