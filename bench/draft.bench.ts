/**
 * The draft layer's cost, beside what it is built on, on the scripted back end over the file store
 * in a temp folder (so every stored event is durable, as in `parley serve`):
 * - a draft turn (`submit_prompt` → turn settled: user message, streamed events, metrics refreshed
 *   from the log, draft.json saved atomically, `draft_status`) vs `runTurn` on the same manager
 *   (the session layer alone) vs the back end's events drained with no storage (floor);
 * - a worker round trip (`draft_agent` + `await_agent` through the tool definitions: subagent block,
 *   thread, result) vs `runTurn` of the same one-reply turn in a fresh session;
 * - `recover()` of N active drafts vs reading and validating their draft.json files.
 * `PARLEY_BENCH_TURNS` sets turns per side (default 100), `PARLEY_BENCH_DRAFTS` drafts to recover (default 100).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedBackend, step, type ToolDefinition } from '../src/backends/index.js';
import { createDraftService, DraftSessionSchema, type DraftService } from '../src/draft/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../src/sessions/index.js';
import { createFileStore, type SessionStore } from '../src/store/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const ANSWER =
  'The plan has three steps: read the failing test, fix the parser, and add a fixture from a real session.';

async function time(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

function row(name: string, samples: number[], baseline: number[]): string[] {
  const median = percentile(samples, 50);
  return [name, formatMs(median), formatMs(percentile(samples, 95)), ratio(median, percentile(baseline, 50))];
}

interface World {
  root: string;
  store: SessionStore;
  manager: SessionManager;
  service: DraftService;
  close(): Promise<void>;
}

async function world(backendFor: () => ReturnType<typeof createScriptedBackend>): Promise<World> {
  const root = await mkdtemp(join(tmpdir(), 'parley-bench-draft-'));
  const dataDir = join(root, '.parley');
  const store = await createFileStore({ dataDir, onWarning: () => undefined });
  const manager = await createSessionManager({ store });
  const service = await createDraftService({
    manager,
    projectRoot: root,
    dataDir,
    backendFor,
    maxConcurrentWorkers: 4,
  });
  return {
    root,
    store,
    manager,
    service,
    close: async () => {
      await service.close();
      await manager.close();
      await store.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function turnSection(turns: number): Promise<string> {
  const backend = createScriptedBackend({
    idPrefix: 'bench',
    defaultTurn: () => [step.text(ANSWER), step.usage({ inputTokens: 1200, outputTokens: 30 }), step.cost(0.001)],
  });
  const w = await world(() => backend);
  try {
    const [project] = await w.service.listProjects();
    const task = await w.service.createTask({ project: project!.name, title: 'Bench' });
    await w.service.draft({ channelId: 'bench', role: 'dev', project: project!.name, task: task.slug });
    const plain = await w.manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const draft: number[] = [];
    const session: number[] = [];
    const floor: number[] = [];
    for (let turn = 0; turn < turns + 10; turn++) {
      const warm = turn < 10;
      const a = await time(async () => {
        await w.service.submitPrompt({ channelId: 'bench', content: 'Summarise the plan.' });
        await w.service.settled({ channelId: 'bench' });
      });
      const b = await time(async () => {
        const handle = await runTurn(w.manager, plain.sessionId, { backend, prompt: 'Summarise the plan.' });
        for await (const _event of handle.events);
      });
      const c = await time(async () => {
        for await (const _event of backend.execute({ sessionId: 'floor', prompt: 'Summarise the plan.' }).events);
      });
      if (warm) continue;
      draft.push(a);
      session.push(b);
      floor.push(c);
    }
    return [
      `### A draft turn (scripted back end, file store, ${turns} turns per side)`,
      '',
      table(
        ['path', 'median', 'p95', 'vs runTurn'],
        [
          row('draft: submit_prompt → settled', draft, session),
          row('baseline: runTurn on the same manager', session, session),
          row('floor: back-end events, no storage', floor, session),
        ],
      ),
      '',
      'The draft turn adds draft.json (write-temp, fsync, rename, fsync of the folder), the metrics read back from the log and the `draft_status` push to what the session layer does.',
    ].join('\n');
  } finally {
    await w.close();
  }
}

async function workerSection(rounds: number): Promise<string> {
  const worker = createScriptedBackend({
    idPrefix: 'worker',
    defaultTurn: () => [step.text('{"summary":"done"}'), step.cost(0.0005)],
  });
  const analyst = createScriptedBackend({ idPrefix: 'analyst' });
  const w = await world(() => worker);
  try {
    // The analyst's tools, taken from its first turn, are called directly: what a model's tool calls would run.
    analyst.enqueue([step.text('ready')]);
    const roleless = await w.service.listProjects();
    const task = await w.service.createTask({ project: roleless[0]!.name, title: 'Workers' });
    const service = await createDraftService({
      manager: w.manager,
      projectRoot: w.root,
      dataDir: join(w.root, '.parley'),
      backendFor: (name) => (name === 'analyst' ? analyst : worker),
    });
    await service.draft({ channelId: 'a', role: 'product-analyst', project: roleless[0]!.name, task: task.slug });
    // The analyst role has no back end of its own, so the worker back end answers its turn; only its tools matter here.
    worker.enqueue([step.text('ready')]);
    await service.submitPrompt({ channelId: 'a', content: 'hello' });
    await service.settled({ channelId: 'a' });
    const tools = new Map((worker.calls[0]!.tools ?? []).map((tool: ToolDefinition) => [tool.name, tool]));
    const draftAgent = tools.get('draft_agent')!;
    const awaitAgent = tools.get('await_agent')!;
    const schema = { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] };
    const dispatch: number[] = [];
    const baseline: number[] = [];
    for (let round = 0; round < rounds + 5; round++) {
      const a = await time(async () => {
        const drafted = await draftAgent.execute({ role: 'dev', prompt: 'Do the thing.', outputSchema: schema }, {});
        const { agentId } = drafted.data as { agentId: string };
        const result = await awaitAgent.execute({ agentId }, {});
        if ((result.data as { status: string }).status !== 'completed') throw new Error(result.content);
      });
      const b = await time(async () => {
        const fresh = await w.manager.createSession({
          scope: { kind: 'workflow', harness: 'bench', agent: 'dev' },
          agentType: 'dev',
        });
        const handle = await runTurn(w.manager, fresh.sessionId, { backend: worker, prompt: 'Do the thing.' });
        for await (const _event of handle.events);
      });
      if (round < 5) continue;
      dispatch.push(a);
      baseline.push(b);
    }
    await service.close();
    return [
      `### A worker round trip (${rounds} per side)`,
      '',
      table(
        ['path', 'median', 'p95', 'vs runTurn'],
        [
          row('draft_agent + await_agent (thread in the draft session, schema checked)', dispatch, baseline),
          row('baseline: runTurn in a fresh session', baseline, baseline),
        ],
      ),
    ].join('\n');
  } finally {
    await w.close();
  }
}

async function recoverSection(drafts: number): Promise<string> {
  const backend = createScriptedBackend({ idPrefix: 'recover' });
  const w = await world(() => backend);
  try {
    const [project] = await w.service.listProjects();
    const files: string[] = [];
    for (let index = 0; index < drafts; index++) {
      const task = await w.service.createTask({ project: project!.name, title: `Task ${index}` });
      await w.service.draft({ channelId: `channel-${index}`, role: 'dev', project: project!.name, task: task.slug });
      files.push(join(task.taskDir, 'draft.json'));
    }
    const fresh = await createDraftService({
      manager: w.manager,
      projectRoot: w.root,
      dataDir: join(w.root, '.parley'),
      backendFor: () => backend,
    });
    let recovered = 0;
    const parley = await time(async () => {
      recovered = (await fresh.recover()).recovered;
    });
    const floor = await time(async () => {
      for (const file of files) DraftSessionSchema.parse(JSON.parse(await readFile(file, 'utf8')));
    });
    await fresh.close();
    if (recovered !== drafts) throw new Error(`recovered ${recovered} of ${drafts}`);
    return [
      `### recover() of ${drafts} active drafts`,
      '',
      table(
        ['path', 'total', 'per draft', 'vs floor'],
        [
          [
            'recover(): scan, validate, repair check, metrics from the log (draft.json saved when they differ)',
            formatMs(parley),
            formatMs(parley / drafts),
            ratio(parley, floor),
          ],
          ['floor: read and validate every draft.json', formatMs(floor), formatMs(floor / drafts), '1.00×'],
        ],
      ),
    ].join('\n');
  } finally {
    await w.close();
  }
}

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 100);
  const drafts = Number(process.env['PARLEY_BENCH_DRAFTS'] ?? 100);
  return [
    '## Draft layer',
    '',
    await turnSection(turns),
    '',
    await workerSection(Math.max(10, Math.floor(turns / 2))),
    '',
    await recoverSection(drafts),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
