/**
 * Durable step-by-step state, Parley beside the tools people would use instead, on the same
 * machine, the same data and the same durability, in one run: 1 and 50 sessions appending steps
 * of ~1 KB, each step acknowledged only once durable (bench/peers/workload.mjs is the one workload
 * every system runs).
 *
 * - PostgreSQL (one server, fsync on, synchronous_commit on): Parley's PostgreSQL store, LangGraph's
 *   `PostgresSaver` (putWrites + put per step), Mastra's `PostgresStore` (saveMessages to a thread),
 *   and the floor: one bare statement per commit that inserts the batch and gives each session its
 *   next seqs. A reference row runs Parley's store with the search index's trigger off, to show
 *   what keeping the full-text index in the appending transaction costs (the peers keep none).
 * - Local files: Parley's file store, LangGraph's `SqliteSaver` (better-sqlite3) and Mastra's
 *   `LibSQLStore` on a local file, both set to synchronous=FULL (each commit flushed, as Parley's
 *   append is); the same two as they come (WAL with synchronous=NORMAL: a commit is not flushed, so
 *   the last ones can be lost in a power cut) are printed for reference and are not the target.
 *
 * Every run is a fresh child process (Parley's driver is bundled with esbuild and run by plain
 * node, as the peers' are), on a fresh schema or folder; rounds are interleaved and their steps
 * pooled. `PARLEY_BENCH_PEERS_ROUNDS` sets the rounds (default 3). Beside each row's rate, the CPU
 * time per step of the client (the driver's process) and, on PostgreSQL, of the server's processes,
 * both in the timed part only: on two cores they share, that is where a row's time goes.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { peersDir, registryNode22, root, runDriver, type DriverResult } from './peers-install.js';
import { formatMs, percentile, ratio, table } from './stats.js';

type Store = 'postgres' | 'files';
type Role = 'parley' | 'peer' | 'floor' | 'reference';

interface System {
  name: string;
  label: string;
  store: Store;
  role: Role;
  driver: 'parley' | 'langgraph' | 'mastra';
}

const SYSTEMS: readonly System[] = [
  { name: 'parley-postgres', label: 'Parley, PostgreSQL store', store: 'postgres', role: 'parley', driver: 'parley' },
  {
    name: 'langgraph-postgres',
    label: 'LangGraph `PostgresSaver` (putWrites + put)',
    store: 'postgres',
    role: 'peer',
    driver: 'langgraph',
  },
  {
    name: 'mastra-pg',
    label: 'Mastra `PostgresStore` (saveMessages)',
    store: 'postgres',
    role: 'peer',
    driver: 'mastra',
  },
  {
    name: 'parley-postgres-unindexed',
    label: 'Parley, PostgreSQL store with its search index off (where the time goes)',
    store: 'postgres',
    role: 'reference',
    driver: 'parley',
  },
  {
    name: 'floor-postgres',
    label: 'floor: one statement per commit, inserts + numbers',
    store: 'postgres',
    role: 'floor',
    driver: 'parley',
  },
  { name: 'parley-file', label: 'Parley, file store', store: 'files', role: 'parley', driver: 'parley' },
  {
    name: 'langgraph-sqlite',
    label: 'LangGraph `SqliteSaver` (putWrites + put), synchronous=FULL',
    store: 'files',
    role: 'peer',
    driver: 'langgraph',
  },
  {
    name: 'mastra-libsql',
    label: 'Mastra `LibSQLStore` (saveMessages), synchronous=FULL',
    store: 'files',
    role: 'peer',
    driver: 'mastra',
  },
  {
    name: 'langgraph-sqlite-normal',
    label: 'LangGraph `SqliteSaver` as it comes (NORMAL: not flushed per commit)',
    store: 'files',
    role: 'reference',
    driver: 'langgraph',
  },
  {
    name: 'mastra-libsql-normal',
    label: 'Mastra `LibSQLStore` as it comes (NORMAL: not flushed per commit)',
    store: 'files',
    role: 'reference',
    driver: 'mastra',
  },
];

/**
 * Sessions at once, and steps each. Runs of a few seconds: at 600 steps a fast system's run was
 * over in 40 ms, before anything that runs beside the appends (Parley's search indexer starts
 * 100 ms after a commit) had begun, and one scheduling hiccup moved a row by 20%.
 */
const SIZES = [
  { sessions: 1, steps: 1_000 },
  { sessions: 50, steps: 100 },
] as const;

interface Runner {
  node: string;
  script: string;
  /** Why the system cannot run here, when it cannot. */
  unavailable?: string;
}

