import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isParleyError, ParleyError, type StreamEvent, type UnsequencedEvent } from '../../conversation/index.js';
import { canonicalJson } from '../canonical-json.js';
import { StoreError } from '../errors.js';
import type { SessionRecord } from './records.js';
import type { NewTranscript, ReadLogOptions, SessionStore, StoreChange } from './session-store.js';

/**
 * A data folder's store served to the other processes on the same machine. The file store is
 * opened by one process (the one holding `store.lock`); the holder serves it on a Unix socket, and
 * any other Parley process on the folder uses it through a `SessionStore` that sends each call
 * there. Every write is made by the holder's store, so `seq`s are given in one place and nothing is
 * lost or doubled however many processes write; `watch` tells each process what the others wrote,
 * as the PostgreSQL store tells servers.
 *
 * The wire: one JSON object a line. A call `{ id, method, args }` is answered `{ id, result }` or
 * `{ id, error }` (a Parley error's code, fault, message and data, rebuilt on the caller's side);
 * `{ change }` lines carry what other processes changed.
 */

/** Events per `readLog` page: a long log never crosses the socket as one line. */
const LOG_PAGE = 2_000;
/** Unix socket paths are limited (108 bytes on Linux, 104 on macOS). */
const MAX_SOCKET_PATH = 100;

/** Where the holder of `dataDir` serves its store: in the folder when the path is short enough, else in the temp folder. */
export function storeSocketPath(dataDir: string): string {
  const inside = join(dataDir, 'store.sock');
  if (Buffer.byteLength(inside) <= MAX_SOCKET_PATH) return inside;
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 24);
  return join(tmpdir(), `parley-store-${hash}.sock`);
}

export interface StoreSocketServer {
  readonly path: string;
  /** Stops serving: open connections are closed (their pending calls fail), the socket file removed. */
  close(): Promise<void>;
}

/**
 * Serves a store on `path`. `open()` gives each connection its own view of the store (one whose
 * `watch` reports what the others wrote: `shareStore`), closed when the connection ends. Call only
 * while holding the data folder: a file left at `path` by a crashed holder is removed.
 */
export async function serveStoreOnSocket(path: string, open: () => SessionStore): Promise<StoreSocketServer> {
  await fs.rm(path, { force: true });
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const view = open();
    const send = (message: unknown): void => {
      if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
    };
    const unwatch = view.watch?.((change) => send({ change }));
    readLines(socket, (line) => {
      let call: { id: number; method: string; args: unknown[] };
      try {
        call = JSON.parse(line) as typeof call;
      } catch {
        socket.destroy();
        return;
      }
      // JSON has no `undefined`: an argument left out arrives as null.
      const args = call.args.map((value) => (value === null ? undefined : value));
      void answer(view, call.method, args).then(
        (result) => send({ id: call.id, result: result ?? null }),
        (error: unknown) => send({ id: call.id, error: wireError(error) }),
      );
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      sockets.delete(socket);
      unwatch?.();
      void view.close();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await fs.chmod(path, 0o600).catch(() => undefined);
  return {
    path,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fs.rm(path, { force: true });
    },
  };
}

/** One call of the wire on the holder's store; iterables are answered as arrays (a log, page by page). */
async function answer(store: SessionStore, method: string, args: unknown[]): Promise<unknown> {
  const [first, second, third] = args as [string, never, never];
  switch (method) {
    case 'listSessions': {
      const records: SessionRecord[] = [];
      for await (const record of store.listSessions(args[0] as never)) records.push(record);
      return records;
    }
    case 'readLogPage': {
      const events: StreamEvent[] = [];
      for await (const event of store.readLog(first, second as ReadLogOptions)) {
        events.push(event);
        if (events.length >= LOG_PAGE) break;
      }
      return events;
    }
    case 'replaceSession': {
      // The caller's update, made on the record it read: refused when another write came between.
      const expected = canonicalJson(second);
      return store.updateSession(first, (current) => {
        if (canonicalJson(current) !== expected)
          throw new StoreError('STORE_IO', 'changed meanwhile', { data: { conflict: true } });
        return third as SessionRecord;
      });
    }
    case 'createSessionWithTranscripts':
      if (store.createSessionWithTranscripts === undefined)
        throw new StoreError('STORE_IO', 'The store behind this socket cannot create a session with its transcripts.');
      return store.createSessionWithTranscripts(args[0] as SessionRecord, args[1] as NewTranscript[]);
    case 'listSessionPage':
    case 'searchSessions': {
      const call = store[method] as ((query: unknown) => Promise<unknown>) | undefined;
      if (call === undefined) throw new StoreError('STORE_IO', `The store behind this socket has no "${method}".`);
      return call.call(store, args[0]);
    }
    default: {
      if (!CALLS.has(method)) throw new StoreError('STORE_IO', `No store call "${method}".`);
      const call = (store as unknown as Record<string, (...values: unknown[]) => Promise<unknown>>)[method]!;
      return call.apply(store, args);
    }
  }
}

/** The calls sent as they are (their arguments and results are plain JSON). */
const CALLS = new Set([
  'createSession',
  'getSession',
  'append',
  'lastSeq',
  'writeCheckpoint',
  'readCheckpoint',
  'listCheckpoints',
  'writeContext',
  'readContext',
  'writeAgentDescription',
  'readAgentDescription',
  'writeTranscript',
  'readTranscript',
  'listTranscripts',
  'putFeature',
  'getFeature',
  'listFeatures',
  'putFeatureTask',
  'getFeatureTask',
  'listFeatureTasks',
]);

interface WireError {
  code: string;
  message: string;
  fault?: string;
  data?: Record<string, unknown>;
}

function wireError(error: unknown): WireError {
  if (isParleyError(error)) return { code: error.code, message: error.message, fault: error.fault, data: error.data };
  return { code: 'STORE_IO', message: error instanceof Error ? error.message : String(error), fault: 'system' };
}

function readLines(socket: Socket, onLine: (line: string) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let end = buffered.indexOf('\n');
    while (end >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      if (line.length > 0) onLine(line);
      end = buffered.indexOf('\n');
    }
  });
}

