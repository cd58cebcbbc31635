/**
 * `npm run soak [-- --duration 60 --drafts 50 --drop-every 2000]`: many drafts streaming at once on
 * the scripted back end, each on its own WebSocket client; some clients' connections are dropped
 * on purpose and resume with `get_events`. Reports lost and doubled events (must be 0: every client
 * must see exactly its session's log, in order) and memory over time (must stay flat).
 * `npm run soak -- --cycle …`: drafts made and closed over and over instead (soak-cycle.ts).
 * `npm run soak -- --outage …`: two servers on PostgreSQL while it goes away and comes back, its
 * connections are cut and slowed (soak-outage.ts).
 * `npm run soak -- --hostile …`: idle connections and clients that never read (soak-hostile.ts).
 * `npm run soak -- --huge-session [--events N]`: a session of a million events opened in the web UI (soak-huge-session.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { createScriptedBackend, type ScriptStep } from '../src/backends/index.js';
import type { StreamEvent } from '../src/conversation/index.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../src/protocol/index.js';
import { startServer } from '../src/server/index.js';
import { cycleDefaults, formatCycleSoak, runCycleSoak } from './soak-cycle.js';
import { hostileDefaults, runHostile } from './soak-hostile.js';
import { hugeSessionDefaults, runHugeSession } from './soak-huge-session.js';
import { formatOutageSoak, outageDefaults, runOutageSoak } from './soak-outage.js';
import { table } from './stats.js';

export interface SoakOptions {
  durationMs: number;
  drafts: number;
  /** Drop one random client's connection this often (0: never). */
  dropEveryMs: number;
  /** Memory samples this often. */
  sampleEveryMs: number;
  /** Text steps per turn and the pause between them: a turn streams for about steps × pause. */
  stepsPerTurn: number;
  pauseMs: number;
  log?: (line: string) => void;
}

export interface SoakReport {
  options: SoakOptions;
  turns: number;
  events: number;
  /** Events in a session's log that its client never saw. */
  lost: number;
  /** Events a client saw twice, or out of order. */
  doubled: number;
  drops: number;
  samples: Array<{ atMs: number; rssMb: number; heapMb: number; turns: number; events: number; historyMb: number }>;
  /** Heap at the end over heap after warm-up (a quarter of the run). */
  heapGrowth: number;
  /** The same, less the live conversations' size: what the server's machinery itself holds. */
  baseGrowth: number;
  elapsedMs: number;
}

const defaults: SoakOptions = {
  durationMs: 60_000,
  drafts: 50,
  dropEveryMs: 2_000,
  sampleEveryMs: 5_000,
  stepsPerTurn: 8,
  pauseMs: 25,
};

function turnSteps(options: SoakOptions): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let index = 0; index < options.stepsPerTurn; index += 1) {
    steps.push({
      type: 'text',
      text: `Chunk ${index} of a streamed answer, word by word.`,
      chunks: ['Chunk ', `${index} `, 'of a ', 'streamed ', 'answer, ', 'word by word.'],
    });
    steps.push({ type: 'wait', until: new Promise((resolve) => setTimeout(resolve, options.pauseMs)) });
  }
  return steps;
}

function memory(): { rssMb: number; heapMb: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  return { rssMb: usage.rss / 1048576, heapMb: usage.heapUsed / 1048576 };
}

