import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { RpcError, RpcErrorCode, type ProtocolClient, type ServerFile } from '../../src/protocol/index.js';
import { postgresSkipReason } from '../helpers/postgres.js';
import { useTestDatabase } from '../helpers/postgres-database.js';
import { runParley } from '../helpers/run-parley.js';
import { connectToServer, startServeProcess, type ServeProcess } from './serve-process.js';

// Two `parley serve` processes on one PostgreSQL database, a client on each. A draft run by
// server A is watched live from server B; A is SIGKILLed mid-turn; the next prompt, sent to B on the
// same channel, takes the draft over once A's lease has run out, and the turn goes on there.

const skipReason = postgresSkipReason();

/** Short, so the takeover waits about two seconds rather than the default 30. */
const LEASE_MS = '2000';
const CHANNEL = 'tui-two-servers';
const DEADLINE_MS = 20_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(root: string, script: unknown, databaseUrl: string): Promise<ServeProcess> {
  const scriptPath = join(root, '..', 'script.json');
  await writeFile(scriptPath, JSON.stringify(script));
  const server = await startServeProcess(root, {
    PARLEY_SCRIPTED_SCRIPT: scriptPath,
    PARLEY_DATABASE_URL: databaseUrl,
    PARLEY_DRAFT_LEASE_MS: LEASE_MS,
  });
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function connect(info: ServerFile, channel: string): Promise<ProtocolClient> {
  const client = await connectToServer(info, channel);
  cleanups.push(() => Promise.resolve(client.close()));
  return client;
}

function reasonOf(error: unknown): string | undefined {
  return error instanceof RpcError ? error.reason : undefined;
}

/**
 * submit_prompt on a server that must first take the draft over: refused with DRAFT_RUN_ELSEWHERE
 * until the dead server's lease runs out, so it is asked again until it is accepted or the deadline passes.
 */
async function submitOnceTakenOver(client: ProtocolClient, content: string): ReturnType<typeof submit> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    try {
      return await submit(client, content);
    } catch (error) {
      if (reasonOf(error) !== 'DRAFT_RUN_ELSEWHERE' || Date.now() > deadline) throw error;
      await pause(100);
    }
  }
}

function submit(client: ProtocolClient, content: string) {
  return client.request('submit_prompt', { content });
}

function expectConsecutive(seqs: readonly number[]): void {
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => seqs[0]! + index));
}

