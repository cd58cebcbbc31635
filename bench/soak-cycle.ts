/**
 * `npm run soak -- --cycle [--duration 180 --channels 20 --turns 20 --idle 60 --max-live 0 --postgres]`:
 * drafts come and go the way a team's server sees them. Each channel, over and over, creates a
 * task, drafts on it, runs its turns on the scripted back end and undrafts. Samples heap after GC,
 * RSS, live sessions, open file descriptors and active handles over time, and fails (exit code 1)
 * when, after the manager's idle window, memory still grows: heap after GC at the end more than
 * 1.2× the heap at the end of the first idle window, or RSS more than 1.3×.
 */
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import WebSocket from 'ws';
import { createScriptedBackend, type ScriptStep } from '../src/backends/index.js';
import { createPostgresStore, type SessionStore } from '../src/store/index.js';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../src/protocol/index.js';
import { startServer } from '../src/server/index.js';
import { table } from './stats.js';

export interface CycleSoakOptions {
  durationMs: number;
  channels: number;
  turnsPerDraft: number;
  /** The manager's idle window (`liveSessionIdleMs`): how long an unused session stays in memory. */
  idleMs: number;
  /** The manager's size bound (`maxLiveSessions`); 0: none. */
  maxLive: number;
  sampleEveryMs: number;
  /** Sessions in PostgreSQL (a server started for the run, or PARLEY_TEST_DATABASE_URL's) instead of the file store. */
  postgres?: boolean;
  /** Writes a heap snapshot here at the end of the first idle window and at the end (writing one inflates RSS: judge RSS without). */
  snapshotDir?: string;
  log?: (line: string) => void;
}

export interface CycleSample {
  atMs: number;
  heapMb: number;
  rssMb: number;
  liveSessions: number;
  fds: number;
  handles: number;
  handleKinds: string;
  draftsClosed: number;
  turns: number;
}

export interface CycleSoakReport {
  options: CycleSoakOptions;
  samples: CycleSample[];
  /** The sample at the end of the first idle window (the baseline of the bounds). */
  baseline: CycleSample;
  end: CycleSample;
  heapGrowth: number;
  rssGrowth: number;
  /** Heap after GC gained per closed draft between the baseline and the end, in KB. */
  heapPerDraftKb: number;
  passed: boolean;
  errors: number;
  /** False when the run ended before its first idle window did: the baseline is then its middle sample. */
  baselineReached: boolean;
}

export const cycleDefaults: CycleSoakOptions = {
  durationMs: 180_000,
  channels: 20,
  turnsPerDraft: 20,
  idleMs: 60_000,
  maxLive: 0,
  sampleEveryMs: 10_000,
};

/** Heap after GC at the end over heap at the end of the first idle window, at most. */
export const HEAP_BOUND = 1.2;
/** The same for RSS. */
export const RSS_BOUND = 1.3;

/** A turn streams eight blocks of text, each in six chunks, as the streaming soak's turns do. */
function turnSteps(): ScriptStep[] {
  return Array.from({ length: 8 }, (_, index): ScriptStep => ({
    type: 'text',
    text: `Chunk ${index} of a streamed answer, word by word.`,
    chunks: ['Chunk ', `${index} `, 'of a ', 'streamed ', 'answer, ', 'word by word.'],
  }));
}

function openFileDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return Number.NaN;
  }
}

function activeHandles(): { count: number; kinds: string } {
  const byKind = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  const kinds = [...byKind]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  return { count: process.getActiveResourcesInfo().length, kinds };
}