export async function runSoak(partial: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const options: SoakOptions = { ...defaults, ...partial };
  const log = options.log ?? (() => {});
  const root = await mkdtemp(join(tmpdir(), 'parley-soak-'));
  const backend = createScriptedBackend({ defaultTurn: () => turnSteps(options) });
  const server = await startServer({
    projectRoot: root,
    dataDir: join(root, '.parley'),
    backendFor: () => backend,
    rateLimit: false,
    summarize: false,
    log: () => {},
  });
  const project = (await server.drafts.listProjects()).find((entry) => entry.current)!.name;
  const sockets = new Map<number, WebSocket>();
  const clients: Array<{ client: ProtocolClient; sessionId: string; seqs: number[]; doubled: number; turns: number }> =
    [];
  let stopping = false;
  const started = performance.now();
  const samples: SoakReport['samples'] = [];
  let drops = 0;
  try {
    for (let index = 0; index < options.drafts; index += 1) {
      const client = new ProtocolClient({
        transport: webSocketTransport({
          url: server.wsUrl,
          token: server.token,
          channel: `soak-${index}`,
          createSocket: (url) => {
            const socket = new WebSocket(url);
            sockets.set(index, socket);
            return socket as unknown as WebSocketLike;
          },
        }),
        reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
        requestTimeoutMs: 60_000,
        onError: (error) => log(`client ${index}: ${String(error)}`),
      });
      await client.connect();
      await client.request('create_task', { project, title: `Soak ${index}`, slug: `soak-${index}` });
      const { sessionId } = await client.request('draft', { role: 'dev', project, task: `soak-${index}` });
      // Only the seqs are kept, so the harness's own memory does not hide the server's.
      const entry = { client, sessionId, seqs: [] as number[], doubled: 0, turns: 0 };
      client.on('channel_message', ({ event }) => {
        const last = entry.seqs.at(-1);
        if (last !== undefined && event.seq <= last) entry.doubled += 1;
        else entry.seqs.push(event.seq);
      });
      clients.push(entry);
    }
    const eventCount = () => clients.reduce((sum, entry) => sum + entry.seqs.length, 0);
    const turnCount = () => clients.reduce((sum, entry) => sum + entry.turns, 0);

    const loops = clients.map(async (entry) => {
      while (!stopping) {
        const before = await turnsOf(entry.client);
        const finished = new Promise<void>((resolve) => {
          const off = entry.client.on('draft_status', () => {
            off();
            resolve();
          });
        });
        try {
          await entry.client.request('submit_prompt', { content: `turn ${entry.turns}` });
        } catch (error) {
          // A dropped link can fail the call in flight; the turn may or may not have started.
          log(`submit failed: ${String(error)}`);
        }
        // draft_status is not replayed after a reconnect (stream events are): a missed one is
        // made up for by asking for the status, as a client does after it reconnects.
        const seen = { done: false };
        await Promise.race([finished, turnEnded(entry.client, before, seen)]);
        seen.done = true;
        entry.turns += 1;
      }
    });

    const dropper =
      options.dropEveryMs > 0
        ? setInterval(() => {
            const index = Math.floor(Math.random() * clients.length);
            sockets.get(index)?.terminate();
            drops += 1;
          }, options.dropEveryMs)
        : undefined;
    // The conversations themselves grow with every turn (the SessionManager keeps each live one in
    // memory); their size is reported beside the heap so growth can be told apart from a leak.
    const historyMb = async () => {
      let bytes = 0;
      for (const entry of clients)
        bytes += JSON.stringify(await server.manager.loadConversation(entry.sessionId)).length;
      return bytes / 1048576;
    };
    const sample = async () => {
      // The scripted back end records every request (with its built system prompt) for tests; the soak needs none of them.
      backend.calls.splice(0);
      const history = await historyMb();
      const atMs = performance.now() - started;
      samples.push({ atMs, ...memory(), turns: turnCount(), events: eventCount(), historyMb: history });
      const last = samples.at(-1)!;
      log(
        `${(atMs / 1000).toFixed(1)} s: rss ${last.rssMb.toFixed(0)} MB, heap ${last.heapMb.toFixed(1)} MB, history ${history.toFixed(1)} MB, ${last.turns} turns, ${last.events} events`,
      );
    };
    await sample();
    const sampler = setInterval(() => void sample(), options.sampleEveryMs);
    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    stopping = true;
    clearInterval(dropper);
    clearInterval(sampler);
    await Promise.all(loops);
    // Let every client finish resuming, then compare what it saw with its session's log.
    await Promise.all(clients.map((entry) => waitConnected(entry.client)));
    await sample();
    let lost = 0;
    for (const entry of clients) {
      const logEvents = await readLog(entry.client, entry.sessionId);
      const seen = new Set(entry.seqs);
      for (const event of logEvents) {
        if (seen.has(event.seq)) continue;
        lost += 1;
        log(
          `lost: session ${entry.sessionId} seq ${event.seq} ${event.type}; client saw up to ${entry.seqs.at(-1) ?? -1}, lastSeq ${entry.client.lastSeq(entry.sessionId)}`,
        );
      }
      if (entry.seqs.length > logEvents.length) entry.doubled += entry.seqs.length - logEvents.length;
    }
    const warm = samples.find((entry) => entry.atMs >= options.durationMs / 4) ?? samples[0]!;
    const end = samples.at(-1)!;
    return {
      options,
      turns: turnCount(),
      events: eventCount(),
      lost,
      doubled: clients.reduce((sum, entry) => sum + entry.doubled, 0),
      drops,
      samples,
      heapGrowth: end.heapMb / warm.heapMb,
      baseGrowth: (end.heapMb - end.historyMb) / (warm.heapMb - warm.historyMb),
      elapsedMs: performance.now() - started,
    };
  } finally {
    stopping = true;
    for (const entry of clients) entry.client.close();
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

async function turnsOf(client: ProtocolClient): Promise<number> {
  for (;;) {
    try {
      return (await client.request('get_draft_status')).session?.turnCount ?? 0;
    } catch {
      await waitConnected(client);
    }
  }
}

/** Resolves once the draft's turn count passed `before` and no turn runs (polled). */
async function turnEnded(client: ProtocolClient, before: number, seen: { done: boolean }): Promise<void> {
  while (!seen.done) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (seen.done) return;
    try {
      const session = (await client.request('get_draft_status')).session;
      if (session && !session.turnRunning && session.turnCount > before) return;
      if (session && !session.turnRunning && session.turnCount === before) {
        // The submit never reached the server: nothing to wait for.
        return;
      }
    } catch {
      await waitConnected(client);
    }
  }
}

async function waitConnected(client: ProtocolClient): Promise<void> {
  if (client.state === 'connected') return;
  await new Promise<void>((resolve) => {
    const off = client.onStateChange((state) => {
      if (state === 'connected') {
        off();
        resolve();
      }
    });
  });
}

async function readLog(client: ProtocolClient, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  let afterSeq = -1;
  for (;;) {
    const page = await client.request('get_events', { sessionId, afterSeq });
    events.push(...page.events);
    if (!page.hasMore || page.events.length === 0) return events;
    afterSeq = page.events.at(-1)!.seq;
  }
}

export function formatSoak(report: SoakReport): string {
  const rows = report.samples.map((sample) => [
    `${(sample.atMs / 1000).toFixed(1)} s`,
    sample.rssMb.toFixed(0),
    sample.heapMb.toFixed(1),
    sample.historyMb.toFixed(1),
    (sample.heapMb - sample.historyMb).toFixed(1),
    String(sample.turns),
    String(sample.events),
  ]);
  return [
    `## Soak: ${report.options.drafts} drafts streaming for ${(report.options.durationMs / 1000).toFixed(0)} s (scripted back end, one WebSocket client each, a connection dropped every ${report.options.dropEveryMs} ms)`,
    '',
    `turns ${report.turns}, events delivered ${report.events} (${(report.events / (report.elapsedMs / 1000)).toFixed(0)}/s), connections dropped and resumed ${report.drops}`,
    '',
    `**lost events: ${report.lost}** · **doubled events: ${report.doubled}** (both must be 0) · heap end / after warm-up: ${report.heapGrowth.toFixed(2)}× · heap without the live conversations, end / after warm-up: ${report.baseGrowth.toFixed(2)}×`,
    '',
    table(
      [
        'time',
        'RSS MB',
        'heap MB (after gc)',
        'live conversations MB (JSON)',
        'heap − conversations',
        'turns',
        'events',
      ],
      rows,
    ),
    '',
  ].join('\n');
}

function argument(name: string): number | undefined {
  const index = process.argv.indexOf(`--${name}`);
  if (index === -1) return undefined;
  const value = Number(process.argv[index + 1]);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`--${name} needs a number, not "${process.argv[index + 1]}".`);
  return value;
}