describe.skipIf(skipReason !== undefined)('two parley serve processes on one PostgreSQL database', () => {
  const database = useTestDatabase('two_serve');

  it('a draft run by server A is watched live from server B; after SIGKILL of A mid-turn, the next prompt on B takes it over and the turn goes on there', async () => {
    // The same folder name under two parents: both servers serve the home project "shop".
    const parents = await mkdtemp(join(tmpdir(), 'parley-two-serve-'));
    cleanups.push(() => rm(parents, { recursive: true, force: true }));
    const rootA = join(parents, 'a', 'shop');
    const rootB = join(parents, 'b', 'shop');
    await mkdir(rootA, { recursive: true });
    await mkdir(rootB, { recursive: true });

    const serverA = await serve(
      rootA,
      {
        turns: [
          [
            { type: 'text', text: 'First part from A.' },
            { type: 'text', text: 'Second part from A.' },
            { type: 'delay', ms: 600_000 },
            { type: 'text', text: 'never sent' },
          ],
        ],
      },
      database.url(),
    );
    const serverB = await serve(rootB, { defaultTurn: [{ type: 'text', text: 'Answered on B.' }] }, database.url());
    const clientA = await connect(serverA.info, CHANNEL);
    const clientB = await connect(serverB.info, CHANNEL);

    const projectOnA = (await clientA.request('list_projects')).projects.find((entry) => entry.current)!;
    const projectOnB = (await clientB.request('list_projects')).projects.find((entry) => entry.current)!;
    expect(projectOnA.name).toBe('shop');
    expect(projectOnB.name).toBe('shop');
    await clientA.request('create_task', { project: 'shop', title: 'Two servers', slug: 'two-servers' });
    const { sessionId } = await clientA.request('draft', { role: 'dev', project: 'shop', task: 'two-servers' });

    const seenOnA: StreamEvent[] = [];
    clientA.on('channel_message', (message) => seenOnA.push(message.event));
    const seenOnB: StreamEvent[] = [];
    clientB.on('session_event', (message) => message.sessionId === sessionId && seenOnB.push(message.event));
    await clientB.subscribe([sessionId]);

    const first = await submit(clientA, 'Question asked on A');
    expect(first.mode).toBe('draft');
    if (first.mode !== 'draft') return;
    const partialDone = (event: StreamEvent) =>
      event.type === 'block_complete' &&
      event.block.type === 'assistant_text' &&
      event.block.content === 'Second part from A.';
    await vi.waitFor(() => expect(seenOnA.some(partialDone)).toBe(true), { timeout: DEADLINE_MS });
    const acknowledged = [...seenOnA];
    // B's subscriber sees A's turn live (A is still mid-turn), in seq order, each event once.
    await vi.waitFor(() => expect(seenOnB.at(-1)?.seq).toBe(acknowledged.at(-1)!.seq), { timeout: DEADLINE_MS });
    expectConsecutive(seenOnB.map((event) => event.seq));
    expect(seenOnB[0]!.seq).toBeLessThanOrEqual(first.seq);
    expect(seenOnB.filter((event) => event.seq >= first.seq)).toEqual(
      acknowledged.filter((event) => event.seq >= first.seq),
    );

    // While A lives and holds the lease, a prompt on B is refused, naming A.
    const refused = await submit(clientB, 'Too early').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(reasonOf(refused)).toBe('DRAFT_RUN_ELSEWHERE');
    expect((refused as RpcError).code).toBe(RpcErrorCode.INVALID_STATE);
    expect((refused as RpcError).data.holder).toContain(`pid ${serverA.info.pid}`);
    // A client on B (a reconnect, a failover) sees the draft A runs, its turn streaming there.
    const seenFromB = await clientB.request('get_draft_status');
    expect(seenFromB).toMatchObject({
      active: true,
      session: { sessionId, role: 'dev', taskSlug: 'two-servers', turnRunning: true, runBy: { here: false } },
    });
    expect(seenFromB.session?.runBy?.server).toContain(`pid ${serverA.info.pid}`);

    serverA.child.kill('SIGKILL');
    expect((await serverA.exited).signal).toBe('SIGKILL');

    const turnDoneOnB = (event: StreamEvent, after: number) =>
      event.seq > after &&
      event.type === 'metadata_update' &&
      event.conversationId === 'main' &&
      event.metadata.turnComplete === true;
    const second = await submitOnceTakenOver(clientB, 'Question asked on B');
    expect(second.mode).toBe('draft');
    if (second.mode !== 'draft') return;
    await vi.waitFor(() => expect(seenOnB.some((event) => turnDoneOnB(event, second.seq))).toBe(true), {
      timeout: DEADLINE_MS,
    });

    const log = (await clientB.request('get_events', { sessionId })).events;
    // No duplicate or missing seq in the log, nor in what B's subscriber saw from A's turn to B's.
    expectConsecutive(log.map((event) => event.seq));
    expectConsecutive(seenOnB.map((event) => event.seq));
    expect(seenOnB).toEqual(log.filter((event) => event.seq >= seenOnB[0]!.seq && event.seq <= seenOnB.at(-1)!.seq));
    // Every event acknowledged before the kill is there, unchanged and in its place.
    for (const event of acknowledged) expect(log.find((stored) => stored.seq === event.seq)).toEqual(event);

    const conversation = applyEvents(emptyConversation(sessionId), log);
    const shown = conversation.blocks.map((block) => {
      if (block.type === 'user_message' || block.type === 'assistant_text') return `${block.type}: ${block.content}`;
      return block.type === 'system' ? `system: ${block.subtype}` : block.type;
    });
    expect(shown.filter((line) => !line.startsWith('system: ') || line === 'system: interrupted')).toEqual([
      'user_message: Question asked on A',
      'assistant_text: First part from A.',
      'assistant_text: Second part from A.',
      'system: interrupted',
      'user_message: Question asked on B',
      'assistant_text: Answered on B.',
    ]);
    expect(JSON.stringify(log)).not.toContain('never sent');
    // The draft's metrics are read from the log once the turn has ended, after its last event is
    // announced: a subscriber can see turnComplete before the status counts the turn.
    await vi.waitFor(async () =>
      expect(await clientB.request('get_draft_status')).toMatchObject({
        active: true,
        session: { sessionId, role: 'dev', taskSlug: 'two-servers', turnCount: 2 },
      }),
    );
  }, 90_000);

  it('a PARLEY_DRAFT_LEASE_MS that is not a whole number of milliseconds from 1000 stops parley serve before anything is written', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-lease-env-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    for (const value of ['soon', '500', '1.5e3']) {
      const run = await runParley(['serve', '--port', '0'], {
        cwd: folder,
        env: { PARLEY_DATABASE_URL: database.url(), PARLEY_DRAFT_LEASE_MS: value },
      });
      expect(run.stderr).toContain(
        `PARLEY_DRAFT_LEASE_MS must be a whole number of milliseconds from 1000 to 86400000, not "${value}"`,
      );
      expect(run.code).toBe(2);
      expect(await readdir(folder)).toEqual([]);
    }
  }, 60_000);
});
