import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { createScriptedBackend, type AgentBackend, type ScriptedBackend } from '../../src/backends/index.js';
import {
  ProtocolClient,
  webSocketTransport,
  type ProtocolClientOptions,
  type WebSocketLike,
} from '../../src/protocol/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';

export interface TestServer {
  server: RunningServer;
  root: string;
  dataDir: string;
  /** The project's name (the temp folder's) and a task in it, `first-task`. */
  project: string;
  backend: ScriptedBackend;
  logs: Array<{ level: string; message: string }>;
  /** A typed client on `channel` (default: a new one). `sockets` collects the client-side sockets it opens. */
  client(options?: {
    channel?: string;
    token?: string;
    sockets?: WebSocket[];
    client?: Partial<ProtocolClientOptions>;
  }): Promise<ProtocolClient>;
  /** A raw `ws` socket, open and authenticated. */
  raw(options?: { channel?: string }): Promise<WebSocket>;
  restart(options?: Partial<ServerOptions>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a server in this process on port 0 over a temp project folder, with the real draft layer
 * on one scripted back end, and a task `first-task` to draft into.
 */
export async function startTestServer(
  options: Partial<ServerOptions> & { backend?: ScriptedBackend } = {},
): Promise<TestServer> {
  const root = await mkdtemp(join(tmpdir(), 'parley-server-'));
  const dataDir = join(root, '.parley');
  const backend = options.backend ?? createScriptedBackend();
  const logs: Array<{ level: string; message: string }> = [];
  const clients: ProtocolClient[] = [];
  const raws: WebSocket[] = [];
  const open = (extra: Partial<ServerOptions> = {}) =>
    startServer({
      projectRoot: root,
      dataDir,
      backendFor: () => backend as AgentBackend,
      log: (level, message) => logs.push({ level, message }),
      ...options,
      ...extra,
    });
  const state: { server: RunningServer } = { server: await open() };
  const project = (await state.server.drafts.listProjects()).find((entry) => entry.current)!.name;
  await state.server.drafts.createTask({ project, title: 'First task', slug: 'first-task' });
  const harness: TestServer = {
    get server() {
      return state.server;
    },
    root,
    dataDir,
    project,
    backend,
    logs,
    async client(clientOptions = {}) {
      const server = state.server;
      const client = new ProtocolClient({
        transport: webSocketTransport({
          url: server.wsUrl,
          token: clientOptions.token ?? server.token,
          ...(clientOptions.channel !== undefined ? { channel: clientOptions.channel } : {}),
          createSocket: (url) => {
            const socket = new WebSocket(url);
            clientOptions.sockets?.push(socket);
            return socket as unknown as WebSocketLike;
          },
        }),
        reconnect: { initialDelayMs: 10, maxDelayMs: 100 },
        onError: () => {},
        ...clientOptions.client,
      });
      clients.push(client);
      await client.connect();
      return client;
    },
    async raw(rawOptions = {}) {
      const url = new URL(state.server.wsUrl);
      url.searchParams.set('token', state.server.token);
      if (rawOptions.channel) url.searchParams.set('channel', rawOptions.channel);
      const socket = new WebSocket(url);
      raws.push(socket);
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      return socket;
    },
    async restart(extra = {}) {
      const port = state.server.port;
      await state.server.close();
      state.server = await open({ port, ...extra });
    },
    async stop() {
      for (const client of clients) client.close();
      for (const socket of raws) socket.terminate();
      await state.server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
  return harness;
}

/** Sends frames on a raw socket and resolves with the next `count` parsed answers. */
export function collect(socket: WebSocket, count: number): Promise<unknown[]> {
  return new Promise((resolve) => {
    const answers: unknown[] = [];
    const onMessage = (data: WebSocket.RawData) => {
      answers.push(JSON.parse(String(data)));
      if (answers.length >= count) {
        socket.off('message', onMessage);
        resolve(answers);
      }
    };
    socket.on('message', onMessage);
  });
}

/** One request on a raw socket: its parsed answer. */
export async function rawCall(socket: WebSocket, frame: string): Promise<Record<string, unknown>> {
  const answer = collect(socket, 1);
  socket.send(frame);
  return (await answer)[0] as Record<string, unknown>;
}

/** Resolves with the HTTP status of a refused upgrade, or 101 when it was accepted. */
export function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => {
      socket.close();
      resolve(101);
    });
    socket.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('error', () => undefined);
  });
}

/** A promise and its resolve function, for scripted turns that wait on the test. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