function text(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv.includes('--huge-session')) {
  const { report, passed } = await runHugeSession({
    events: argument('events') ?? hugeSessionDefaults.events,
    log: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
  });
  process.stdout.write(report);
  if (!passed) process.exitCode = 1;
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv.includes('--hostile')) {
  process.stdout.write(
    await runHostile({
      idle: argument('idle') ?? hostileDefaults.idle,
      hogs: argument('hogs') ?? hostileDefaults.hogs,
      megabytes: argument('megabytes') ?? hostileDefaults.megabytes,
      log: (line) => process.stderr.write(`${line}\n`),
    }),
  );
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv.includes('--outage')) {
  const report = await runOutageSoak({
    ...outageDefaults,
    drafts: argument('drafts') ?? outageDefaults.drafts,
    phaseMs: (argument('phase') ?? outageDefaults.phaseMs / 1000) * 1000,
    downMs: (argument('down') ?? outageDefaults.downMs / 1000) * 1000,
    delayMs: argument('delay') ?? outageDefaults.delayMs,
    log: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
  });
  process.stdout.write(formatOutageSoak(report));
  if (!report.passed) process.exitCode = 1;
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv.includes('--cycle')) {
  const seconds = (name: string, fallbackMs: number) => (argument(name) ?? fallbackMs / 1000) * 1000;
  const snapshotDir = text('snapshots');
  const report = await runCycleSoak({
    durationMs: seconds('duration', cycleDefaults.durationMs),
    channels: argument('channels') ?? cycleDefaults.channels,
    turnsPerDraft: argument('turns') ?? cycleDefaults.turnsPerDraft,
    idleMs: seconds('idle', cycleDefaults.idleMs),
    maxLive: argument('max-live') ?? cycleDefaults.maxLive,
    sampleEveryMs: seconds('sample-every', cycleDefaults.sampleEveryMs),
    postgres: process.argv.includes('--postgres'),
    ...(snapshotDir ? { snapshotDir } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(formatCycleSoak(report));
  if (!report.passed) process.exitCode = 1;
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const durationS = argument('duration');
  const drafts = argument('drafts');
  const dropEvery = argument('drop-every');
  const report = await runSoak({
    ...(durationS !== undefined ? { durationMs: durationS * 1000 } : {}),
    ...(drafts !== undefined ? { drafts } : {}),
    ...(dropEvery !== undefined ? { dropEveryMs: dropEvery } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(formatSoak(report));
  if (report.lost > 0 || report.doubled > 0) process.exitCode = 1;
}
