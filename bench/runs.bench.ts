/**
 * Durable runs, on the scripted back end:
 * - journaling overhead: `agent.run` in a run started through the run service (each turn's start
 *   and result journaled in one append, awaited: written, and fdatasynced on the thread pool within
 *   50 ms — the product's deferred sync for turn results) beside `agent.run` in a plain
 *   `startSession` run, turn for turn, alternating. Twice: sessions and journal in memory (the
 *   journaling work alone), and sessions in the file store with the journal in the file run store,
 *   as a durable run is on disk. Target ≤ 1.05×.
 * - resume: a run waiting after 1,000 journaled steps (agent turns), recovered by a new run service
 *   over the same file data folder: from `recoverRuns()` until its question is pending again.
 *   Target < 200 ms.
 * `PARLEY_BENCH_TURNS` sets turns per side (default 200).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedBackend, step, type ScriptStep } from '../src/backends/index.js';
import {
  createRunService,
  defineAgent,
  defineHarness,
  type AnyHarness,
  type RunService,
} from '../src/harness/index.js';
import { createSessionManager, type SessionManager } from '../src/sessions/index.js';
import {
  createFileRunStore,
  createFileStore,
  createMemoryRunStore,
  createMemoryStore,
  type RunRecord,
  type RunStore,
} from '../src/store/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const REPLY =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable, and each one ends with the checks passing before the next begins.';
const TURN: ScriptStep[] = [step.text(REPLY, { chunks: REPLY.match(/\S+\s*/g)! })];
const WARM = 10;

/** A turn-at-a-time workflow: each turn waits for the bench's go, and reports how long `agent.run` took. */
function steppedHarness(): { harness: AnyHarness; turn: () => Promise<number>; finish: () => Promise<void> } {
  let go: ((prompt: string) => void) | undefined;
  let done: ((ms: number) => void) | undefined;
  const waiting: Array<() => void> = [];
  const backend = createScriptedBackend({ defaultTurn: () => TURN });
  const harness = defineHarness({
    name: 'bench-runs',
    agents: { worker: defineAgent({ name: 'Worker', role: 'You plan.', backend }) },
    async run({ agents }) {
      for (;;) {
        const prompt = await new Promise<string>((resolve) => {
          go = resolve;
          waiting.splice(0).forEach((wake) => wake());
        });
        if (prompt === '') return 'done';
        const started = performance.now();
        await agents.worker.run(prompt);
        done!(performance.now() - started);
      }
    },
  }) as AnyHarness;
  let count = 0;
  const ready = (): Promise<void> => (go ? Promise.resolve() : new Promise((resolve) => waiting.push(resolve)));
  return {
    harness,
    turn: async () => {
      await ready();
      const start = go!;
      go = undefined;
      const finished = new Promise<number>((resolve) => (done = resolve));
      start(`Step ${++count}: plan it.`);
      return finished;
    },
    finish: async () => {
      await ready();
      go!('');
    },
  };
}

async function overhead(
  turns: number,
  stores: { manager: SessionManager; runStore: RunStore; root: string },
): Promise<{ plain: number[]; journaled: number[] }> {
  const plain = steppedHarness();
  const journaled = steppedHarness();
  const session = plain.harness.create(undefined, { sessionManager: stores.manager }).startSession();
  const service = createRunService({
    runStore: stores.runStore,
    sessionManager: stores.manager,
    projectRoot: stores.root,
    loadWorkflow: async () => journaled.harness,
  });
  const { writeFile } = await import('node:fs/promises');
  await writeFile(join(stores.root, 'bench.ts'), '// loaded by the bench loader\n');
  await service.startRun({ workflow: 'bench.ts' });
  const samples = { plain: [] as number[], journaled: [] as number[] };
  for (let turn = 0; turn < turns + WARM; turn++) {
    let a: number;
    let b: number;
    if (turn % 2 === 0) {
      a = await plain.turn();
      b = await journaled.turn();
    } else {
      b = await journaled.turn();
      a = await plain.turn();
    }
    if (turn < WARM) continue;
    samples.plain.push(a);
    samples.journaled.push(b);
  }
  await plain.finish();
  await journaled.finish();
  await session.complete();
  await service.close();
  return samples;
}

