/**
 * Forking a session: `forkSession` at the end of a 10-message and a 10,000-message session, and in
 * the middle of the long one, on the memory and the file store. A fork shares the source's history
 * (one record write), so its cost should not grow with the history: the target is a fork of
 * 10,000 messages at most 2× one of 10, and under 50 ms.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSessionManager, type SessionManager } from '../src/sessions/index.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../src/store/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const SIZES = [10, 10_000] as const;
const ROUNDS = 7;

async function sourceOf(manager: SessionManager, messages: number): Promise<string> {
  const session = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  const now = Date.now();
  const events = Array.from({ length: messages }, (_, index) => ({
    type: 'block_complete' as const,
    conversationId: 'main',
    block: {
      id: `block-${index}`,
      type: index % 2 === 0 ? ('user_message' as const) : ('assistant_text' as const),
      status: 'success' as const,
      content: `message ${index}: ${'lorem ipsum dolor sit amet '.repeat(8)}`,
      createdAt: now,
    },
  }));
  for (let start = 0; start < events.length; start += 1000)
    await manager.appendEvents(session.sessionId, events.slice(start, start + 1000));
  return session.sessionId;
}

async function measure(store: SessionStore, messages: number, at?: number): Promise<number> {
  const manager = await createSessionManager({ store });
  try {
    const sourceId = await sourceOf(manager, messages);
    const samples: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      await manager.forkSession(sourceId, at === undefined ? {} : { at });
      samples.push(performance.now() - started);
    }
    return percentile(samples, 50);
  } finally {
    await manager.close();
  }
}

export async function run(): Promise<string> {
  const rows: string[][] = [];
  for (const kind of ['memory', 'file'] as const) {
    const medians: number[] = [];
    for (const size of SIZES) {
      const dataDir = kind === 'file' ? await mkdtemp(join(tmpdir(), 'parley-fork-bench-')) : undefined;
      const store = dataDir === undefined ? createMemoryStore() : await createFileStore({ dataDir });
      try {
        medians.push(await measure(store, size));
        // A fork in the middle counts the kept history's messages and metrics (the source's cached ones stop at its end).
        if (size === SIZES[1]) medians.push(await measure(store, size, size / 2));
      } finally {
        await store.close();
        if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
      }
    }
    rows.push([
      kind,
      formatMs(medians[0]!),
      formatMs(medians[1]!),
      ratio(medians[1]!, medians[0]!),
      formatMs(medians[2]!),
      '≤ 2×, < 50 ms',
    ]);
  }
  return [
    '## Fork',
    '',
    `Median of ${ROUNDS} forks at the end of the session, and of the 10,000-message one at seq 5,000 (the history is shared, not copied).`,
    '',
    table(['store', '10 messages', '10,000 messages', '10,000 / 10', '10,000 at 5,000', 'target'], rows),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