interface Measured {
  latencies: number[];
  wallMs: number;
  steps: number;
  clientCpuMs: number;
  /** Undefined once a run could not read the server's CPU time. */
  serverCpuMs: number | undefined;
  node: string;
  notes: Set<string>;
  failure?: string;
}

export async function runDurable(install: { failure?: string }): Promise<string> {
  const rounds = Number(process.env['PARLEY_BENCH_PEERS_ROUNDS'] ?? 3);
  const work = mkdtempSync(join(tmpdir(), 'parley-peers-'));
  let server: TestPostgres | undefined;
  const lines: string[] = [];
  try {
    const parleyScript = await bundleParleyDriver();
    const postgresMissing =
      process.env.PARLEY_TEST_DATABASE_URL === undefined && findPostgresBin() === undefined
        ? 'PostgreSQL is not installed (`apt-get install -y postgresql`)'
        : undefined;
    if (postgresMissing === undefined) server = await startTestPostgres({ fsync: true });
    const settings =
      server === undefined
        ? []
        : await server.admin<{ name: string; setting: string }>(
            "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'server_version') ORDER BY name",
          );
    const optionsFor = (
      system: System,
      size: { sessions: number; steps: number },
      tag: string,
    ): Record<string, unknown> => {
      if (system.store === 'postgres') return { ...size, url: server!.url(), schema: server!.freshSchema(tag) };
      const dir = join(work, tag);
      mkdirSync(dir, { recursive: true });
      return { ...size, dir };
    };

    // Which Node runs each driver, and whether it runs at all: one tiny run of each first.
    const runners = new Map<string, Runner>();
    for (const system of SYSTEMS) {
      const script = system.driver === 'parley' ? parleyScript : join(peersDir, `${system.driver}-driver.mjs`);
      if (system.store === 'postgres' && postgresMissing !== undefined) {
        runners.set(system.name, { node: process.execPath, script, unavailable: postgresMissing });
        continue;
      }
      if (system.driver !== 'parley' && install.failure !== undefined) {
        runners.set(system.name, { node: process.execPath, script, unavailable: install.failure });
        continue;
      }
      const probe = { sessions: 1, steps: 1 };
      const candidates = [process.execPath, ...(system.driver === 'mastra' ? [registryNode22()] : [])];
      let runner: Runner | undefined;
      const failures: string[] = [];
      for (const node of candidates) {
        if (node === undefined) continue;
        try {
          await runDriver(
            node,
            script,
            system.name,
            optionsFor(system, probe, `probe_${system.name.replace(/-/g, '_')}`),
          );
          runner = { node, script };
          break;
        } catch (error) {
          failures.push(`${node === process.execPath ? process.version : 'node 22'}: ${(error as Error).message}`);
        }
      }
      runners.set(system.name, runner ?? { node: process.execPath, script, unavailable: failures.join('; ') });
    }

    const measured = new Map<string, Measured>();
    const key = (system: System, sessions: number) => `${system.name}/${sessions}`;
    for (let round = 0; round < rounds; round += 1) {
      for (const size of SIZES) {
        // The order turns each round, so no system always runs right after the same other one.
        const order = SYSTEMS.map((_, index) => SYSTEMS[(index + round) % SYSTEMS.length]!);
        for (const system of order) {
          const runner = runners.get(system.name)!;
          const entry = measured.get(key(system, size.sessions)) ?? {
            latencies: [],
            wallMs: 0,
            steps: 0,
            clientCpuMs: 0,
            serverCpuMs: system.store === 'postgres' ? 0 : undefined,
            node: '',
            notes: new Set<string>(),
          };
          measured.set(key(system, size.sessions), entry);
          if (runner.unavailable !== undefined || entry.failure !== undefined) continue;
          const tag = `${system.name.replace(/-/g, '_')}_${size.sessions}_${round}`;
          try {
            const result: DriverResult = await runDriver(
              runner.node,
              runner.script,
              system.name,
              optionsFor(system, size, tag),
            );
            entry.latencies.push(...result.latencies);
            entry.wallMs += result.wallMs;
            entry.steps += result.latencies.length;
            entry.clientCpuMs += result.clientCpuMs;
            entry.serverCpuMs =
              entry.serverCpuMs === undefined || result.serverCpuMs === undefined
                ? undefined
                : entry.serverCpuMs + result.serverCpuMs;
            entry.node = result.node;
            for (const note of result.notes) entry.notes.add(note);
          } catch (error) {
            entry.failure = (error as Error).message;
          }
          if (system.store === 'files') rmSync(join(work, tag), { recursive: true, force: true });
        }
      }
    }

    const setting = (name: string) => settings.find((row) => row.name === name)?.setting ?? '?';
    lines.push(
      '#### Durable step-by-step state',
      '',
      'Each session appends steps of ~1 KB one after another, each awaited until stored durably; 1 session, then 50 at once. ' +
        `Every run is a fresh process; ${rounds} rounds interleaved, steps pooled. ` +
        (server === undefined
          ? `PostgreSQL rows: ${postgresMissing}.`
          : `PostgreSQL ${setting('server_version')} on 127.0.0.1, fsync=${setting('fsync')}, synchronous_commit=${setting('synchronous_commit')}.`),
      '',
    );
    for (const store of ['postgres', 'files'] as const) {
      lines.push(storeTable(store, runners, measured), '');
    }
    return lines.join('\n');
  } finally {
    await server?.destroy();
    rmSync(work, { recursive: true, force: true });
  }
}