async function resume(steps: number, dataDir: string, root: string): Promise<{ resumeMs: number; entries: number }> {
  const backend = createScriptedBackend({ defaultTurn: () => [step.text('ok')] });
  const turns = (steps - 2) / 2;
  const harness = defineHarness({
    name: 'bench-resume',
    agents: { worker: defineAgent({ name: 'Worker', role: 'You plan.', backend }) },
    async run({ agents, session }) {
      for (let index = 0; index < turns; index++) await agents.worker.run(`Step ${index}`);
      return (await session!.waitForUser('Ship it?')).content;
    },
  }) as AnyHarness;
  const open = async (): Promise<{ service: RunService; close: () => Promise<void> }> => {
    const store = await createFileStore({ dataDir, onWarning: () => undefined });
    const manager = await createSessionManager({ store });
    const runStore = await createFileRunStore({ dataDir });
    const service = createRunService({
      runStore,
      sessionManager: manager,
      projectRoot: root,
      loadWorkflow: async () => harness,
    });
    return {
      service,
      close: async () => {
        await service.close();
        await runStore.close();
        await manager.close();
        await store.close();
      },
    };
  };
  const first = await open();
  const run = await first.service.startRun({ workflow: 'bench.ts' });
  await waitFor(first.service, run.id, (record) => record.pendingPrompts.length > 0);
  await first.close();
  const second = await open();
  const started = performance.now();
  await second.service.recoverRuns();
  const waiting = await waitFor(
    second.service,
    run.id,
    (record) => record.status === 'waiting' && record.pendingPrompts.length > 0,
  );
  const resumeMs = performance.now() - started;
  if (backend.calls.length !== turns)
    throw new Error(`resume called the agent again (${backend.calls.length} calls for ${turns} turns)`);
  await second.close();
  return { resumeMs, entries: waiting.journalLength };
}

function waitFor(service: RunService, runId: string, predicate: (run: RunRecord) => boolean): Promise<RunRecord> {
  return new Promise((resolve) => {
    const stop = service.on('run_updated', ({ run }) => {
      if (run.id === runId && predicate(run)) {
        stop();
        resolve(run);
      }
    });
  });
}

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 200);
  const dir = await mkdtemp(join(tmpdir(), 'parley-bench-runs-'));
  try {
    const memoryManager = await createSessionManager({ store: createMemoryStore() });
    const inMemory = await overhead(turns, { manager: memoryManager, runStore: createMemoryRunStore(), root: dir });
    await memoryManager.close();

    const dataDir = join(dir, 'data');
    const fileManager = await createSessionManager({
      store: await createFileStore({ dataDir, onWarning: () => undefined }),
    });
    const fileRunStore = await createFileRunStore({ dataDir });
    const onDisk = await overhead(turns, { manager: fileManager, runStore: fileRunStore, root: dir });
    await fileRunStore.close();
    await fileManager.close();

    const resumed = await resume(1000, join(dir, 'resume-data'), dir);

    const row = (name: string, values: number[], base: number[]) => [
      name,
      formatMs(percentile(values, 50)),
      formatMs(percentile(values, 95)),
      ratio(percentile(values, 50), percentile(base, 50)),
    ];
    return [
      `### Durable runs: journaling overhead per agent turn (${turns} turns per side, scripted back end)`,
      '',
      table(
        ['', 'median', 'p95', 'vs plain'],
        [
          row('memory sessions: `agent.run` in `startSession()` (plain)', inMemory.plain, inMemory.plain),
          row('memory sessions + memory journal: `agent.run` in a durable run', inMemory.journaled, inMemory.plain),
          row('file sessions: `agent.run` in `startSession()` (plain)', onDisk.plain, onDisk.plain),
          row(
            'file sessions + file journal (turn results synced within 50 ms): `agent.run` in a durable run',
            onDisk.journaled,
            onDisk.plain,
          ),
        ],
      ),
      '',
      `Resume of a run with ${resumed.entries} journaled steps (file store), from \`recoverRuns()\` until its question waits again: ${formatMs(resumed.resumeMs)}. Targets: ≤ 1.05× plain; resume < 200 ms.`,
    ].join('\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
