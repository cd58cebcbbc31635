/**
 * Parley's overhead per turn on the codex back end, beside the Codex SDK called directly on the
 * same fake Responses server with the same CLI, configuration, prompt and reply: a turn that starts
 * a thread, and a turn that resumes one (Parley then also finds the rollout and reads the thread's
 * running total). Turns alternate between the sides so drifts in load hit both. Target: at most 5%.
 * `PARLEY_BENCH_CODEX_TURNS` sets turns per side and kind (default 8; each is a CLI run of ~0.5 s).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Codex, type ThreadEvent } from '@openai/codex-sdk';
import { inheritedEnv } from '../src/backends/child-env.js';
import { codexResolvable, createCodexBackend } from '../src/backends/index.js';
import { startFakeResponsesServer } from '../test/fixtures/fake-openai-responses-server.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const ANSWER =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable.';
const PROMPT = 'Summarise the plan.';

async function time(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

function row(name: string, samples: number[], baseline?: number[]): string[] {
  const median = percentile(samples, 50);
  return [
    name,
    formatMs(median),
    formatMs(percentile(samples, 95)),
    baseline ? ratio(median, percentile(baseline, 50)) : '1.00×',
  ];
}

const OWN_TURNS = 300;

/** Parley's work around the CLI: `execute` with the SDK replaced by one that replays `recorded`. */
async function ownWork(
  codexHome: string,
  threadId: string,
  recorded: readonly ThreadEvent[],
  cwd: string,
): Promise<{ parley: number[]; floor: number[] }> {
  const replay = async function* (): AsyncGenerator<ThreadEvent> {
    for (const event of recorded) yield event.type === 'thread.started' ? { ...event, thread_id: threadId } : event;
  };
  class ReplayCodex {
    resumeThread() {
      return { id: threadId, runStreamed: () => Promise.resolve({ events: replay() }) };
    }
    startThread() {
      return this.resumeThread();
    }
  }
  const backend = createCodexBackend({
    apiKey: 'bench',
    baseUrl: 'http://127.0.0.1:9/v1',
    codexHome,
    loadSdk: () => Promise.resolve({ Codex: ReplayCodex } as never),
  });
  const parley: number[] = [];
  const floor: number[] = [];
  for (let turn = 0; turn < OWN_TURNS + 20; turn++) {
    const a = await time(async () => {
      for await (const _event of backend.execute({
        sessionId: 'bench',
        prompt: PROMPT,
        cwd,
        nativeSessionId: threadId,
        isNewSession: false,
      }).events);
    });
    const b = await time(async () => {
      for await (const _event of replay());
    });
    if (turn < 20) continue;
    parley.push(a);
    floor.push(b);
  }
  return { parley, floor };
}