/**
 * The store of another process (the holder of the data folder), through its socket. Fails with
 * ECONNREFUSED or ENOENT (a `NodeJS.ErrnoException`) when nobody serves there.
 */
export async function connectSocketStore(path: string, options: { label: string }): Promise<SessionStore> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const connection = createConnection(path);
    connection.once('connect', () => {
      connection.off('error', reject);
      resolve(connection);
    });
    connection.once('error', reject);
  });
  return new SocketStore(socket, options.label);
}

class SocketStore implements SessionStore {
  readonly kind = 'file';
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly listeners = new Set<(change: StoreChange) => void>();
  private closed = false;
  private lost: ParleyError | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly label: string,
  ) {
    readLines(socket, (line) => this.receive(line));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.lost = new StoreError(
        'STORE_UNAVAILABLE',
        `The Parley process holding ${label} stopped while this one used it; what it had acknowledged is kept. Start this command again.`,
        { fault: 'system' },
      );
      for (const call of this.pending.values()) call.reject(this.lost);
      this.pending.clear();
    });
  }

  private receive(line: string): void {
    const message = JSON.parse(line) as { id?: number; result?: unknown; error?: WireError; change?: StoreChange };
    if (message.change !== undefined) {
      for (const listener of this.listeners) listener(message.change);
      return;
    }
    const call = message.id === undefined ? undefined : this.pending.get(message.id);
    if (call === undefined) return;
    this.pending.delete(message.id!);
    if (message.error !== undefined) {
      const { code, message: text, fault, data } = message.error;
      call.reject(
        new ParleyError(code, text, {
          fault: (fault ?? 'system') as 'system',
          ...(data !== undefined ? { data } : {}),
        }),
      );
    } else call.resolve(message.result);
  }

  private call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'The store is closed.', { fault: 'system' }));
    if (this.lost !== undefined) return Promise.reject(this.lost);
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.socket.write(`${JSON.stringify({ id, method, args })}\n`);
    });
  }

  /** `null` on the wire is an absent value. */
  private async optional<T>(method: string, ...args: unknown[]): Promise<T | undefined> {
    return ((await this.call<T | null>(method, ...args)) ?? undefined) as T | undefined;
  }

  createSession(record: SessionRecord): Promise<SessionRecord> {
    return this.call('createSession', record);
  }
  getSession(sessionId: string): Promise<SessionRecord | undefined> {
    return this.optional('getSession', sessionId);
  }
  async updateSession(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord> {
    // Read, change here, and write only if nobody wrote between: the update function cannot cross the socket.
    for (;;) {
      const current = await this.getSession(sessionId);
      if (current === undefined)
        throw new StoreError('SESSION_NOT_FOUND', `No session "${sessionId}" in ${this.label}.`, {
          fault: 'user',
          data: { sessionId },
        });
      try {
        return await this.call('replaceSession', sessionId, current, update(structuredClone(current)));
      } catch (error) {
        if (!(isParleyError(error) && error.data['conflict'] === true)) throw error;
      }
    }
  }
  async *listSessions(filter?: Parameters<SessionStore['listSessions']>[0]): AsyncIterable<SessionRecord> {
    yield* await this.call<SessionRecord[]>('listSessions', filter ?? {});
  }
  append(sessionId: string, events: readonly UnsequencedEvent[]): Promise<StreamEvent[]> {
    return this.call('append', sessionId, events);
  }
  async *readLog(sessionId: string, options: ReadLogOptions = {}): AsyncIterable<StreamEvent> {
    let afterSeq = options.afterSeq;
    for (;;) {
      const page = await this.call<StreamEvent[]>('readLogPage', sessionId, {
        ...(afterSeq !== undefined ? { afterSeq } : {}),
        ...(options.throughSeq !== undefined ? { throughSeq: options.throughSeq } : {}),
      });
      yield* page;
      if (page.length < LOG_PAGE) return;
      afterSeq = page[page.length - 1]!.seq;
    }
  }
  lastSeq(sessionId: string): Promise<number> {
    return this.call('lastSeq', sessionId);
  }
  listSessionPage(
    query: Parameters<NonNullable<SessionStore['listSessionPage']>>[0],
  ): ReturnType<NonNullable<SessionStore['listSessionPage']>> {
    return this.call('listSessionPage', query ?? {});
  }
  searchSessions(
    query: Parameters<NonNullable<SessionStore['searchSessions']>>[0],
  ): ReturnType<NonNullable<SessionStore['searchSessions']>> {
    return this.call('searchSessions', query);
  }
  writeCheckpoint(...args: Parameters<SessionStore['writeCheckpoint']>): ReturnType<SessionStore['writeCheckpoint']> {
    return this.call('writeCheckpoint', ...args);
  }
  readCheckpoint(...args: Parameters<SessionStore['readCheckpoint']>): ReturnType<SessionStore['readCheckpoint']> {
    return this.optional('readCheckpoint', ...args);
  }
  listCheckpoints(sessionId: string): ReturnType<SessionStore['listCheckpoints']> {
    return this.call('listCheckpoints', sessionId);
  }
  writeContext(...args: Parameters<SessionStore['writeContext']>): Promise<void> {
    return this.call('writeContext', ...args);
  }
  readContext(sessionId: string): ReturnType<SessionStore['readContext']> {
    return this.optional('readContext', sessionId);
  }
  writeAgentDescription(...args: Parameters<SessionStore['writeAgentDescription']>): Promise<void> {
    return this.call('writeAgentDescription', ...args);
  }
  readAgentDescription(sessionId: string): ReturnType<SessionStore['readAgentDescription']> {
    return this.optional('readAgentDescription', sessionId);
  }
  writeTranscript(sessionId: string, name: string, content: string): Promise<void> {
    return this.call('writeTranscript', sessionId, name, content);
  }
  readTranscript(sessionId: string, name: string): Promise<string | undefined> {
    return this.optional('readTranscript', sessionId, name);
  }
  listTranscripts(sessionId: string): Promise<string[]> {
    return this.call('listTranscripts', sessionId);
  }
  createSessionWithTranscripts(
    record: SessionRecord,
    transcripts: readonly NewTranscript[],
  ): Promise<{ session: SessionRecord; copiedBytes: Record<string, number> }> {
    // Same machine: the holder copies each file by its path.
    return this.call('createSessionWithTranscripts', record, transcripts);
  }
  putFeature(...args: Parameters<SessionStore['putFeature']>): Promise<void> {
    return this.call('putFeature', ...args);
  }
  getFeature(featureId: string): ReturnType<SessionStore['getFeature']> {
    return this.optional('getFeature', featureId);
  }
  listFeatures(): ReturnType<SessionStore['listFeatures']> {
    return this.call('listFeatures');
  }
  putFeatureTask(...args: Parameters<SessionStore['putFeatureTask']>): Promise<void> {
    return this.call('putFeatureTask', ...args);
  }
  getFeatureTask(featureId: string, taskId: string): ReturnType<SessionStore['getFeatureTask']> {
    return this.optional('getFeatureTask', featureId, taskId);
  }
  listFeatureTasks(featureId?: string): ReturnType<SessionStore['listFeatureTasks']> {
    return this.call('listFeatureTasks', ...(featureId !== undefined ? [featureId] : []));
  }
  watch(onChange: (change: StoreChange) => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.listeners.clear();
    this.socket.end();
    return Promise.resolve();
  }
}
