import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TranscriptWarning } from '../../../src/backends/index.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../../src/conversation/index.js';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { watchTranscripts, type ImportResult, type TranscriptWatcher } from '../../../src/sessions/import/index.js';
import { createFileStore, shareStore, type SessionStore, type SharedStore } from '../../../src/store/index.js';
import { startTestServer, type TestServer } from '../../server/helpers.js';

/**
 * `watchTranscripts` (`parley import --watch`): a Claude Code transcript written while it is
 * followed reaches a web client of a server on the same store, through the store, as it is written.
 * The tests wait on what the client receives, never on time.
 */

const NATIVE_ID = '3b8e1f2a-6c4d-4e9f-8a1b-2c3d4e5f6a7b';
const SESSION_ID = `cc-${NATIVE_ID}`;

const user = (uuid: string, parentUuid: string | null, content: string, second = 0) => ({
  type: 'user',
  uuid,
  parentUuid,
  sessionId: NATIVE_ID,
  cwd: '/home/dev/demo',
  timestamp: `2026-08-01T10:00:${String(second).padStart(2, '0')}.000Z`,
  message: { role: 'user', content },
});
const assistant = (
  uuid: string,
  parentUuid: string,
  content: string,
  options: { messageId?: string; stop?: string | null; output?: number; second?: number } = {},
) => ({
  type: 'assistant',
  uuid,
  parentUuid,
  sessionId: NATIVE_ID,
  requestId: `req_${options.messageId ?? uuid}`,
  timestamp: `2026-08-01T10:00:${String(options.second ?? 1).padStart(2, '0')}.000Z`,
  message: {
    id: options.messageId ?? `msg_${uuid}`,
    role: 'assistant',
    model: 'claude-opus-5-5',
    content: [{ type: 'text', text: content }],
    stop_reason: options.stop === undefined ? 'end_turn' : options.stop,
    usage: { input_tokens: 10, output_tokens: options.output ?? 5 },
  },
});
const jsonl = (...records: unknown[]): string => records.map((record) => `${JSON.stringify(record)}\n`).join('');

/** A web client's view of one session: every `session_event` it received, and a way to wait for one. */
function follow(client: ProtocolClient, sessionId: string) {
  const events: StreamEvent[] = [];
  const waiting: Array<{ check: () => boolean; done: () => void }> = [];
  client.on('session_event', (message) => {
    if (message.sessionId !== sessionId) return;
    events.push(message.event);
    for (const entry of [...waiting]) {
      if (entry.check()) {
        waiting.splice(waiting.indexOf(entry), 1);
        entry.done();
      }
    }
  });
  const blockIds = (): string[] => events.flatMap((event) => (event.type === 'block_complete' ? [event.block.id] : []));
  return {
    events,
    blockIds,
    /** Resolves once an event passing `match` has arrived. */
    untilEvent(match: (event: StreamEvent) => boolean): Promise<void> {
      const check = () => events.some(match);
      if (check()) return Promise.resolve();
      return new Promise((done) => waiting.push({ check, done }));
    },
    /** Resolves once a block with this id (and passing `where`) has arrived. */
    until(blockId: string, where: (event: StreamEvent) => boolean = () => true): Promise<void> {
      return this.untilEvent((event) => event.type === 'block_complete' && event.block.id === blockId && where(event));
    },
  };
}

let work: string;
let shared: SharedStore;
let store: SessionStore;
let server: TestServer;
let watcher: TranscriptWatcher | undefined;

beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-watch-'));
  shared = shareStore(await createFileStore({ dataDir: join(work, 'data'), onWarning: () => {} }));
  store = shared.view();
  server = await startTestServer({ store: shared.view() });
});
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  await server.stop();
  await shared.close();
  await fs.rm(work, { recursive: true, force: true });
});

