import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createPostgresStore, type SessionStore, type StoreChange, type StoreError } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { collect, sessionRecord, storeErrorOf } from '../builders.js';
import { crashMessage } from '../fixtures/crash-message.js';

// The PostgreSQL store behind a bad network: a TCP proxy on 127.0.0.1 (test/helpers/tcp-proxy.ts)
// that delays every chunk, or swallows every byte without closing anything (a half-open
// connection after a partition, which never errors). Slow means slower, never lost or doubled;
// a connection that stops answering fails the call within its bound instead of holding it forever.

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('the PostgreSQL store behind a slow or silent network', () => {
  let postgres: TestPostgres;
  let proxy: TcpProxy;
  const opened: SessionStore[] = [];

  beforeAll(async () => {
    postgres = await startTestPostgres();
    proxy = await startTcpProxy({ targetHost: postgres.host, targetPort: postgres.port });
  }, 120_000);
  afterAll(async () => {
    proxy?.blackhole(false);
    for (const store of opened) await store.close().catch(() => undefined);
    await proxy?.close();
    await postgres?.destroy();
  });

  async function proxiedStore(
    options: { schema?: string; retryForMs?: number; answerTimeoutMs?: number; connectTimeoutMs?: number } = {},
  ) {
    const connectionString = postgres.url().replace(`:${postgres.port}/`, `:${proxy.port}/`);
    const store = await createPostgresStore({ connectionString, schema: postgres.freshSchema('network'), ...options });
    opened.push(store);
    return store;
  }

  function ids(events: readonly StreamEvent[]): string[] {
    return events.map((event) => (event.type === 'block_complete' ? event.block.id : event.type));
  }

  it('with 200 ms on every packet both ways, concurrent appends all land once, in order, and a watcher hears them', async () => {
    const schema = postgres.freshSchema('slow');
    const store = await proxiedStore({ schema });
    const watcher = await proxiedStore({ schema });
    await store.createSession(sessionRecord('slow'));
    const heard: StoreChange[] = [];
    watcher.watch!((change) => heard.push(change));
    await vi.waitFor(() => expect(heard).toContainEqual({ kind: 'unknown' }), { timeout: 30_000 });
    proxy.setDelay(200);
    try {
      const writers = Array.from({ length: 10 }, async (_, writer) => {
        const acked: StreamEvent[] = [];
        for (let index = 0; index < 5; index += 1)
          acked.push(...(await store.append('slow', [crashMessage(`w${writer}`, index)])));
        return acked;
      });
      const acked = (await Promise.all(writers)).flat();
      const stored = await collect(store.readLog('slow'));
      expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index));
      expect(stored).toHaveLength(50);
      expect(new Set(ids(stored)).size).toBe(50);
      for (const event of acked) expect(stored[event.seq]).toEqual(event);
      // Each writer's own appends keep its order.
      for (let writer = 0; writer < 10; writer += 1)
        expect(ids(stored).filter((id) => id.startsWith(`m-w${writer}-`))).toEqual(
          Array.from({ length: 5 }, (_, index) => `m-w${writer}-${index}`),
        );
      // The watcher (its LISTEN behind the same delay) hears a lone last append, which is its own group.
      const [last] = await store.append('slow', [crashMessage('last', 0)]);
      expect(last!.seq).toBe(50);
      await vi.waitFor(() => expect(heard).toContainEqual({ kind: 'appended', sessionId: 'slow', firstSeq: 50 }), {
        timeout: 30_000,
      });
    } finally {
      proxy.setDelay(0);
    }
  }, 120_000);

  it('a connection that stops answering (half-open) fails the append with STORE_UNAVAILABLE within its bound, and the store works again after', async () => {
    const store = await proxiedStore({ retryForMs: 2_000, answerTimeoutMs: 2_000, connectTimeoutMs: 2_000 });
    await store.createSession(sessionRecord('silent'));
    await store.append('silent', [crashMessage('silent', 0)]);
    proxy.blackhole(true);
    let appendError: StoreError | undefined;
    let readError: StoreError | undefined;
    try {
      // Without an answer timeout both would wait forever: nothing errors on a half-open connection.
      appendError = await storeErrorOf(() => store.append('silent', [crashMessage('silent', 1)]));
      readError = await storeErrorOf(() => store.getSession('silent'));
    } finally {
      proxy.blackhole(false);
    }
    expect(appendError!.code).toBe('STORE_UNAVAILABLE');
    expect(appendError!.message).toContain('may or may not be stored');
    expect(appendError!.data).toMatchObject({ outcomeUnknown: true });
    expect(readError!.code).toBe('STORE_UNAVAILABLE');
    // A pooled connection times out waiting for its answer, a new one waiting to connect: either is bounded.
    expect(readError!.message).toMatch(/Query read timeout|connection timeout/);
    // The silent connections were ended, not given back to the pool: the next calls get new ones.
    const [next] = await store.append('silent', [crashMessage('silent', 2)]);
    const stored = ids(await collect(store.readLog('silent')));
    expect(stored).toEqual(['m-silent-0', 'm-silent-2']);
    expect(next!.seq).toBe(1);
  }, 60_000);
});
