import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProtocolClient } from '../../src/protocol/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { connectToServer, startServeProcess, type ServeProcess } from './serve-process.js';

/**
 * Two `parley serve` processes on one PostgreSQL database share one schedule that fires every
 * second: each of 20 firings is claimed by one server and starts exactly one run.
 */
const skipReason = postgresSkipReason();
const repo = resolve(import.meta.dirname, '..', '..');

describe.skipIf(skipReason !== undefined)('a schedule shared by two parley serve on one PostgreSQL', () => {
  let postgres: TestPostgres;
  const cleanups: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    postgres = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await postgres?.destroy();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  /** A project folder with a workflow without agents (its runs complete at once). */
  async function project(): Promise<string> {
    const root = await mkdtemp(join(tmpdir(), 'parley-schedules-serve-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    await mkdir(join(root, 'workflows'));
    await writeFile(
      join(root, 'workflows', 'tick.ts'),
      `import { defineHarness } from '${pathToFileURL(join(repo, 'src', 'index.ts')).href}';\n` +
        `export default defineHarness({ name: 'tick', agents: {}, async run(context) { return context.input; } });\n`,
    );
    return root;
  }

  async function serve(root: string): Promise<{ server: ServeProcess; client: ProtocolClient }> {
    const server = await startServeProcess(root, { PARLEY_DATABASE_URL: postgres.url() });
    cleanups.push(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
      await server.exited;
    });
    const client = await connectToServer(server.info, 'schedules');
    cleanups.push(async () => client.close());
    return { server, client };
  }

  it('20 firings, each claimed by one server and starting exactly one run', async () => {
    const first = await serve(await project());
    const second = await serve(await project());
    const schedule = await first.client.addSchedule({
      name: 'every second',
      everySeconds: 1,
      overlap: 'parallel',
      target: { kind: 'workflow', workflow: 'workflows/tick.ts', input: { ping: true } },
    });
    // Both servers see the schedule (it lives in the database, not in either process).
    expect((await second.client.listSchedules()).map((each) => each.id)).toEqual([schedule.id]);

    for (;;) {
      const started = await second.client.request('get_schedule', { scheduleId: schedule.id, firings: 500 });
      if (started.firings.filter((each) => each.outcome === 'started' && each.runId !== undefined).length >= 20) break;
      await new Promise((next) => setTimeout(next, 200));
    }
    await first.client.pauseSchedule(schedule.id);
    // A firing claimed just before the pause records its run once the run is stored: poll until it has.
    let firings = (await first.client.request('get_schedule', { scheduleId: schedule.id, firings: 500 })).firings;
    while (firings.some((each) => each.outcome === 'started' && each.runId === undefined)) {
      await new Promise((next) => setTimeout(next, 50));
      firings = (await first.client.request('get_schedule', { scheduleId: schedule.id, firings: 500 })).firings;
    }
    const runs = await first.client.listRuns();

    const fired = firings.filter((each) => each.outcome === 'started');
    expect(fired.length).toBeGreaterThanOrEqual(20);
    expect(fired.every((each) => each.runId !== undefined)).toBe(true);
    // One firing per due time, one run per firing, and no run that no firing started.
    expect(new Set(firings.map((each) => each.fireAt)).size).toBe(firings.length);
    expect(new Set(fired.map((each) => each.runId)).size).toBe(fired.length);
    expect(runs.map((run) => run.id).sort()).toEqual(fired.map((each) => each.runId!).sort());
    const byServer = new Map<string, number>();
    for (const each of fired) byServer.set(each.server ?? '?', (byServer.get(each.server ?? '?') ?? 0) + 1);
    console.log(`firings by server: ${JSON.stringify(Object.fromEntries(byServer))}`);
  }, 120_000);
});
