// @ts-check
import { readdirSync, readFileSync } from 'node:fs';

/** Set by `driverArguments`: the run stores on PostgreSQL, whose processes' CPU time is read too. */
let onPostgres = false;

/**
 * CPU time (ms) of every PostgreSQL process on the machine so far: user + system of each and of its
 * waited-for children, read from /proc (Linux). The bench's server is the only one while it runs.
 * @returns {number | undefined} undefined where /proc cannot tell
 */
function postgresCpuMs() {
  try {
    const ticksPerMs = 100 / 1000; // USER_HZ is 100 on Linux
    let ticks = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) continue;
        const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      } catch {
        // The process ended between the listing and the read.
      }
    }
    return ticks / ticksPerMs;
  } catch {
    return undefined;
  }
}

/**
 * The one workload every system in the peers bench runs, so each measures the same thing: `sessions`
 * sessions at once, each appending `steps` steps of about 1 KB one after another, each step awaited
 * until the system says it is stored (durable, for every system here) before the next starts.
 *
 * A driver (parley-driver.ts, langgraph-driver.mjs, mastra-driver.mjs) gives `runWorkload` a
 * `prepare` (creates a session: not timed) and a `step` (stores one step: timed), and prints the
 * result as one JSON line for bench/peers.bench.ts. Plain JavaScript, so the peers' drivers run under
 * any Node (Mastra's want Node 22) without a TypeScript loader.
 */

/** A deterministic step of about 1 KB: what an agent's turn adds (a message, a tool call and result). */
export function stepText(session, step) {
  const head = `session ${session} step ${step}: `;
  return head + 'the quick brown fox jumps over the lazy dog; '.repeat(23).slice(0, 1000 - head.length);
}

/**
 * Runs the workload: a few warm-up steps on a session of their own (not counted), then `sessions`
 * sessions appending at once. Returns every step's latency (ms), the wall time of the whole run, and
 * the CPU time the client (this process) and, on PostgreSQL, the server spent in it.
 *
 * @param {{
 *   sessions: number,
 *   steps: number,
 *   warmup?: number,
 *   prepare: (session: number) => Promise<unknown>,
 *   step: (session: number, step: number, text: string) => Promise<unknown>,
 * }} workload
 * @returns {Promise<{ latencies: number[], wallMs: number, clientCpuMs: number, serverCpuMs?: number }>}
 */
export async function runWorkload(workload) {
  const warmup = workload.warmup ?? 20;
  const warmupSession = workload.sessions;
  await workload.prepare(warmupSession);
  for (let step = 0; step < warmup; step += 1) await workload.step(warmupSession, step, stepText(warmupSession, step));
  for (let session = 0; session < workload.sessions; session += 1) await workload.prepare(session);
  const latencies = [];
  // CPU in the timed part only: this process's (the client's), and the database server's.
  const clientBefore = process.cpuUsage();
  const serverBefore = onPostgres ? postgresCpuMs() : undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workload.sessions }, async (_, session) => {
      for (let step = 0; step < workload.steps; step += 1) {
        const text = stepText(session, step);
        const before = performance.now();
        await workload.step(session, step, text);
        latencies.push(performance.now() - before);
      }
    }),
  );
  const wallMs = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  const serverAfter = serverBefore === undefined ? undefined : postgresCpuMs();
  return {
    latencies,
    wallMs,
    clientCpuMs: (client.user + client.system) / 1000,
    ...(serverBefore !== undefined && serverAfter !== undefined ? { serverCpuMs: serverAfter - serverBefore } : {}),
  };
}

/**
 * The driver's command line: `<driver> <system> <json options>`; the options hold the workload's
 * size and where to store (`url` and `schema` for PostgreSQL, `dir` for files).
 * @returns {{ system: string, options: { sessions: number, steps: number, url?: string, schema?: string, dir?: string } }}
 */
export function driverArguments() {
  const [system, json] = process.argv.slice(2);
  if (system === undefined || json === undefined) {
    throw new Error('usage: <driver> <system> <json options>: the bench (bench/peers.bench.ts) starts the drivers');
  }
  const options = JSON.parse(json);
  onPostgres = options.url !== undefined;
  return { system, options };
}

/** Prints the result for the bench: one JSON line on stdout. */
export function report(system, result, notes = []) {
  process.stdout.write(`${JSON.stringify({ system, node: process.version, notes, ...result })}\n`);
}
