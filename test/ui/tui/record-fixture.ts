/**
 * Records the protocol traffic of a real TUI session for the component tests: a real server (in
 * process, file store in a temp folder, the real draft layer) on the scripted back end, driven by
 * the TUI's own controller through a real WebSocket. Every frame is kept in order: the requests the
 * client sent (by method), and what it received (responses with the method they answer, and
 * notifications).
 *
 *   npx tsx test/ui/tui/record-fixture.ts      # rewrites test/ui/tui/fixtures/draft-session.json
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { createScriptedBackend, step, type AgentBackend } from '../../../src/backends/index.js';
import {
  PROTOCOL_VERSION,
  ProtocolClient,
  webSocketTransport,
  type Transport,
  type TransportFactory,
  type WebSocketLike,
} from '../../../src/protocol/index.js';
import { startServer } from '../../../src/server/index.js';
import { TuiController } from '../../../src/ui/tui/index.js';
import type { RecordedFrame, RecordedSession } from './recorded-peer.js';

const target = join(import.meta.dirname, 'fixtures', 'draft-session.json');

const backend = createScriptedBackend({
  turns: [
    [
      step.thinking('The user wants a greeting file. A developer worker can write it while I keep talking.'),
      step.text("Sure. I'll ask a developer to write hello.txt and report back when it is done."),
      step.tool('draft_agent', { role: 'dev', prompt: 'Write hello.txt with a friendly greeting.' }),
      step.text('A dev worker is on it. Should the greeting be formal or casual?'),
      step.usage({ inputTokens: 61_200, outputTokens: 420 }),
      step.cost(0.184),
    ],
    [
      step.text('Reading the project layout first.'),
      step.tool('list_files', { path: '.' }, 'README.md\nsrc/\ntest/'),
      step.tool('write_file', { path: 'hello.txt', content: 'Hello, and welcome!' }, 'wrote 19 bytes to hello.txt'),
      step.text('Wrote hello.txt (19 bytes).'),
      step.cost(0.0421),
    ],
    [
      step.text('Casual it is: hello.txt says "Hello, and welcome!".'),
      step.usage({ inputTokens: 62_000, outputTokens: 30 }),
      step.cost(0.012),
    ],
  ],
});

const root = await mkdtemp(join(tmpdir(), 'parley-tui-record-'));
const server = await startServer({
  projectRoot: join(root, 'demo-project'),
  dataDir: join(root, 'demo-project', '.parley'),
  backendFor: () => backend as AgentBackend,
  summarize: false,
  log: () => {},
});

const frames: RecordedFrame[] = [];
const methods = new Map<number, string>();
const base = webSocketTransport({
  url: server.wsUrl,
  token: server.token,
  channel: 'tui-demo',
  createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
});
const recording: TransportFactory = async (context) => {
  const transport = await base(context);
  const wrapped: Transport = {
    start(handlers) {
      transport.start({
        onMessage(frame) {
          const message = JSON.parse(frame) as {
            id?: number;
            method?: string;
            params?: unknown;
            result?: unknown;
            error?: unknown;
          };
          if (message.method !== undefined) frames.push({ notification: message.method, params: message.params });
          else
            frames.push({
              response: methods.get(message.id!) ?? '?',
              ...(message.error !== undefined ? { error: message.error } : { result: message.result }),
            });
          handlers.onMessage(frame);
        },
        onClose: (event) => handlers.onClose(event),
      });
    },
    send(frame) {
      const message = JSON.parse(frame) as { id: number; method: string };
      methods.set(message.id, message.method);
      frames.push({ request: message.method });
      transport.send(frame);
    },
    close: (code, reason) => transport.close(code, reason),
  };
  return wrapped;
};

const client = new ProtocolClient({ transport: recording, onError: () => {} });
const controller = new TuiController({ client, onExit: () => {} });
controller.start();
const until = async (what: string, check: () => boolean) => {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
await until(
  'the connection',
  () => controller.getState().connection === 'connected' && controller.getState().roles.length > 0,
);
const idle = () => {
  const state = controller.getState();
  return (
    state.turn === undefined &&
    state.open.length === 0 &&
    Object.values(state.agents).every((agent) => agent.kind === 'draft' || agent.endedAt !== undefined)
  );
};
await controller.submit('/task new Demo');
await controller.submit('/draft product-analyst');
await controller.submit('Please add a hello.txt greeting file');
await until('the first turn and its worker', idle);
await controller.submit('Casual, please');
await until('the second turn', idle);
await controller.submit('/context');
await controller.submit('/compact');
await controller.submit('/agents');
await controller.submit('/sessions');
await controller.submit('/undraft');
controller.stop();
client.close();
await server.close();
await rm(root, { recursive: true, force: true });

const session: RecordedSession = {
  about: `Recorded by test/ui/tui/record-fixture.ts: protocol version ${PROTOCOL_VERSION}, the real server and draft layer on the scripted back end, driven by TuiController. Re-record after a protocol change.`,
  protocolVersion: PROTOCOL_VERSION,
  frames,
};
// The temp folder's path means nothing to a reader: a stable stand-in.
await writeFile(target, `${JSON.stringify(session, null, 1).split(root).join('/home/user')}\n`);
console.log(`${frames.length} frames → ${target}`);