function storeTable(store: Store, runners: Map<string, Runner>, measured: Map<string, Measured>): string {
  const headers = [
    'sessions',
    'system',
    'runtime',
    'steps/s',
    'p50',
    'p99',
    'client CPU/step',
    ...(store === 'postgres' ? ['server CPU/step'] : []),
    'vs Parley (steps/s)',
    'notes',
  ];
  const rows: string[][] = [];
  for (const size of SIZES) {
    const of = (system: System) => measured.get(`${system.name}/${size.sessions}`);
    const rate = (entry: Measured | undefined) =>
      entry === undefined || entry.steps === 0 ? Number.NaN : (entry.steps / entry.wallMs) * 1000;
    const systems = SYSTEMS.filter((system) => system.store === store);
    const parley = systems.find((system) => system.role === 'parley')!;
    const unindexed = systems.find((system) => system.role === 'reference' && system.driver === 'parley');
    const parleyRate = rate(of(parley));
    const peers = systems.filter((system) => system.role === 'peer' && !Number.isNaN(rate(of(system))));
    const fastest = peers.reduce<System | undefined>(
      (best, system) => (best === undefined || rate(of(system)) > rate(of(best)) ? system : best),
      undefined,
    );
    for (const system of systems) {
      const runner = runners.get(system.name)!;
      const entry = of(system);
      const why = runner.unavailable ?? entry?.failure;
      if (why !== undefined || entry === undefined || entry.steps === 0) {
        rows.push([
          String(size.sessions),
          system.label,
          '',
          `not run: ${why ?? 'no steps'}`,
          ...Array(headers.length - 4).fill(''),
        ]);
        continue;
      }
      const systemRate = rate(entry);
      const versus =
        system.role === 'parley'
          ? fastest === undefined
            ? 'no peer ran'
            : `${ratio(parleyRate, rate(of(fastest)))} the fastest peer: ${parleyRate >= rate(of(fastest)) ? 'ahead' : 'BEHIND'}`
          : system.role === 'floor'
            ? `Parley is ${ratio(parleyRate, systemRate)} of it${size.sessions > 1 ? `: ≥ 0.8× ${parleyRate >= 0.8 * systemRate ? 'met' : 'NOT met'}` : ''}` +
              (unindexed === undefined || Number.isNaN(rate(of(unindexed)))
                ? ''
                : ` (${ratio(rate(of(unindexed)), systemRate)} with its search index off)`)
            : `Parley is ${ratio(parleyRate, systemRate)}`;
      rows.push([
        String(size.sessions),
        system.label,
        `node ${entry.node.replace(/^v/, '')}`,
        `${Math.round(systemRate).toLocaleString('en-US')}/s`,
        formatMs(percentile(entry.latencies, 50)),
        formatMs(percentile(entry.latencies, 99)),
        perStep(entry.clientCpuMs, entry.steps),
        ...(store === 'postgres' ? [perStep(entry.serverCpuMs, entry.steps)] : []),
        versus,
        [...entry.notes].join('; '),
      ]);
    }
  }
  return [store === 'postgres' ? '**PostgreSQL**' : '**Local files**', '', table(headers, rows)].join('\n');
}

/** CPU time per step, in µs: what the machine's two cores spend, whoever waits. */
function perStep(cpuMs: number | undefined, steps: number): string {
  return cpuMs === undefined || steps === 0 ? '?' : `${Math.round((cpuMs / steps) * 1000)} µs`;
}

/** Parley's driver as one file plain node runs (its packages resolved from the root's node_modules). */
async function bundleParleyDriver(): Promise<string> {
  const outfile = join(root, 'bench', '.data', 'peers-parley-driver.mjs');
  await build({
    entryPoints: [join(peersDir, 'parley-driver.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile,
    logLevel: 'error',
  });
  return outfile;
}
