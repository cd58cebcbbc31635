/**
 * The harness's cost per agent turn, beside what it is built on, all on the scripted back end and
 * a memory store (so only Parley's own work is measured). Inside one workflow, turn by turn:
 * - floor: the scripted back end's `execute`, consumed to its last event;
 * - baseline: `runTurn` on a session of the same manager with the same options (signal, profile):
 *   request building, the user message, every event appended;
 * - `agent.run`: the harness on top of runTurn (agent:start/event/complete, turn bookkeeping).
 * The same again under `startSession({ record })` (a JSONL line per event, written synchronously),
 * and the time to replay that recording (no back end, every event compared with the recording).
 * `PARLEY_BENCH_TURNS` sets turns per side (default 200). Target: `agent.run` ≤ 1.10× runTurn, recording included.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedBackend, step, type ScriptStep } from '../src/backends/index.js';
import { defineAgent, defineHarness, replay } from '../src/harness/index.js';
import { runTurn } from '../src/sessions/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const REPLY =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable, and each one ends with the checks passing before the next begins.';
const TURN: ScriptStep[] = [step.text(REPLY, { chunks: REPLY.match(/\S+\s*/g)! })];
const WARM = 10;

interface Samples {
  floor: number[];
  baseline: number[];
  harness: number[];
}

async function time(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

/** A workflow that measures, turn by turn, the floor, runTurn and agent.run, alternating. */
function timedHarness(turns: number, samples: Samples) {
  const backend = createScriptedBackend({ defaultTurn: () => TURN });
  const worker = defineAgent({ name: 'Worker', role: 'You plan.', backend });
  return defineHarness({
    name: 'bench',
    agents: { worker },
    run: async ({ agents, sessionManager, signal }) => {
      const baseline = await sessionManager.createSession({
        scope: { kind: 'workflow', harness: 'bench', agent: 'baseline' },
        agentType: 'harness',
      });
      for (let turn = 0; turn < turns + WARM; turn++) {
        const prompt = `Step ${turn}: plan it.`;
        const floor = await time(async () => {
          for await (const _event of backend.execute({ sessionId: 'floor', prompt }).events);
        });
        const viaRunTurn = () =>
          time(async () => {
            const handle = await runTurn(sessionManager, baseline.sessionId, {
              backend,
              prompt,
              signal,
              profile: { name: 'Worker', instructions: 'You plan.' },
            });
            for await (const _event of handle.events);
          });
        const viaHarness = () => time(() => agents.worker.run(prompt));
        // Alternate which side goes first, so whatever one leaves behind (GC, background work) hits both.
        let direct: number;
        let harness: number;
        if (turn % 2 === 0) {
          direct = await viaRunTurn();
          harness = await viaHarness();
        } else {
          harness = await viaHarness();
          direct = await viaRunTurn();
        }
        if (turn < WARM) continue;
        samples.floor.push(floor);
        samples.baseline.push(direct);
        samples.harness.push(harness);
      }
      return turns;
    },
  });
}

function rows(label: string, samples: Samples): string[][] {
  const row = (name: string, values: number[]) => [
    name,
    formatMs(percentile(values, 50)),
    formatMs(percentile(values, 95)),
    ratio(percentile(values, 50), percentile(samples.baseline, 50)),
  ];
  return [
    row(`${label}: scripted \`execute\` alone (floor)`, samples.floor),
    row(`${label}: \`runTurn\` on a session (baseline)`, samples.baseline),
    row(`${label}: \`agent.run\``, samples.harness),
  ];
}

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 200);
  const dir = await mkdtemp(join(tmpdir(), 'parley-bench-harness-'));
  try {
    const plain: Samples = { floor: [], baseline: [], harness: [] };
    await timedHarness(turns, plain).create(undefined).run();
    const recorded: Samples = { floor: [], baseline: [], harness: [] };
    const recording = join(dir, 'bench.jsonl');
    await timedHarness(turns, recorded).create(undefined).startSession({ record: recording }).complete();
    const replayedSamples: Samples = { floor: [], baseline: [], harness: [] };
    const replayHarness = timedHarness(turns, replayedSamples);
    // The replay plays the agent's turns from the file; the floor and baseline sides run live again.
    const replayTotal = await time(() => replay(recording, replayHarness));

    return [
      `### Harness: one agent turn (${turns} turns per side, ${REPLY.split(' ').length} text chunks per turn, memory store)`,
      '',
      table(
        ['', 'median', 'p95', 'vs runTurn'],
        [
          ...rows('`run()`', plain),
          ...rows('`startSession({ record })`', recorded),
          ...rows('`replay()`', replayedSamples).slice(2),
        ],
      ),
      '',
      `Whole replay of the ${turns + WARM}-iteration recording (${3 * (turns + WARM)} turns, two of three live): ${formatMs(replayTotal)}. Target: \`agent.run\` ≤ 1.10× runTurn, recording included.`,
    ].join('\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
