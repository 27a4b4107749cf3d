// Reads a Vercel AI UI message stream (server-sent events) from stdin with the `ai` package's own
// parser and reader, and prints the UIMessage(s) it assembles as JSON: what useChat would show.
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const body = new ReadableStream({
  start(controller) {
    controller.enqueue(new Uint8Array(Buffer.concat(chunks)));
    controller.close();
  },
});
const parsed = parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
  new TransformStream({
    transform(result, controller) {
      if (!result.success) throw result.error;
      controller.enqueue(result.value);
    },
  }),
);
let last;
for await (const message of readUIMessageStream({ stream: parsed })) last = message;
process.stdout.write(JSON.stringify(last));
