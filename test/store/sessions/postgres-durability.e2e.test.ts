import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createPostgresStore, type SessionStore } from '../../../src/store/index.js';
import { AppendCommitter } from '../../../src/store/sessions/postgres-append-committer.js';
import { parseConnectionString } from '../../../src/store/postgres/connection.js';
import { queriesFor } from '../../../src/store/sessions/postgres-queries.js';
import { postgresSkipReason, startTestPostgres, TEST_ROLE, type TestPostgres } from '../../helpers/postgres.js';
import { collect, sessionRecord, storeErrorOf } from '../builders.js';
import { crashContent, crashMessage } from '../fixtures/crash-message.js';

const skipReason = postgresSkipReason();
/** Stopping, restarting and ending the server's connections needs a server these tests started. */
const local = !process.env.PARLEY_TEST_DATABASE_URL;

interface Ack {
  seq: number;
  run: string;
  index: number;
}

interface Child {
  acks: Ack[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Runs the append loop as a real process; SIGKILLs it once it printed `killAfterBytes` bytes of acks
 * (never when undefined). With `gate`, it starts appending only when `gate` settles.
 */
async function runAppender(
  script: string,
  args: string[],
  options: { killAfterBytes?: number; gate?: Promise<void>; onReady?: () => void } = {},
): Promise<Child> {
  const gated = options.gate !== undefined;
  const child = spawn(process.execPath, [script, ...args, ...(gated ? ['gate'] : [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let ready = !gated;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!ready && stdout.startsWith('ready\n')) {
      ready = true;
      stdout = stdout.slice('ready\n'.length);
      options.onReady?.();
      void options.gate!.then(() => child.stdin.write('go\n'));
    }
    if (options.killAfterBytes !== undefined && stdout.length >= options.killAfterBytes) child.kill('SIGKILL');
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [, [code, signal]] = await Promise.all([
    new Promise<void>((resolve) => child.stdout.once('end', resolve)),
    new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
    ),
  ]);
  const acks = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [seq, run, index] = line.split(' ');
      return { seq: Number(seq), run: run!, index: Number(index) };
    });
  return { acks, code, signal, stderr };
}

/** The message of each stored event as `run/index`, checking seqs are 0, 1, 2… and nothing is stored twice. */
async function storedMessages(store: SessionStore, sessionId: string): Promise<string[]> {
  const events = await collect(store.readLog(sessionId));
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  const ids = events.map((event) =>
    (event as StreamEvent & { block: { id: string } }).block.id.replace(/^m-/, '').replace('-', '/'),
  );
  expect(new Set(ids).size, 'an event is stored twice').toBe(ids.length);
  return ids;
}

describe.skipIf(skipReason !== undefined)('PostgreSQL store: many processes, crashes and lost connections', () => {
  let server: TestPostgres;
  let folder: string;
  let script: string;

  beforeAll(async () => {
    server = await startTestPostgres();
    folder = await fs.mkdtemp(join(tmpdir(), 'parley-pg-durability-'));
    // One bundle, started with plain node: a process costs ~0.2 s instead of a tsx start-up.
    script = join(folder, 'postgres-append-loop.mjs');
    await build({
      entryPoints: [join(dirname(fileURLToPath(import.meta.url)), '../fixtures/postgres-append-loop.ts')],
      outfile: script,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: ['pg-native'],
      // pg is CommonJS; the bundle needs `require` for its Node built-ins.
      banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
      logLevel: 'silent',
    });
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
    if (folder !== undefined) await fs.rm(folder, { recursive: true, force: true });
  });

  async function freshStore(options: { retryForMs?: number } = {}): Promise<{ store: SessionStore; schema: string }> {
    const schema = server.freshSchema();
    const store = await createPostgresStore({ connectionString: server.url(), schema, ...options });
    return { store, schema };
  }

  it('keeps seqs consecutive and unique, and each process its own order, when two processes append to one session', async () => {
    const { store, schema } = await freshStore();
    await store.createSession(sessionRecord('shared'));
    // Both open the store first, then start appending at the same moment.
    let readyCount = 0;
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    const onReady = () => {
      readyCount += 1;
      if (readyCount === 2) go();
    };
    const [first, second] = await Promise.all(
      ['a', 'b'].map((run) => runAppender(script, [server.url(), schema, 'shared', run, '300'], { gate, onReady })),
    );
    for (const child of [first!, second!]) {
      expect(child.code, child.stderr).toBe(0);
      expect(child.acks).toHaveLength(300);
    }
    const stored = await storedMessages(store, 'shared');
    expect(stored).toHaveLength(600);
    for (const run of ['a', 'b']) {
      // The process's messages appear in the order it called append, at the seqs it was told.
      expect(stored.filter((id) => id.startsWith(`${run}/`))).toEqual(
        Array.from({ length: 300 }, (_, index) => `${run}/${index}`),
      );
      for (const ack of (run === 'a' ? first : second)!.acks) expect(stored[ack.seq]).toBe(`${run}/${ack.index}`);
    }
    // Both really ran at once: their appends interleave in the log.
    const runs = stored.map((id) => id[0]).join('');
    expect(runs).not.toBe('a'.repeat(300) + 'b'.repeat(300));
    expect(runs).not.toBe('b'.repeat(300) + 'a'.repeat(300));
    await store.close();
  }, 60_000);

  it('keeps every acknowledged append through SIGKILLs of processes mid-append', async () => {
    const { store, schema } = await freshStore();
    await store.createSession(sessionRecord('crash'));
    const acknowledged: Ack[] = [];
    let killedMidRun = 0;
    for (let round = 0; round < 6; round += 1) {
      // Two victims at once, killed after different amounts of output.
      const victims = await Promise.all(
        [`r${round}x`, `r${round}y`].map((run, which) =>
          runAppender(script, [server.url(), schema, 'crash', run, '0'], {
            killAfterBytes: 400 + round * 900 + which * 1_300,
          }),
        ),
      );
      for (const victim of victims) {
        expect(victim.signal, victim.stderr).toBe('SIGKILL');
        if (victim.acks.length > 0) killedMidRun += 1;
        acknowledged.push(...victim.acks);
      }
      const stored = await storedMessages(store, 'crash');
      const lost = acknowledged.filter((ack) => stored[ack.seq] !== `${ack.run}/${ack.index}`);
      expect(lost, `round ${round}: acknowledged appends missing or moved`).toEqual([]);
    }
    expect(killedMidRun).toBeGreaterThanOrEqual(10);
    // Every stored message has the content its process sent.
    for (const event of await collect(store.readLog('crash'))) {
      const { id, content } = (event as StreamEvent & { block: { id: string; content: string } }).block;
      const [, run, index] = /^m-(.+)-(\d+)$/.exec(id)!;
      expect(content).toBe(crashContent(run!, Number(index)));
    }
    await store.close();
  }, 120_000);

  it('stores a group once when the answer to its commit is lost and it is sent again', async () => {
    const { store, schema } = await freshStore();
    await store.createSession(sessionRecord('once'));
    const pool = new pg.Pool({ connectionString: server.url() });
    let lostAnswers = 0;
    // The real database commits; the answer is dropped on the way back, as a connection cut after COMMIT would.
    const answerLost = {
      connect: async () => {
        const client = await pool.connect();
        const query = client.query.bind(client) as (query: pg.QueryConfig) => Promise<pg.QueryResult>;
        return Object.assign(client, {
          query: async (config: pg.QueryConfig) => {
            const result = await query(config);
            if (config.text.includes('new_events') && lostAnswers < 2) {
              lostAnswers += 1;
              throw new Error('Connection terminated unexpectedly');
            }
            return result;
          },
        });
      },
    } as unknown as pg.Pool;
    const committer = new AppendCommitter({
      pool: answerLost,
      queries: queriesFor(pg.escapeIdentifier(schema)),
      target: parseConnectionString(server.url()),
      retryForMs: 10_000,
      notify: { channel: 'parley_changes:test', origin: 'test' },
    });
    const results = await Promise.all([
      committer.append('once', [crashMessage('lost', 0), crashMessage('lost', 1)]),
      committer.append('once', [crashMessage('lost', 2)]),
    ]);
    const later = await committer.append('once', [crashMessage('lost', 3)]);
    expect(lostAnswers).toBe(2);
    expect([...results.flat(), ...later].map((event) => event.seq)).toEqual([0, 1, 2, 3]);
    expect(await storedMessages(store, 'once')).toEqual(['lost/0', 'lost/1', 'lost/2', 'lost/3']);
    await pool.end();
    await store.close();
  });

  it.runIf(local)(
    'recovers after pg_terminate_backend on its connections, idle or mid-append, storing each append once',
    async () => {
      const { store, schema } = await freshStore();
      await store.createSession(sessionRecord('cut'));
      await store.append('cut', [crashMessage('before', 0)]);
      const parleyBackends = "FROM pg_stat_activity WHERE application_name = 'parley' AND usename = $1";
      const terminate = () =>
        server.admin(`SELECT pg_terminate_backend(pid) ${parleyBackends}`, [TEST_ROLE], 'postgres');

      // Idle pooled connections ended: the next calls get new ones.
      expect((await terminate()).length).toBeGreaterThan(0);
      expect(await store.getSession('cut')).toEqual(sessionRecord('cut'));
      await store.append('cut', [crashMessage('before', 1)]);

      // Connections ended in the middle of an append: a lock held here keeps the appends' statement
      // waiting inside the server until the backend running it is ended.
      const blocker = new pg.Client({ connectionString: server.url() });
      await blocker.connect();
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE ${pg.escapeIdentifier(schema)}.events IN EXCLUSIVE MODE`);
      const appends = Array.from({ length: 30 }, (_, index) => store.append('cut', [crashMessage('cut', index)]));
      while (
        (await server.admin(`SELECT 1 ${parleyBackends} AND wait_event_type = 'Lock'`, [TEST_ROLE], 'postgres'))
          .length === 0
      ) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect((await terminate()).length).toBeGreaterThan(0);
      await blocker.query('COMMIT');
      await blocker.end();

      const results = (await Promise.all(appends)).flat();
      expect(results.map((event) => event.seq)).toEqual(results.map((_, index) => index + 2));
      expect(await storedMessages(store, 'cut')).toEqual([
        'before/0',
        'before/1',
        ...Array.from({ length: 30 }, (_, index) => `cut/${index}`),
      ]);
      await store.close();
    },
    60_000,
  );

  it.runIf(local)(
    'retries appends across a PostgreSQL restart and stores each once',
    async () => {
      const { store } = await freshStore();
      await store.createSession(sessionRecord('restart'));
      const appends: Array<Promise<StreamEvent[]>> = [];
      let restarted = false;
      let index = 0;
      const append = () => {
        appends.push(store.append('restart', [crashMessage('restart', index)]));
        index += 1;
      };
      for (let burst = 0; burst < 20; burst += 1) append();
      await Promise.all(appends);
      // Appends keep coming, a few at a time, for as long as the server is going down and coming back.
      const restarting = server.restart().then(() => (restarted = true));
      while (!restarted) {
        append();
        append();
        await appends.at(-1);
      }
      await restarting;
      for (let burst = 0; burst < 20; burst += 1) append();
      const results = (await Promise.all(appends)).flat();
      expect(results.map((event) => event.seq)).toEqual(results.map((_, index) => index));
      expect(await storedMessages(store, 'restart')).toEqual(
        Array.from({ length: index }, (_, each) => `restart/${each}`),
      );
      await store.close();
    },
    90_000,
  );

  it.runIf(local)(
    'fails an append with a clear STORE_UNAVAILABLE when the server stays down, stores it at most once, and works again after',
    async () => {
      const { store } = await freshStore({ retryForMs: 300 });
      await store.createSession(sessionRecord('down'));
      await store.append('down', [crashMessage('down', 0)]);
      await server.stop();
      try {
        const error = await storeErrorOf(() => store.append('down', [crashMessage('down', 1)]));
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.message).toContain(`${server.host}:${server.port}`);
        expect(error.message).toMatch(/Nothing was stored|may or may not be stored/);
      } finally {
        await server.start();
      }
      const stored = await storedMessages(store, 'down');
      expect(stored[0]).toBe('down/0');
      expect(stored.length).toBeLessThanOrEqual(2);
      const [next] = await store.append('down', [crashMessage('down', 2)]);
      expect(next!.seq).toBe(stored.length);
      await store.close();
    },
    60_000,
  );
});
