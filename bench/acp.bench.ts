/**
 * `parley acp`'s cost per turn, beside `runTurn` called in process, on the scripted back end
 * playing the same turn (one answer of ~40 text chunks) into a file store:
 * - in process: `runTurn` on a SessionManager, its events drained (the baseline);
 * - ACP: a `parley acp` child process (via tsx, as the tests start it) driven by the SDK's client
 *   over stdio: `session/prompt` until its response, every `session/update` received.
 * For both: the whole turn, and the time to the first text (first `text_delta` in process, first
 * `agent_message_chunk` over ACP). Turns alternate between the sides so load drifts hit both.
 * Target: at most 5 ms more than in process. `PARLEY_BENCH_TURNS` sets turns per side (default 100).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedBackend, scriptedOptionsFromJson } from '../src/backends/index.js';
import { createSessionManager, runTurn } from '../src/sessions/index.js';
import { Editor, spawnParleyAcp } from '../test/acp/acp-process.js';
import { formatMs, percentile, table } from './stats.js';

const ANSWER =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable, and each one leaves the suite green so the next can start from a known state.';
const SCRIPT = { turns: [], defaultTurn: [{ type: 'text', text: ANSWER }] };

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 100);
  const folder = await mkdtemp(join(tmpdir(), 'parley-bench-acp-'));
  const scriptPath = join(folder, 'script.json');
  await writeFile(scriptPath, JSON.stringify(SCRIPT));
  const manager = await createSessionManager({ dataDir: join(folder, 'in-process', '.parley'), projectRoot: folder });
  const backend = createScriptedBackend(scriptedOptionsFromJson(SCRIPT));
  const { sessionId: localSession } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev', backend: 'scripted' });
  const editor = new Editor(spawnParleyAcp({ cwd: folder, env: { PARLEY_SCRIPTED_SCRIPT: scriptPath } }));
  try {
    await editor.initialize();
    const { sessionId } = await editor.agent.request('session/new', { cwd: folder, mcpServers: [] });
    const local = { total: [] as number[], first: [] as number[] };
    const acp = { total: [] as number[], first: [] as number[], updates: 0 };
    for (let turn = 0; turn < turns + 10; turn++) {
      const warm = turn < 10;

      let started = performance.now();
      let first: number | undefined;
      const handle = await runTurn(manager, localSession, { backend, prompt: `Question ${turn}` });
      for await (const event of handle.events) if (first === undefined && event.type === 'text_delta') first = performance.now() - started;
      const localTotal = performance.now() - started;

      const before = editor.updates.length;
      started = performance.now();
      const firstChunk = editor.waitFor((notification) => notification.update.sessionUpdate === 'agent_message_chunk', before).then(() => performance.now() - started);
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `Question ${turn}` }] });
      const acpTotal = performance.now() - started;
      const acpFirst = await firstChunk;
      if (warm) continue;
      local.total.push(localTotal);
      local.first.push(first ?? localTotal);
      acp.total.push(acpTotal);
      acp.first.push(acpFirst);
      acp.updates += editor.updates.length - before;
    }
    const median = (samples: number[]): number => percentile(samples, 50);
    const row = (name: string, samples: number[], baseline?: number[]): string[] => [
      name,
      formatMs(median(samples)),
      formatMs(percentile(samples, 95)),
      baseline ? `${(median(samples) - median(baseline)).toFixed(2)} ms` : '',
    ];
    return [
      `### parley acp vs runTurn in process (scripted back end, ${turns} turns per side, ${Math.round(acp.updates / turns)} session updates per ACP turn)`,
      '',
      table(
        ['', 'median', 'p95', 'more than in process (median)'],
        [
          row('whole turn: `runTurn` in process (baseline)', local.total),
          row('whole turn: `parley acp` over stdio', acp.total, local.total),
          row('first text: `text_delta` in process (baseline)', local.first),
          row('first text: `agent_message_chunk` over ACP', acp.first, local.first),
        ],
      ),
      '',
      'Target: at most 5 ms more than in process.',
    ].join('\n');
  } finally {
    await editor.close();
    await manager.close();
    await rm(folder, { recursive: true, force: true });
  }
}