export async function runCycleSoak(partial: Partial<CycleSoakOptions> = {}): Promise<CycleSoakReport> {
  const options: CycleSoakOptions = { ...cycleDefaults, ...partial };
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('The cycling soak needs node --expose-gc (npm run soak sets it).');
  const log = options.log ?? (() => {});
  const root = await mkdtemp(join(tmpdir(), 'parley-soak-cycle-'));
  const backend = createScriptedBackend({ defaultTurn: () => turnSteps() });
  let postgres: TestPostgres | undefined;
  let store: SessionStore | undefined;
  if (options.postgres) {
    postgres = await startTestPostgres();
    store = await createPostgresStore({ connectionString: postgres.url(), schema: postgres.freshSchema('soak') });
  }
  const server = await startServer({
    projectRoot: root,
    dataDir: join(root, '.parley'),
    backendFor: () => backend,
    rateLimit: false,
    summarize: false,
    liveSessionIdleMs: options.idleMs,
    ...(options.maxLive > 0 ? { maxLiveSessions: options.maxLive } : {}),
    ...(store ? { store } : {}),
    log: () => {},
  });
  const project = (await server.drafts.listProjects()).find((entry) => entry.current)!.name;
  const run = Math.random().toString(36).slice(2, 8);
  const samples: CycleSample[] = [];
  const clients: ProtocolClient[] = [];
  let stopping = false;
  let draftsClosed = 0;
  let turns = 0;
  let errors = 0;
  let firstClosedAtMs: number | undefined;
  const started = performance.now();
  try {
    const loops = Array.from({ length: options.channels }, async (_, channel) => {
      const client = new ProtocolClient({
        transport: webSocketTransport({
          url: server.wsUrl,
          token: server.token,
          channel: `cycle-${channel}`,
          createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
        }),
        requestTimeoutMs: 60_000,
      });
      clients.push(client);
      await client.connect();
      for (let cycle = 0; !stopping; cycle += 1) {
        const slug = `cycle-${run}-${channel}-${cycle}`;
        try {
          await client.request('create_task', { project, title: `Cycle ${channel}.${cycle}`, slug });
          await client.request('draft', { role: 'dev', project, task: slug });
          // Stopping ends the draft after the turn running, so the end comes soon after the duration.
          for (let turn = 0; turn < options.turnsPerDraft && !stopping; turn += 1) {
            const ended = new Promise<void>((resolve) => {
              // A draft_status notification follows each turn.
              const off = client.on('draft_status', () => {
                off();
                resolve();
              });
            });
            await client.request('submit_prompt', { content: `turn ${turn}` });
            await ended;
            turns += 1;
          }
          await client.request('undraft');
          draftsClosed += 1;
          firstClosedAtMs ??= performance.now() - started;
        } catch (error) {
          errors += 1;
          log(`channel ${channel}: ${String(error)}`);
          await client.request('undraft').catch(() => undefined);
        }
      }
    });

    const sample = (): CycleSample => {
      // The scripted back end records every request for tests; the soak needs none of them.
      backend.calls.splice(0);
      gc();
      const usage = process.memoryUsage();
      const handles = activeHandles();
      const entry: CycleSample = {
        atMs: performance.now() - started,
        heapMb: usage.heapUsed / 1048576,
        rssMb: usage.rss / 1048576,
        liveSessions: server.manager.liveSessionCount(),
        fds: openFileDescriptors(),
        handles: handles.count,
        handleKinds: handles.kinds,
        draftsClosed,
        turns,
      };
      samples.push(entry);
      log(
        `${(entry.atMs / 1000).toFixed(0)} s: heap ${entry.heapMb.toFixed(1)} MB, rss ${entry.rssMb.toFixed(0)} MB, live ${entry.liveSessions}, fds ${entry.fds}, handles ${entry.handles} (${entry.handleKinds}), drafts closed ${draftsClosed}, turns ${turns}`,
      );
      return entry;
    };
    sample();
    let baseline: CycleSample | undefined;
    // The first idle window ends a window and a sweep (at most a minute) after the first draft closed:
    // from then on, closed drafts are let go as fast as new ones close.
    const sweepMs = Math.min(options.idleMs, 60_000);
    const sampler = setInterval(() => {
      const entry = sample();
      if (!baseline && firstClosedAtMs !== undefined && entry.atMs >= firstClosedAtMs + options.idleMs + sweepMs) {
        baseline = entry;
        if (options.snapshotDir)
          log(`heap snapshot: ${writeHeapSnapshot(join(options.snapshotDir, 'baseline.heapsnapshot'))}`);
      }
    }, options.sampleEveryMs);
    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    stopping = true;
    clearInterval(sampler);
    await Promise.all(loops);
    const end = sample();
    if (options.snapshotDir) log(`heap snapshot: ${writeHeapSnapshot(join(options.snapshotDir, 'end.heapsnapshot'))}`);
    const baselineReached = baseline !== undefined;
    // A run too short to see its first idle window end is compared from its middle, and says so.
    baseline ??= samples[Math.floor(samples.length / 2)]!;
    const heapGrowth = end.heapMb / baseline.heapMb;
    const rssGrowth = end.rssMb / baseline.rssMb;
    const closedSince = end.draftsClosed - baseline.draftsClosed;
    return {
      options,
      samples,
      baseline,
      end,
      heapGrowth,
      rssGrowth,
      heapPerDraftKb: closedSince > 0 ? ((end.heapMb - baseline.heapMb) * 1024) / closedSince : 0,
      passed: heapGrowth <= HEAP_BOUND && rssGrowth <= RSS_BOUND && errors === 0,
      errors,
      baselineReached,
    };
  } finally {
    stopping = true;
    for (const client of clients) client.close();
    await server.close();
    await store?.close();
    await postgres?.destroy();
    await rm(root, { recursive: true, force: true });
  }
}

export function formatCycleSoak(report: CycleSoakReport): string {
  const { options } = report;
  const rows = report.samples.map((sample) => [
    `${(sample.atMs / 1000).toFixed(0)} s${sample === report.baseline ? ' (baseline)' : ''}`,
    sample.heapMb.toFixed(1),
    sample.rssMb.toFixed(0),
    String(sample.liveSessions),
    String(sample.fds),
    `${sample.handles} (${sample.handleKinds})`,
    String(sample.draftsClosed),
    String(sample.turns),
  ]);
  const store = options.postgres ? 'PostgreSQL' : 'file store';
  const bound = options.maxLive > 0 ? `, at most ${options.maxLive} live sessions` : '';
  return [
    `## Cycling soak: ${options.channels} channels for ${(options.durationMs / 1000).toFixed(0)} s, ${options.turnsPerDraft} turns a draft (${store}, scripted back end, idle window ${(options.idleMs / 1000).toFixed(0)} s${bound})`,
    '',
    `drafts closed ${report.end.draftsClosed}, turns ${report.end.turns}, errors ${report.errors}${report.baselineReached ? '' : ' · the run ended before its first idle window did: compared from its middle (run longer)'}`,
    '',
    `**heap after GC, end / baseline: ${report.heapGrowth.toFixed(2)}× (bound ${HEAP_BOUND}×)** · **RSS: ${report.rssGrowth.toFixed(2)}× (bound ${RSS_BOUND}×)** · heap gained per closed draft after the baseline: ${report.heapPerDraftKb.toFixed(1)} KB · ${report.passed ? 'PASS' : 'FAIL'}`,
    '',
    table(
      ['time', 'heap MB (after GC)', 'RSS MB', 'live sessions', 'open fds', 'active handles', 'drafts closed', 'turns'],
      rows,
    ),
    '',
  ].join('\n');
}
