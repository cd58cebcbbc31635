/**
 * Server benchmarks:
 * - `text_delta` fan-out from one session to 1, 10 and 100 WebSocket clients, saturated (events/s)
 *   and paced at 1,000 events/s (latency), beside a bare `ws` broadcast of the same frames. Parley
 *   is measured twice: its fan-out stage alone (a session event through the server's notification
 *   path: serialized once, written to every subscribed socket) and end to end (appended durably to
 *   the session's log first). Clients live in a second process and parse every message.
 * - The time from spawning `parley serve` to its ready line, beside a bare Node HTTP server.
 * Targets: fan-out ≥ 0.8× the bare broadcast; p99 < 5 ms at 1,000 events/s to 100 clients; ready < 300 ms.
 * A second target: at 1,000 events/s to 100 clients, fan-out p99 ≤ 1.2× the bare p99 and end to end p99 ≤ bare p99 +
 * the log's fsync p99, all in the same run. The log's `fdatasync` calls are timed while the end-to-end row runs.
 * Paced latency runs from when an event was due, so a sender that falls behind cannot look fast by sending less.
 * A second floor, the bare broadcast writing each socket once per turn (as Parley's hub does), shows what is
 * Parley's own cost and what is the batching.
 */
import { fork, spawn } from 'node:child_process';
import fs, { readdirSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { WebSocketServer, type WebSocket } from 'ws';
import type { StreamEvent, UnsequencedEvent } from '../src/conversation/index.js';
import { startServer, type RunningServer } from '../src/server/index.js';
import { WriteBatch } from '../src/server/write-batch.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const seconds = Number(process.env['PARLEY_BENCH_SECONDS'] ?? 3);
const BATCH = 32;
/** For a quick look at one row: `PARLEY_BENCH_CLIENTS=100 PARLEY_BENCH_MODES=paced PARLEY_BENCH_READY=0`; `PARLEY_BENCH_FANOUT=0` skips the fan-out. */
const CLIENT_COUNTS = (process.env['PARLEY_BENCH_CLIENTS'] ?? '1,10,100').split(',').map(Number);
const MODE_FILTER = process.env['PARLEY_BENCH_MODES'] ?? '';
const WINDOW = 2_048;
/** Tail latency is noisy on a shared machine: `PARLEY_BENCH_REPEATS=5` measures each row 5 times, the variants interleaved in rotating order. */
const REPEATS = Math.max(1, Number(process.env['PARLEY_BENCH_REPEATS'] ?? 1));

type Variant =
  'bare ws broadcast' | 'bare ws, one write per socket per turn' | 'Parley fan-out' | 'Parley end to end (durable log)';
type Mode = 'saturated' | 'paced 1,000/s';

interface Outcome {
  sent: number;
  delivered: number;
  elapsedS: number;
  /** CPU of the sending (server) process per delivered message, µs. */
  cpuPerMessageUs: number;
  p50: number;
  p99: number;
  /** The durable log's `fdatasync` calls during the row (end to end only), ms. */
  fsyncs: number[];
}

interface Target {
  url: string;
  subscribe?: string;
  /** Sends one event per stamp, its delta the stamp: when it was due on the sender's monotonic clock (ns). */
  send(stamps: readonly bigint[]): void | Promise<void>;
}

/**
 * Times every `fdatasyncSync` while `recording`: the log calls it through its ESM import, which
 * `syncBuiltinESMExports` points at the wrapper. Restored by the returned function.
 */
function timeFsyncs(): { recording: number[] | undefined; restore(): void } {
  const original = fs.fdatasyncSync;
  const timer = {
    recording: undefined as number[] | undefined,
    restore() {
      fs.fdatasyncSync = original;
      syncBuiltinESMExports();
    },
  };
  fs.fdatasyncSync = (fd) => {
    const started = performance.now();
    try {
      original(fd);
    } finally {
      timer.recording?.push(performance.now() - started);
    }
  };
  syncBuiltinESMExports();
  return timer;
}

/** The share of the row the event loop spent inside the log's (synchronous) `fdatasync`. */
function blockedPercent(outcome: Outcome): string {
  const blockedMs = outcome.fsyncs.reduce((sum, ms) => sum + ms, 0);
  return `${((100 * blockedMs) / (outcome.elapsedS * 1000)).toFixed(0)} %`;
}

function signedMs(ms: number): string {
  return `${ms < 0 ? '−' : '+'}${formatMs(Math.abs(ms))}`;
}

function frameFor(sessionId: string, seq: number, stamp: bigint): string {
  const event: StreamEvent = {
    type: 'text_delta',
    sessionId,
    conversationId: 'main',
    seq,
    at: Date.now(),
    blockId: 'bench-block',
    delta: String(stamp),
  };
  return JSON.stringify({ jsonrpc: '2.0', method: 'session_event', params: { sessionId, event } });
}

async function measure(target: Target, connections: number, mode: Mode, fsyncs: number[] = []): Promise<Outcome> {
  const child = fork(
    join(here, 'fanout-clients.ts'),
    [JSON.stringify({ url: target.url, connections, ...(target.subscribe ? { subscribe: target.subscribe } : {}) })],
    {
      execArgv: ['--import', 'tsx'],
      cwd: repo,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  let slowest = 0;
  let onProgress: (() => void) | undefined;
  const result = new Promise<{ total: number; p50: number; p99: number }>((resolve) => {
    child.on('message', (message: { type: string; slowest?: number; total?: number; p50?: number; p99?: number }) => {
      if (message.type === 'progress') {
        slowest = message.slowest!;
        onProgress?.();
      } else if (message.type === 'result') resolve({ total: message.total!, p50: message.p50!, p99: message.p99! });
    });
  });
  await new Promise<void>((resolve) =>
    child.on('message', (message: { type: string }) => message.type === 'ready' && resolve()),
  );
  let sent = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const startedNs = process.hrtime.bigint();
  const deadline = started + seconds * 1000;
  if (mode === 'saturated') {
    while (performance.now() < deadline) {
      if (sent - slowest > WINDOW) {
        await new Promise<void>((resolve) => (onProgress = resolve));
        continue;
      }
      const now = process.hrtime.bigint();
      await target.send(Array.from({ length: BATCH }, () => now));
      sent += BATCH;
      await new Promise((resolve) => setImmediate(resolve));
    }
  } else {
    while (performance.now() < deadline) {
      const due = Math.floor((performance.now() - started) * 1); // 1 per ms
      if (due > sent) {
        // Stamped with when each event was due, not when the loop got to it: a sender that falls
        // behind is charged for the wait (no coordinated omission), so every variant is measured at 1,000/s.
        const stamps = Array.from(
          { length: due - sent },
          (_, index) => startedNs + BigInt(sent + index + 1) * 1_000_000n,
        );
        sent = due;
        void target.send(stamps);
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }
  const drainBy = performance.now() + 10_000;
  while (slowest < sent && performance.now() < drainBy) await new Promise<void>((resolve) => (onProgress = resolve));
  const elapsedS = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  child.send({ type: 'stop' });
  const { total, p50, p99 } = await result;
  return {
    sent,
    delivered: total,
    elapsedS,
    p50,
    p99,
    fsyncs,
    cpuPerMessageUs: (cpu.user + cpu.system) / Math.max(1, total),
  };
}

async function fanOut(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-bench-server-'));
  const fsyncTimer = timeFsyncs();
  const server: RunningServer = await startServer({
    projectRoot: root,
    dataDir: join(root, '.parley'),
    rateLimit: false,
    summarize: false,
    log: () => {},
  });
  const session = await server.manager.createSession({
    scope: { kind: 'workflow', harness: 'bench', agent: 'fanout' },
    agentType: 'dev',
  });
  const sessionId = session.sessionId;
  // The fan-out stage alone: a session event enters the server's notification path as the log would emit it.
  const emit = (
    server.manager as unknown as {
      emit(name: 'session:event', payload: { sessionId: string; event: StreamEvent }): void;
    }
  ).emit.bind(server.manager);
  let fanSeq = 0;
  const bare = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise<void>((resolve) => bare.once('listening', () => resolve()));
  const barePort = (bare.address() as { port: number }).port;
  // The TCP socket under each bare WebSocket, for the floor that batches like Parley does.
  const bareStreams = new Map<WebSocket, Duplex>();
  bare.on('connection', (socket, request) => {
    bareStreams.set(socket, request.socket);
    socket.once('close', () => bareStreams.delete(socket));
  });
  const bareBatch = new WriteBatch();
  let bareSeq = 0;
  const parleyUrl = `${server.wsUrl}?token=${server.token}`;
  const targets: Record<Variant, Target> = {
    'bare ws broadcast': {
      url: `ws://127.0.0.1:${barePort}`,
      send(stamps) {
        for (const stamp of stamps) {
          const frame = frameFor(sessionId, bareSeq++, stamp);
          for (const socket of bare.clients) socket.send(frame);
        }
      },
    },
    'bare ws, one write per socket per turn': {
      url: `ws://127.0.0.1:${barePort}`,
      send(stamps) {
        for (const stamp of stamps) {
          const frame = frameFor(sessionId, bareSeq++, stamp);
          for (const [socket, stream] of bareStreams) {
            bareBatch.hold(stream);
            socket.send(frame);
          }
        }
      },
    },
    'Parley fan-out': {
      url: parleyUrl,
      subscribe: sessionId,
      send(stamps) {
        for (const stamp of stamps) {
          const event: StreamEvent = {
            type: 'text_delta',
            sessionId,
            conversationId: 'main',
            seq: fanSeq++,
            at: Date.now(),
            blockId: 'bench-block',
            delta: String(stamp),
          };
          emit('session:event', { sessionId, event });
        }
      },
    },
    'Parley end to end (durable log)': {
      url: parleyUrl,
      subscribe: sessionId,
      async send(stamps) {
        const unsequenced: UnsequencedEvent[] = stamps.map((stamp) => ({
          type: 'text_delta',
          conversationId: 'main',
          blockId: 'bench-block',
          delta: String(stamp),
        }));
        await server.manager.appendEvents(sessionId, unsequenced);
      },
    },
  };
  const rows: string[][] = [];
  const summary: string[] = [];
  const variants = Object.keys(targets) as Variant[];
  try {
    for (const connections of CLIENT_COUNTS) {
      for (const mode of (['saturated', 'paced 1,000/s'] as Mode[]).filter((name) => name.includes(MODE_FILTER))) {
        const runs = new Map<Variant, Outcome[]>(variants.map((variant) => [variant, []]));
        for (let repeat = 0; repeat < REPEATS; repeat += 1) {
          // Each repeat starts with the next variant, so none always runs first (or right after the heaviest).
          for (const variant of [
            ...variants.slice(repeat % variants.length),
            ...variants.slice(0, repeat % variants.length),
          ]) {
            const fsyncs: number[] = [];
            fsyncTimer.recording = variant === 'Parley end to end (durable log)' ? fsyncs : undefined;
            runs.get(variant)!.push(await measure(targets[variant], connections, mode, fsyncs));
            fsyncTimer.recording = undefined;
          }
        }
        const bareRuns = runs.get('bare ws broadcast')!;
        for (const [variant, outcomes] of runs) {
          outcomes.forEach((outcome, repeat) => {
            const baseline = bareRuns[repeat]!;
            const eventsPerSecond = outcome.sent / outcome.elapsedS;
            rows.push([
              String(connections),
              mode,
              REPEATS > 1 ? `${variant} (run ${repeat + 1})` : variant,
              eventsPerSecond.toFixed(0),
              (outcome.delivered / outcome.elapsedS).toFixed(0),
              outcome.delivered === outcome.sent * connections
                ? 'yes'
                : `no (${outcome.delivered}/${outcome.sent * connections})`,
              formatMs(outcome.p50),
              formatMs(outcome.p99),
              outcome.cpuPerMessageUs.toFixed(1),
              variant === 'bare ws broadcast' ? '1.00×' : ratio(eventsPerSecond, baseline.sent / baseline.elapsedS),
              variant === 'bare ws broadcast' ? '1.00×' : ratio(outcome.p99, baseline.p99),
              outcome.fsyncs.length > 0
                ? `${formatMs(percentile(outcome.fsyncs, 99))} (${outcome.fsyncs.length}; ${blockedPercent(outcome)} of the row)`
                : '',
            ]);
          });
        }
        if (mode === 'saturated') {
          for (const [repeat, fan] of runs.get('Parley fan-out')!.entries()) {
            const baseline = bareRuns[repeat]!;
            summary.push(
              `- ${connections} client(s): Parley fan-out throughput ${ratio(fan.sent / fan.elapsedS, baseline.sent / baseline.elapsedS)} of the bare broadcast (target ≥ 0.80×)`,
            );
          }
        } else if (connections === 100) {
          runs.get('Parley fan-out')!.forEach((fan, repeat) => {
            const baseline = bareRuns[repeat]!;
            const endToEnd = runs.get('Parley end to end (durable log)')![repeat]!;
            const fsyncP99 = percentile(endToEnd.fsyncs, 99);
            const allowed = baseline.p99 + fsyncP99;
            const batchedFloor = runs.get('bare ws, one write per socket per turn')![repeat]!;
            summary.push(
              `- run ${repeat + 1}, p99 at 1,000 events/s to 100 clients: bare ${formatMs(baseline.p99)}; fan-out ${formatMs(fan.p99)} = ${ratio(fan.p99, baseline.p99)} bare (target ≤ 1.20×: ${fan.p99 <= 1.2 * baseline.p99 ? 'met' : 'missed'}), ${ratio(fan.p99, batchedFloor.p99)} the batched bare floor (${formatMs(batchedFloor.p99)}); ` +
                `end to end ${formatMs(endToEnd.p99)} vs bare + the log's fsync p99 (${formatMs(fsyncP99)}) = ${formatMs(allowed)} (${endToEnd.p99 <= allowed ? 'met' : 'missed'})`,
            );
          });
          if (REPEATS > 1) {
            const spread = (values: number[]) =>
              `median ${formatMs(percentile(values, 50))} (${formatMs(Math.min(...values))}–${formatMs(Math.max(...values))})`;
            const fanRatios = runs.get('Parley fan-out')!.map((fan, repeat) => fan.p99 / bareRuns[repeat]!.p99);
            const endToEndMargins = runs
              .get('Parley end to end (durable log)')!
              .map((outcome, repeat) => outcome.p99 - bareRuns[repeat]!.p99 - percentile(outcome.fsyncs, 99));
            summary.push(
              `- over ${REPEATS} runs: p99 bare ${spread(bareRuns.map((outcome) => outcome.p99))}, fan-out ${spread(runs.get('Parley fan-out')!.map((outcome) => outcome.p99))}, end to end ${spread(runs.get('Parley end to end (durable log)')!.map((outcome) => outcome.p99))}; ` +
                `fan-out/bare ratio median ${percentile(fanRatios, 50).toFixed(2)}× (${Math.min(...fanRatios).toFixed(2)}–${Math.max(...fanRatios).toFixed(2)}), met in ${fanRatios.filter((value) => value <= 1.2).length}/${REPEATS}; ` +
                `end to end − (bare + fsync p99) median ${signedMs(percentile(endToEndMargins, 50))}, met in ${endToEndMargins.filter((value) => value <= 0).length}/${REPEATS}`,
            );
          }
        }
      }
    }
  } finally {
    fsyncTimer.restore();
    await new Promise<void>((resolve) => bare.close(() => resolve()));
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
  return [
    `### text_delta fan-out (${seconds} s per row; clients in a second process, each parses every message; ${BATCH} events per tick when saturated, at most ${WINDOW} in flight)`,
    '',
    table(
      [
        'clients',
        'mode',
        'sender',
        'events/s',
        'delivered msgs/s',
        'all delivered',
        'latency p50',
        'latency p99',
        'sender CPU µs/msg',
        'events/s vs bare',
        'p99 vs bare',
        'log fsync p99 (calls; event loop blocked in it)',
      ],
      rows,
    ),
    '',
    ...summary,
    '',
  ].join('\n');
}

/** Transpiles src/ (as `npm run build` would lay it out) so the ready time is not tsx's compile time. */
async function builtCli(): Promise<string> {
  const outdir = join(repo, 'node_modules', '.cache', 'parley-bench-dist');
  const walk = (folder: string): string[] =>
    readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(join(folder, entry.name))
        : /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')
          ? [join(folder, entry.name)]
          : [],
    );
  const entryPoints = walk(join(repo, 'src'));
  await build({
    entryPoints,
    outdir,
    outbase: join(repo, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    bundle: false,
    logLevel: 'error',
    jsx: 'automatic',
  });
  return join(outdir, 'cli', 'main.js');
}

async function timeToReady(command: string[], cwd: string, readyText: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, command, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PARLEY_DATA_DIR: join(cwd, '.parley') },
  });
  let output = '';
  const ready = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyText)) resolve(performance.now() - started);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`exited ${code} before ready: ${output}`)));
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return ready;
}