export async function run(): Promise<string> {
  const heading = '## Back ends: codex per-turn overhead over the Codex SDK called directly (target ≤ 5%)';
  if (!codexResolvable()) return `${heading}\n\nNot measured: @openai/codex-sdk is not installed.`;
  const turns = Number(process.env['PARLEY_BENCH_CODEX_TURNS'] ?? 8);
  const server = await startFakeResponsesServer();
  // Codex refuses its sandbox helper when CODEX_HOME lies inside TMPDIR: the bench's folder is beside the repository.
  const root = await mkdtemp(join(process.env['PARLEY_BENCH_DIR'] ?? tmpdir(), 'parley-bench-codex-'));
  const cwd = join(root, 'workspace');
  const parleyHome = join(root, 'parley-home');
  const directHome = join(root, 'direct-home');
  await mkdir(cwd);
  await mkdir(directHome);
  try {
    const backend = createCodexBackend({ apiKey: 'bench', baseUrl: server.url, codexHome: parleyHome, maxRetries: 0 });
    // The environment and configuration Parley's back end gives the CLI (SHELL in the inherited
    // environment makes Codex snapshot the shell when a thread starts), so the sides differ only by Parley.
    const direct = new Codex({
      env: {
        ...inheritedEnv(),
        CODEX_HOME: directHome,
        NO_COLOR: '1',
        PARLEY_CODEX_API_KEY: 'bench',
      },
      config: {
        features: { plugins: false },
        analytics: { enabled: false },
        model_provider: 'parley',
        model_providers: {
          parley: {
            name: 'Parley',
            base_url: server.url,
            wire_api: 'responses',
            env_key: 'PARLEY_CODEX_API_KEY',
            request_max_retries: 0,
            stream_max_retries: 0,
          },
        },
      },
    });
    const threadOptions = {
      model: 'gpt-5-codex',
      skipGitRepoCheck: true,
      approvalPolicy: 'never' as const,
      sandboxMode: 'workspace-write' as const,
      workingDirectory: cwd,
    };
    let parleyThread: string | undefined;
    let directThread: string | undefined;
    const parleyTurn = async (resume: boolean) => {
      for await (const event of backend.execute({
        sessionId: 'bench',
        prompt: PROMPT,
        cwd,
        ...(resume && parleyThread ? { nativeSessionId: parleyThread, isNewSession: false } : {}),
      }).events)
        if (event.type === 'metadata_update' && event.metadata.nativeSessionId)
          parleyThread = event.metadata.nativeSessionId;
    };
    // The same back end with someone to ask: the turn runs through `codex app-server` (the reply asks nothing).
    let askingThread: string | undefined;
    const appServerTurn = async (resume: boolean) => {
      for await (const event of backend.execute({
        sessionId: 'bench-asking',
        prompt: PROMPT,
        cwd,
        askApproval: () => Promise.resolve('deny'),
        ...(resume && askingThread ? { nativeSessionId: askingThread, isNewSession: false } : {}),
      }).events)
        if (event.type === 'metadata_update' && event.metadata.nativeSessionId)
          askingThread = event.metadata.nativeSessionId;
    };
    let recorded: ThreadEvent[] = [];
    const directTurn = async (resume: boolean) => {
      const thread =
        resume && directThread ? direct.resumeThread(directThread, threadOptions) : direct.startThread(threadOptions);
      const { events } = await thread.runStreamed(PROMPT);
      const seen: ThreadEvent[] = [];
      for await (const event of events as AsyncGenerator<ThreadEvent>) {
        seen.push(event);
        if (event.type === 'thread.started') directThread = event.thread_id;
      }
      recorded = seen;
    };

    // A warm-up turn on each side (Codex writes its skills and state on a new home's first run).
    server.enqueue({ text: ANSWER }, { text: ANSWER }, { text: ANSWER });
    await parleyTurn(false);
    await directTurn(false);
    await appServerTurn(false);

    const samples = {
      parleyNew: [] as number[],
      directNew: [] as number[],
      parleyResume: [] as number[],
      directResume: [] as number[],
      appServerNew: [] as number[],
      appServerResume: [] as number[],
    };
    for (let turn = 0; turn < turns; turn++) {
      server.enqueue(...Array.from({ length: 6 }, () => ({ text: ANSWER })));
      // Rotate which side goes first, so none always runs on a warmer machine.
      const sides = ['parley', 'direct', 'app-server'];
      const order = [...sides.slice(turn % 3), ...sides.slice(0, turn % 3)];
      for (const side of order) {
        if (side === 'parley') samples.parleyNew.push(await time(() => parleyTurn(false)));
        else if (side === 'direct') samples.directNew.push(await time(() => directTurn(false)));
        else samples.appServerNew.push(await time(() => appServerTurn(false)));
      }
      for (const side of order) {
        if (side === 'parley') samples.parleyResume.push(await time(() => parleyTurn(true)));
        else if (side === 'direct') samples.directResume.push(await time(() => directTurn(true)));
        else samples.appServerResume.push(await time(() => appServerTurn(true)));
      }
    }
    const own = await ownWork(parleyHome, parleyThread!, recorded, cwd);
    const overhead = (parley: number[], baseline: number[]) => {
      const difference = percentile(parley, 50) - percentile(baseline, 50);
      return `${formatMs(difference)} (${((difference / percentile(baseline, 50)) * 100).toFixed(1)} %)`;
    };
    return [
      heading,
      '',
      `One \`codex exec\` (or \`codex app-server\`) run per turn, ${turns} turns per side and kind; the resumed thread grows by a turn each time. The app-server path is not held to the 5 % target: it is the path that asks a person, where nobody could be asked before.`,
      '',
      table(
        ['', 'median', 'p95', 'vs SDK directly'],
        [
          row('new thread: Parley `execute`', samples.parleyNew, samples.directNew),
          row('new thread: Codex SDK directly (baseline)', samples.directNew),
          row(
            'new thread: Parley `execute` through codex app-server (approvals)',
            samples.appServerNew,
            samples.directNew,
          ),
          row('resumed thread: Parley `execute`', samples.parleyResume, samples.directResume),
          row('resumed thread: Codex SDK directly (baseline)', samples.directResume),
          row(
            'resumed thread: Parley `execute` through codex app-server (approvals)',
            samples.appServerResume,
            samples.directResume,
          ),
        ],
      ),
      '',
      `Overhead of the median: new thread ${overhead(samples.parleyNew, samples.directNew)}, resumed ${overhead(samples.parleyResume, samples.directResume)}; the CLI's own run varies by more than that from turn to turn.`,
      '',
      `Parley's own work in a resumed turn, measured apart (the recorded events of a real turn replayed through \`execute\` with the CLI replaced, ${OWN_TURNS} turns; it finds and reads the thread's rollout as a real turn does):`,
      '',
      table(
        ['', 'median', 'p95', 'share of a resumed turn'],
        [
          [
            'Parley `execute`, CLI replaced by the recorded events',
            formatMs(percentile(own.parley, 50)),
            formatMs(percentile(own.parley, 95)),
            `${((percentile(own.parley, 50) / percentile(samples.directResume, 50)) * 100).toFixed(2)} %`,
          ],
          [
            'the recorded events iterated (floor)',
            formatMs(percentile(own.floor, 50)),
            formatMs(percentile(own.floor, 95)),
            `${((percentile(own.floor, 50) / percentile(samples.directResume, 50)) * 100).toFixed(2)} %`,
          ],
        ],
      ),
    ].join('\n');
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}