describe('watchTranscripts', () => {
  it('imports appended lines, a rewrite and a truncation while a web client of a server on the same store follows the session', async () => {
    const file = join(work, `${NATIVE_ID}.jsonl`);
    await fs.writeFile(file, jsonl(user('u1', null, 'Fix the parser'), assistant('a1', 'u1', 'Looking at it.')));
    const client = await server.client();
    await client.subscribe();
    const view = follow(client, SESSION_ID);
    const syncs: ImportResult[] = [];
    const warnings: TranscriptWarning[] = [];
    watcher = watchTranscripts(file, {
      store,
      onSync: (result) => syncs.push(result),
      onWarning: (warning) => warnings.push(warning),
    });
    const first = await watcher.ready;
    expect(first.sessions).toEqual([expect.objectContaining({ sessionId: SESSION_ID, status: 'imported', blocks: 2 })]);

    // Appends: one line at a time, as Claude Code writes them.
    await fs.appendFile(file, jsonl(user('u2', 'a1', 'And the tests', 3)));
    await view.until('u2');
    await fs.appendFile(file, jsonl(assistant('a2', 'u2', 'Tests added.', { second: 4 })));
    await view.until('a2');
    await view.until('a1'); // the first pass, which the client followed too
    expect(syncs.at(-1)?.sessions[0]).toMatchObject({ status: 'updated', appendedBlocks: 1 });

    // A rewrite: the first prompt changed (a different head): read again from the start, with a warning.
    await fs.writeFile(
      file,
      jsonl(
        user('u1', null, 'Fix the lexer'),
        assistant('a1', 'u1', 'Looking at it.'),
        user('u2', 'a1', 'And the tests', 3),
        assistant('a2', 'u2', 'Tests added.', { second: 4 }),
      ),
    );
    await view.until(
      'u1',
      (event) =>
        event.type === 'block_complete' &&
        event.block.type === 'user_message' &&
        event.block.content === 'Fix the lexer',
    );
    const rewritten = (event: StreamEvent) =>
      event.type === 'block_complete' &&
      event.block.type === 'system' &&
      (event.block.data as { code?: string }).code === 'TRANSCRIPT_REWRITTEN';
    await view.untilEvent(rewritten);
    expect(warnings).toEqual([
      expect.objectContaining({
        code: 'TRANSCRIPT_REWRITTEN',
        message: expect.stringContaining('imported again from its start'),
      }),
    ]);

    // A truncation: back to the first exchange, then the file goes on differently.
    await fs.truncate(
      file,
      Buffer.byteLength(jsonl(user('u1', null, 'Fix the lexer'), assistant('a1', 'u1', 'Looking at it.'))),
    );
    await fs.appendFile(file, jsonl(user('u3', 'a1', 'Start over', 5)));
    await view.until('u3');
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    expect(view.events.filter(rewritten).length).toBeGreaterThanOrEqual(2);

    // Everything the client saw is in the log, in seq order, and the log rebuilds the conversation.
    const log: StreamEvent[] = [];
    for await (const event of store.readLog(SESSION_ID)) log.push(event);
    const seen = view.events.map((event) => event.seq);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(log.map((event) => event.seq)).toEqual(expect.arrayContaining(seen));
    const state = applyEvents(emptyConversation(SESSION_ID), log);
    expect(state.blocks.map((block) => block.id)).toEqual(expect.arrayContaining(['u1', 'a1', 'u2', 'a2', 'u3']));
  });

  it('counts the usage of a message written in two records once, though a pass read it half written', async () => {
    const file = join(work, `${NATIVE_ID}.jsonl`);
    await fs.writeFile(
      file,
      jsonl(
        user('u1', null, 'Summarize'),
        assistant('a1', 'u1', 'Reading', { messageId: 'msg_1', stop: null, output: 7 }),
      ),
    );
    const client = await server.client();
    await client.subscribe();
    const view = follow(client, SESSION_ID);
    watcher = watchTranscripts(file, { store });
    await watcher.ready;
    // The second record of the same API message: its usage (the message's, repeated) ends the message.
    await fs.appendFile(
      file,
      jsonl(assistant('a1b', 'a1', 'Done.', { messageId: 'msg_1', stop: 'end_turn', output: 7, second: 2 })),
    );
    await view.until('a1b');
    // A human prompt after an answer with no stop reason still ends that turn.
    await fs.appendFile(
      file,
      jsonl(
        user('u2', 'a1b', 'Thanks', 3),
        assistant('a2', 'u2', 'You are welcome', { stop: null, second: 4 }),
        user('u3', 'a2', 'Bye', 5),
      ),
    );
    await view.until('u3');
    await watcher.stop();
    const log: StreamEvent[] = [];
    for await (const event of store.readLog(SESSION_ID)) log.push(event);
    const state = applyEvents(emptyConversation(SESSION_ID), log);
    // msg_1 (7 output tokens) once, a2 held back as still open until u3 closed it: 7 + 5.
    expect(state.metrics.outputTokens).toBe(12);
    expect(state.metrics.turns).toBe(2);
  });

  it('in a folder, reads only the session file that changed, and a subagent file through its session', async () => {
    const folder = join(work, 'project');
    const otherId = '9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
    await fs.mkdir(join(folder, NATIVE_ID, 'subagents'), { recursive: true });
    await fs.writeFile(join(folder, `${NATIVE_ID}.jsonl`), jsonl(user('u1', null, 'One')));
    await fs.writeFile(join(folder, `${otherId}.jsonl`), jsonl({ ...user('o1', null, 'Other'), sessionId: otherId }));
    const syncs: ImportResult[] = [];
    const waiting: Array<{ check: (result: ImportResult) => boolean; done: (result: ImportResult) => void }> = [];
    const next = (check: (result: ImportResult) => boolean) =>
      new Promise<ImportResult>((done) => waiting.push({ check, done }));
    watcher = watchTranscripts(folder, {
      store,
      onSync: (result) => {
        syncs.push(result);
        for (const entry of [...waiting])
          if (entry.check(result)) (waiting.splice(waiting.indexOf(entry), 1), entry.done(result));
      },
    });
    expect((await watcher.ready).sessions).toHaveLength(2);

    const updated = next((result) => result.sessions.some((session) => session.status === 'updated'));
    await fs.appendFile(join(folder, `${NATIVE_ID}.jsonl`), jsonl(assistant('a1', 'u1', 'Done', { second: 2 })));
    expect((await updated).sessions.map((session) => session.sessionId)).toEqual([SESSION_ID]);

    const agent = next((result) => result.sessions.some((session) => session.subagents === 1));
    await fs.writeFile(
      join(folder, NATIVE_ID, 'subagents', 'agent-x1.jsonl'),
      jsonl({ ...user('s1', null, 'Search the code'), isSidechain: true, agentId: 'x1' }),
    );
    expect((await agent).sessions.find((session) => session.sessionId === SESSION_ID)).toMatchObject({
      status: 'updated',
      subagents: 1,
    });
  });

  it('reports a store failure during a pass, keeps watching, and the next pass writes what the failed one did not', async () => {
    const file = join(work, `${NATIVE_ID}.jsonl`);
    await fs.writeFile(file, jsonl(user('u1', null, 'One'), assistant('a1', 'u1', 'Ok')));
    let failNext = false;
    const failing: SessionStore = new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (key !== 'append' || typeof value !== 'function')
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        return (...args: unknown[]) => {
          if (failNext) {
            failNext = false;
            return Promise.reject(new Error('disk on fire'));
          }
          return (value as (...args: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const errors: unknown[] = [];
    const erred = new Promise<void>((done) => {
      watcher = watchTranscripts(file, { store: failing, onError: (error) => (errors.push(error), done()) });
    });
    await watcher!.ready;
    failNext = true;
    await fs.appendFile(file, jsonl(user('u2', 'a1', 'Two', 3)));
    await erred;
    expect(String(errors[0])).toContain('disk on fire');

    const client = await server.client();
    await client.subscribe();
    const view = follow(client, SESSION_ID);
    await fs.appendFile(file, jsonl(assistant('a2', 'u2', 'Done', { second: 4 })));
    await view.until('a2');
    const ids: string[] = [];
    for await (const event of store.readLog(SESSION_ID)) if (event.type === 'block_complete') ids.push(event.block.id);
    expect(ids).toEqual(['u1', 'a1', 'u2', 'a2']);
  });

  it('fails the first pass with a clear error when the path does not exist, and follows it once it appears when asked to wait', async () => {
    const missing = join(work, 'projects', '-home-dev-demo');
    await expect(watchTranscripts(missing, { store }).ready).rejects.toMatchObject({ code: 'IMPORT_PATH_NOT_FOUND' });

    const imported = new Promise<ImportResult>((done) => {
      watcher = watchTranscripts(missing, {
        store,
        waitForPath: true,
        onSync: (result) => {
          if (result.sessions.length > 0) done(result);
        },
      });
    });
    await watcher!.ready;
    await fs.mkdir(missing, { recursive: true });
    await fs.writeFile(
      join(missing, `${NATIVE_ID}.jsonl`),
      jsonl(user('u1', null, 'Hello'), assistant('a1', 'u1', 'Hi')),
    );
    expect((await imported).sessions).toEqual([expect.objectContaining({ sessionId: SESSION_ID, status: 'imported' })]);
  });
});
