import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { step } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import type { ProtocolClient } from '../../src/protocol/index.js';
import { createPostgresStore, type SessionStore } from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { runParley } from '../helpers/run-parley.js';
import { startTestServer, type TestServer } from './helpers.js';

const skipReason = postgresSkipReason();

/** The events of a text turn A's scripted back end plays: enough deltas that they cross in many appends. */
function longAnswer(parts: number): ReturnType<typeof step.text>[] {
  return Array.from({ length: parts }, (_, index) => step.text(`part ${index} `));
}

function expectConsecutive(events: readonly StreamEvent[], from: number): void {
  expect(events.map((event) => event.seq)).toEqual(Array.from({ length: events.length }, (_, index) => from + index));
}

describe.skipIf(skipReason !== undefined)('two parley servers on one PostgreSQL database', () => {
  let postgres: TestPostgres;
  let schema: string;
  const opened: Array<{ server: TestServer; store: SessionStore }> = [];

  beforeAll(async () => {
    postgres = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await postgres?.destroy();
  });
  afterEach(async () => {
    for (const { server, store } of opened.splice(0)) {
      await server.stop();
      await store.close();
    }
    await postgres.dropSchema(schema);
  });

  /** A server in this process on its own project folder, with its own store instance on the shared schema. */
  async function serverOn(sharedSchema: string): Promise<TestServer> {
    const store = await createPostgresStore({ connectionString: postgres.url(), schema: sharedSchema });
    const server = await startTestServer({ store });
    opened.push({ server, store });
    return server;
  }

  async function twoServers(): Promise<[TestServer, TestServer]> {
    schema = postgres.freshSchema('servers');
    return [await serverOn(schema), await serverOn(schema)];
  }

  async function draftOn(server: TestServer, client: ProtocolClient): Promise<string> {
    const { sessionId } = await client.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    return sessionId;
  }

  it("a turn run by server A reaches server B's subscriber live, in seq order without gaps; B's records and get_events match A's", async () => {
    const [serverA, serverB] = await twoServers();
    const drafter = await serverA.client();
    const watcher = await serverB.client();
    const sessionId = await draftOn(serverA, drafter);
    const seenOnA: StreamEvent[] = [];
    drafter.on('channel_message', (message) => seenOnA.push(message.event));
    const seenOnB: StreamEvent[] = [];
    watcher.on('session_event', (message) => message.sessionId === sessionId && seenOnB.push(message.event));
    await watcher.subscribe([sessionId]);

    serverA.backend.enqueue(longAnswer(40));
    const turnDone = new Promise<void>((resolve) => drafter.on('draft_status', () => resolve()));
    const answer = await drafter.request('submit_prompt', { content: 'Hello from A' });
    if (answer.mode !== 'draft') throw new Error(`expected the draft path, got ${answer.mode}`);
    const accepted = answer;
    await turnDone;
    const logOnA = await serverA.server.manager.getEvents(sessionId);
    const turn = logOnA.filter((event) => event.seq >= accepted.seq);
    expect(turn.length).toBeGreaterThan(40);

    await vi.waitFor(() => expect(seenOnB.at(-1)?.seq).toBe(logOnA.at(-1)!.seq), { timeout: 10_000 });
    // Everything from the prompt on, each once, in order: the same events A's own channel saw.
    expect(seenOnB[0]!.seq).toBeLessThanOrEqual(accepted.seq);
    expectConsecutive(seenOnB, seenOnB[0]!.seq);
    expect(seenOnB.filter((event) => event.seq >= accepted.seq)).toEqual(
      seenOnA.filter((event) => event.seq >= accepted.seq),
    );

    // B's records follow A's: the cached record on B counts the turn, and an archive on A shows on B.
    const onA = await drafter.request('get_session', { sessionId });
    await vi.waitFor(async () => {
      const onB = await watcher.request('get_session', { sessionId });
      expect(onB.session.stats.totalMessages).toBe(onA.session.stats.totalMessages);
      expect(onB.session.metrics).toEqual(onA.session.metrics);
    });
    await drafter.request('archive_session', { sessionId });
    await vi.waitFor(async () => {
      expect((await watcher.request('get_session', { sessionId })).session.status).toBe('archived');
      const listed = await watcher.request('list_sessions', { status: 'archived' });
      expect(listed.sessions.map((session) => session.sessionId)).toContain(sessionId);
    });

    // A client that saw A up to some seq resumes on B and misses nothing.
    const middle = turn[Math.floor(turn.length / 2)]!.seq;
    const resumed = await watcher.request('get_events', { sessionId, afterSeq: middle });
    expect(resumed.events).toEqual(await serverA.server.manager.getEvents(sessionId, { afterSeq: middle }));
    expect(resumed.events[0]!.seq).toBe(middle + 1);
  });

  it('events appended on A while the LISTEN connections are ended are all delivered on B, once each, in order', async () => {
    const [serverA, serverB] = await twoServers();
    const drafter = await serverA.client();
    const watcher = await serverB.client();
    const sessionId = await draftOn(serverA, drafter);
    const seenOnB: number[] = [];
    watcher.on('session_event', (message) => message.sessionId === sessionId && seenOnB.push(message.event.seq));
    await watcher.subscribe([sessionId]);
    const first = await serverA.server.manager.appendEvents(sessionId, [
      { type: 'text_delta', conversationId: 'main', blockId: 'b', delta: 'before ' },
    ]);
    await vi.waitFor(() => expect(seenOnB).toContain(first[0]!.seq), { timeout: 10_000 });

    const ended = await postgres.admin<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'parley-listen' AND datname = $1`,
      [new URL(postgres.url()).pathname.slice(1)],
    );
    expect(ended.length).toBeGreaterThan(0);
    const appended: StreamEvent[] = [];
    for (let burst = 0; burst < 20; burst += 1) {
      const drafts = Array.from({ length: 10 }, (_, index) => ({
        type: 'text_delta' as const,
        conversationId: 'main',
        blockId: 'b',
        delta: `${burst}.${index} `,
      }));
      appended.push(...(await serverA.server.manager.appendEvents(sessionId, drafts)));
    }
    const last = appended.at(-1)!.seq;
    await vi.waitFor(() => expect(seenOnB.at(-1)).toBe(last), { timeout: 15_000 });
    const fromFirst = seenOnB.slice(seenOnB.indexOf(first[0]!.seq));
    expect(fromFirst).toEqual(Array.from({ length: last - first[0]!.seq + 1 }, (_, index) => first[0]!.seq + index));
    // And B's own cache holds them: its conversation is A's.
    expect(await serverB.server.manager.loadConversation(sessionId)).toEqual(
      await serverA.server.manager.loadConversation(sessionId),
    );
  });

  it("B's own append after A's is applied after them: B's cache and announcements have no gap", async () => {
    const [serverA, serverB] = await twoServers();
    const drafter = await serverA.client();
    const sessionId = await draftOn(serverA, drafter);
    const managerB = serverB.server.manager;
    // Held on B now, as a client's subscribe holds it (get_events alone reads the log and holds nothing).
    await managerB.loadConversation(sessionId);
    const announcedOnB: number[] = [];
    managerB.on('session:event', ({ sessionId: id, event }) => id === sessionId && announcedOnB.push(event.seq));
    const before = await serverA.server.manager.getEvents(sessionId);
    const fromA = await serverA.server.manager.appendEvents(sessionId, [
      { type: 'text_delta', conversationId: 'main', blockId: 'x', delta: 'a1 ' },
      { type: 'text_delta', conversationId: 'main', blockId: 'x', delta: 'a2 ' },
    ]);
    // Appended on B at once, whether or not B heard of A's events yet.
    const fromB = await managerB.appendEvents(sessionId, [
      { type: 'text_delta', conversationId: 'main', blockId: 'x', delta: 'b1' },
    ]);
    expect(fromB[0]!.seq).toBe(fromA[1]!.seq + 1);
    const lastBefore = before.at(-1)?.seq ?? -1;
    expect(announcedOnB).toEqual(
      Array.from({ length: fromB[0]!.seq - lastBefore }, (_, index) => lastBefore + 1 + index),
    );
    expect((await managerB.loadConversation(sessionId)).lastSeq).toBe(fromB[0]!.seq);
  });
});

describe.skipIf(skipReason !== undefined)('parley serve --store', () => {
  let postgres: TestPostgres;
  let folder: string;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    folder = await mkdtemp(join(tmpdir(), 'parley-store-flag-'));
  }, 120_000);
  afterAll(async () => {
    await postgres?.destroy();
    await rm(folder, { recursive: true, force: true });
  });

  it('a URL that is not postgres:// exits with the store error and creates nothing', async () => {
    const run = await runParley(['serve', '--port', '0', '--store', 'mysql://user@localhost/parley'], { cwd: folder });
    expect(run.stderr).toContain('it must start with postgres:// or postgresql://');
    expect(run.code).toBe(2);
    expect(await readdir(folder)).toEqual([]);
  }, 30_000);

  it('a refused password (from PARLEY_DATABASE_URL) exits with the store error naming the role', async () => {
    const run = await runParley(['serve', '--port', '0'], {
      cwd: folder,
      env: { PARLEY_DATABASE_URL: postgres.url({ password: 'wrong password' }) },
    });
    expect(run.stderr).toMatch(/refused role "parley".*Check the user name and password/);
    expect(run.stderr).not.toContain('wrong password');
    expect(run.code).toBe(2);
    expect(await readdir(folder)).toEqual([]);
  }, 30_000);

  it('an unreachable server exits 1 with the store error naming host and port', async () => {
    const run = await runParley(['serve', '--port', '0', '--store', 'postgres://parley:secret@127.0.0.1:1/parley'], {
      cwd: folder,
    });
    expect(run.stderr).toContain('PostgreSQL at 127.0.0.1:1 (database "parley") cannot be reached');
    expect(run.code).toBe(1);
    expect(await readdir(folder)).toEqual([]);
  }, 30_000);
});
