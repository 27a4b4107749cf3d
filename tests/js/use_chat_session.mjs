// Drives the `ai` package's own chat (the AbstractChat that useChat wraps, with DefaultChatTransport)
// against a Threadline server: the steps named on the command line, in order, then prints what the
// chat shows after each step as JSON lines ({step, messages: [{role, text}]}).
//   node use_chat_session.mjs URL KEY CHAT_ID send:first send:second regenerate edit:0:changed
import { AbstractChat, DefaultChatTransport } from 'ai';

class State {
  constructor() {
    this.status = 'ready';
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new State() });
  }
}

const [url, key, id, ...steps] = process.argv.slice(2);
const chat = new Chat({
  id,
  transport: new DefaultChatTransport({ api: `${url}/api/chat`, headers: { authorization: `Bearer ${key}` } }),
});
const shown = () =>
  chat.messages.map((m) => ({
    role: m.role,
    text: m.parts
      .filter((p) => p.type === 'text')
      .map((p) => p.text)
      .join(''),
  }));

for (const step of steps) {
  const [verb, ...args] = step.split(':');
  if (verb === 'send') await chat.sendMessage({ text: args.join(':') });
  else if (verb === 'regenerate') await chat.regenerate();
  else if (verb === 'edit') {
    const users = chat.messages.filter((m) => m.role === 'user');
    await chat.sendMessage({ text: args.slice(1).join(':'), messageId: users[Number(args[0])].id });
  } else throw new Error(`unknown step ${step}`);
  if (chat.error) throw chat.error;
  process.stdout.write(JSON.stringify({ step, messages: shown() }) + '\n');
}
