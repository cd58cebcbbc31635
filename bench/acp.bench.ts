/**
 * `parley acp`'s cost per turn, beside `runTurn` called in process, on the scripted back end
 * playing the same turn (one answer of ~40 text chunks) into a file store:
 * - in process: `runTurn` on a SessionManager, its events drained (the baseline);
 * - ACP: a `parley acp` child process (via tsx, as the tests start it) driven by the SDK's client
 *   over stdio: `session/prompt` until its response, every `session/update` received.
 * For both: the whole turn, and the time to the first text (first `text_delta` in process, first
 * `agent_message_chunk` over ACP). Turns alternate between the sides so load drifts hit both.
 * The floor is the SDK's bare agent in a child process sending as many chunks (`acp-floor-agent.ts`):
 * what the process boundary and the SDK cost here, whatever the agent does.
 * CPU time per turn is printed too (the process's own for in process, the child's from /proc for
 * ACP): on a loaded machine it says more about Parley's share than wall time does.
 * Target: at most 5 ms more than in process. `PARLEY_BENCH_TURNS` sets turns per side (default 100).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedBackend, scriptedOptionsFromJson } from '../src/backends/index.js';
import { createSessionManager, runTurn } from '../src/sessions/index.js';
import { Editor, spawnParleyAcp, tsx } from '../test/acp/acp-process.js';
import { formatMs, percentile, table } from './stats.js';

const ANSWER =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable, and each one leaves the suite green so the next can start from a known state.';
const SCRIPT = { turns: [], defaultTurn: [{ type: 'text', text: ANSWER }] };

/** CPU milliseconds (user + system) a process has used, from /proc (Linux; clock ticks of 10 ms). */
function childCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 100);
  const folder = await mkdtemp(join(tmpdir(), 'parley-bench-acp-'));
  const scriptPath = join(folder, 'script.json');
  await writeFile(scriptPath, JSON.stringify(SCRIPT));
  const manager = await createSessionManager({ dataDir: join(folder, 'in-process', '.parley'), projectRoot: folder });
  const backend = createScriptedBackend(scriptedOptionsFromJson(SCRIPT));
  const { sessionId: localSession } = await manager.createSession({
    scope: { kind: 'draft', role: 'dev' },
    agentType: 'dev',
    backend: 'scripted',
  });
  const editor = new Editor(spawnParleyAcp({ cwd: folder, env: { PARLEY_SCRIPTED_SCRIPT: scriptPath } }));
  let floorEditor: Editor | undefined;
  try {
    await editor.initialize();
    const { sessionId } = await editor.agent.request('session/new', { cwd: folder, mcpServers: [] });
    // One warm-up turn tells how many updates Parley sends; the floor agent sends as many.
    const warmBefore = editor.updates.length;
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'warm up' }] });
    const updatesPerTurn = editor.updates.length - warmBefore;
    floorEditor = new Editor(
      spawn(process.execPath, ['--import', tsx, new URL('./acp-floor-agent.ts', import.meta.url).pathname], {
        cwd: folder,
        env: { PATH: process.env['PATH'] ?? '', PARLEY_BENCH_UPDATES: String(updatesPerTurn) },
      }),
    );
    await floorEditor.initialize();
    const { sessionId: floorSession } = await floorEditor.agent.request('session/new', { cwd: folder, mcpServers: [] });
    const floor = { total: [] as number[], first: [] as number[] };
    let localCpu = 0;
    let childCpu = 0;
    const local = { total: [] as number[], first: [] as number[] };
    const acp = { total: [] as number[], first: [] as number[], updates: 0 };
    for (let turn = 0; turn < turns + 10; turn++) {
      const warm = turn < 10;

      let started = performance.now();
      const cpuBefore = ownCpuMs();
      let first: number | undefined;
      const handle = await runTurn(manager, localSession, { backend, prompt: `Question ${turn}` });
      for await (const event of handle.events)
        if (first === undefined && event.type === 'text_delta') first = performance.now() - started;
      const localTotal = performance.now() - started;
      if (!warm) localCpu += ownCpuMs() - cpuBefore;
      const childBefore = childCpuMs(editor.child.pid!);

      const before = editor.updates.length;
      started = performance.now();
      const firstChunk = editor
        .waitFor((notification) => notification.update.sessionUpdate === 'agent_message_chunk', before)
        .then(() => performance.now() - started);
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `Question ${turn}` }] });
      const acpTotal = performance.now() - started;
      const acpFirst = await firstChunk;
      if (!warm) childCpu += childCpuMs(editor.child.pid!) - childBefore;

      const floorBefore = floorEditor.updates.length;
      started = performance.now();
      const floorChunk = floorEditor
        .waitFor((notification) => notification.update.sessionUpdate === 'agent_message_chunk', floorBefore)
        .then(() => performance.now() - started);
      await floorEditor.agent.request('session/prompt', {
        sessionId: floorSession,
        prompt: [{ type: 'text', text: `Question ${turn}` }],
      });
      const floorTotal = performance.now() - started;
      const floorFirst = await floorChunk;
      if (warm) continue;
      floor.total.push(floorTotal);
      floor.first.push(floorFirst);
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
          row('whole turn: bare SDK agent in a child process (floor)', floor.total),
          row('first text: `text_delta` in process (baseline)', local.first),
          row('first text: `agent_message_chunk` over ACP', acp.first, local.first),
          row('first text: bare SDK agent in a child process (floor)', floor.first),
        ],
      ),
      '',
      `CPU per turn: in process ${(localCpu / turns).toFixed(2)} ms; the \`parley acp\` process ${(childCpu / turns).toFixed(2)} ms (${(childCpu / turns - localCpu / turns).toFixed(2)} ms more).`,
      '',
      'Target: at most 5 ms more than in process.',
    ].join('\n');
  } finally {
    await editor.close();
    await floorEditor?.close();
    await manager.close();
    await rm(folder, { recursive: true, force: true });
  }
}
