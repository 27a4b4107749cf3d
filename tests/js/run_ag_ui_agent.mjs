// Runs @ag-ui/client's HttpAgent against a URL serving Threadline's AG-UI event stream and prints
// the messages the client assembled (its own event verification and application) as JSON.
import { HttpAgent } from '@ag-ui/client';

const [url] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId: 't1' });
agent.messages = [{ id: 'u1', role: 'user', content: 'Weather?' }];
await agent.runAgent({ runId: 'r1' });
process.stdout.write(JSON.stringify(agent.messages));