async function readiness(): Promise<string> {
  const main = await builtCli();
  const serverModule = pathToFileURL(join(dirname(dirname(main)), 'server', 'index.js')).href;
  const cwd = await mkdtemp(join(tmpdir(), 'parley-bench-ready-'));
  const rows: Record<string, number[]> = { bare: [], server: [], serve: [], inProcess: [] };
  const bare = "require('node:http').createServer().listen(0, '127.0.0.1', () => console.log('ready'))";
  const serverOnly = `const { startServer } = await import(${JSON.stringify(serverModule)}); await startServer({ projectRoot: process.cwd(), dataDir: process.cwd() + '/.parley-alone', port: 0, log() {} }); console.log('ready');`;
  try {
    for (let rep = 0; rep < 7; rep += 1) {
      rows['bare']!.push(await timeToReady(['-e', bare], cwd, 'ready'));
      rows['server']!.push(await timeToReady(['--input-type=module', '-e', serverOnly], cwd, 'ready'));
      rows['serve']!.push(await timeToReady([main, 'serve', '--port', '0'], cwd, 'Parley server ready:'));
      const started = performance.now();
      const server = await startServer({
        projectRoot: cwd,
        dataDir: join(cwd, '.parley-in-process'),
        port: 0,
        log: () => {},
      });
      rows['inProcess']!.push(performance.now() - started);
      await server.close();
    }
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
  const median = (values: number[]) => percentile(values, 50);
  const line = (label: string, values: number[]) => [
    label,
    formatMs(median(values)),
    formatMs(Math.min(...values)),
    formatMs(Math.max(...values)),
    ratio(median(values), median(rows['bare']!)),
  ];
  return [
    '### Start to ready (spawned process to its ready line; 7 runs each, interleaved; the first on an empty data folder)',
    '',
    table(
      ['what', 'median', 'min', 'max', 'vs bare node'],
      [
        line('node: a bare HTTP server listening (floor)', rows['bare']!),
        line('node: import src/server, startServer() (no CLI)', rows['server']!),
        line('`parley serve` (transpiled src, as in dist/)', rows['serve']!),
        line('startServer() in this process, modules loaded', rows['inProcess']!),
      ],
    ),
    '',
    `Target: ready in under 300 ms; \`parley serve\` median ${formatMs(median(rows['serve']!))}. The gap between the rows is module loading (the CLI imports every command's modules and the back ends' SDKs) and the server's own start (store, draft recovery, listen).`,
    '',
  ].join('\n');
}

export async function run(): Promise<string> {
  const cpus = (await import('node:os')).loadavg()[0]!.toFixed(1);
  const ready = process.env['PARLEY_BENCH_READY'] === '0' ? '' : await readiness();
  const fan = process.env['PARLEY_BENCH_FANOUT'] === '0' ? '' : await fanOut();
  return [`## Server (load average at start ${cpus} on this machine)`, '', fan, ready].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
