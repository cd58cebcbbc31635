import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import type { ProtocolClient } from '../../src/protocol/index.js';
import { createPostgresStore, type SessionStore, type StoreChange } from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, TEST_ROLE, type TestPostgres } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { connectToServer, startServeProcess, type ServeProcess } from './serve-process.js';

// One `parley serve` on PostgreSQL behind a TCP proxy (test/helpers/tcp-proxy.ts). A draft streams
// turns while the proxy cuts every connection once, and while PostgreSQL is stopped with
// `pg_ctl stop -m immediate` and started again. Appends wait and retry (within the store's
// `retryForMs`, 30 s), so each turn finishes whole: nothing the client saw is lost or doubled, the
// server and a second store's LISTEN connection reconnect by themselves, and the next turn runs.
// The long version, two servers and 50 drafts, is `npm run soak -- --outage` (bench/soak-outage.ts).

const skipReason = postgresSkipReason();
/** Stopping the server needs one these tests started. */
const local = !process.env.PARLEY_TEST_DATABASE_URL;
const PARTS = 10;
const DEADLINE_MS = 30_000;

function part(index: number): string {
  return `Part ${index} of the answer.`;
}

/** Each turn streams PARTS text blocks with a pause after each: long enough to be cut in the middle. */
const script = {
  defaultTurn: Array.from({ length: PARTS }, (_, index) => [
    { type: 'text', text: part(index), chunks: [`Part ${index} `, 'of the ', 'answer.'] },
    { type: 'delay', ms: 40 },
  ]).flat(),
};

function isTurnEnd(event: StreamEvent): boolean {
  return event.type === 'metadata_update' && event.conversationId === 'main' && event.metadata.turnComplete === true;
}

describe.skipIf(skipReason !== undefined || !local)('parley serve while PostgreSQL goes away and comes back', () => {
  let postgres: TestPostgres;
  let proxy: TcpProxy;
  let root: string;
  let serve: ServeProcess | undefined;
  let client: ProtocolClient | undefined;
  let watcher: SessionStore | undefined;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    await postgres.admin(`CREATE DATABASE outage OWNER ${TEST_ROLE}`);
    proxy = await startTcpProxy({ targetHost: postgres.host, targetPort: postgres.port });
    root = await mkdtemp(join(tmpdir(), 'parley-outage-'));
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await watcher?.close().catch(() => undefined);
    if (serve && serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill('SIGKILL');
    await serve?.exited;
    await proxy?.close();
    await postgres?.destroy();
    await rm(root, { recursive: true, force: true });
  });

  it('a cut of every connection and a pg_ctl stop -m immediate mid-turn lose nothing, double nothing, and the draft goes on', async () => {
    // Everything Parley says to PostgreSQL goes through the proxy.
    const proxied = postgres.url({ database: 'outage' }).replace(`:${postgres.port}/`, `:${proxy.port}/`);
    const project = join(root, 'shop');
    await mkdir(project);
    await writeFile(join(root, 'script.json'), JSON.stringify(script));
    serve = await startServeProcess(project, {
      PARLEY_SCRIPTED_SCRIPT: join(root, 'script.json'),
      PARLEY_DATABASE_URL: proxied,
    });
    client = await connectToServer(serve.info, 'outage');
    await client.request('create_task', { project: 'shop', title: 'Outage', slug: 'outage' });
    const { sessionId } = await client.request('draft', { role: 'dev', project: 'shop', task: 'outage' });
    const seen: StreamEvent[] = [];
    client.on('channel_message', ({ event }) => seen.push(event));

    // A second store on the same schema, through the proxy too: its LISTEN connection must come back.
    watcher = await createPostgresStore({ connectionString: proxied });
    const changes: StoreChange[] = [];
    watcher.watch!((change) => changes.push(change));
    await vi.waitFor(() => expect(changes).toContainEqual({ kind: 'unknown' }), { timeout: DEADLINE_MS });

    /** Sends a prompt, runs `midway` once the turn has streamed half its parts, waits for the turn's end. */
    const turn = async (content: string, midway: () => Promise<void>) => {
      const accepted = await client!.request('submit_prompt', { content });
      if (accepted.mode !== 'draft') throw new Error(`expected the draft path, got ${accepted.mode}`);
      const ofTurn = () => seen.filter((event) => event.seq >= accepted.seq);
      const halfWay = (event: StreamEvent) =>
        event.type === 'block_complete' && event.block.type === 'assistant_text' && event.block.content === part(4);
      await vi.waitFor(() => expect(ofTurn().some(halfWay)).toBe(true), { timeout: DEADLINE_MS });
      await midway();
      await vi.waitFor(() => expect(ofTurn().some(isTurnEnd)).toBe(true), { timeout: DEADLINE_MS });
      return ofTurn().find(isTurnEnd)!;
    };

    // 1. Every connection through the proxy (the server's pool and LISTEN, the watcher's LISTEN) cut at once.
    const firstEnd = await turn('Question one', async () => {
      expect(proxy.cutAll()).toBeGreaterThanOrEqual(2);
    });
    // 2. PostgreSQL killed mid-turn (no shutdown checkpoint, crash recovery at start), then started again.
    const heardBefore = changes.length;
    const secondEnd = await turn('Question two', async () => {
      await postgres.stop('immediate');
      await postgres.start();
    });
    // 3. After both, a plain turn.
    const thirdEnd = await turn('Question three', async () => undefined);

    for (const end of [firstEnd, secondEnd, thirdEnd])
      expect(end.type === 'metadata_update' && end.metadata.stopReason).not.toBe('error');
    const log = (await client.request('get_events', { sessionId })).events;
    // The log's seqs run 0, 1, 2… with no gap or repeat, and the client saw each event once, unchanged.
    expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index));
    const firstSeen = seen[0]!.seq;
    expect(seen.map((event) => event.seq)).toEqual(seen.map((_, index) => firstSeen + index));
    expect(seen).toEqual(log.slice(firstSeen));
    // Each turn's answer is whole: every part once, in order.
    const shown = applyEvents(emptyConversation(sessionId), log)
      .blocks.filter((block) => block.type === 'user_message' || block.type === 'assistant_text')
      .map((block) => ('content' in block ? block.content : ''));
    const answer = Array.from({ length: PARTS }, (_, index) => part(index));
    expect(shown).toEqual(['Question one', ...answer, 'Question two', ...answer, 'Question three', ...answer]);

    // The watcher's LISTEN came back after the restart: it said so (`unknown`), then heard the third turn.
    const afterRestart = changes.slice(heardBefore);
    expect(afterRestart).toContainEqual({ kind: 'unknown' });
    expect(
      afterRestart.some(
        (change) => change.kind === 'appended' && change.sessionId === sessionId && change.firstSeq > secondEnd.seq,
      ),
    ).toBe(true);
    expect(proxy.stats.cut).toBeGreaterThanOrEqual(2);
  }, 90_000);
});
