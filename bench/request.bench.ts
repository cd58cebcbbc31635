/**
 * Request building and appends during compaction, on the file store.
 *
 * 1. `buildRequest` on a session holding ~90k tokens of history (user and assistant messages, tool
 *    calls with code output), with a snapshot of this repository as the project (a real git repository
 *    with this source tree, a CLAUDE.md and a dozen commits; a snapshot, so the other work going on in
 *    the checkout does not change the context between runs):
 *    cold (a fresh manager: log loaded, every message counted) and cached (counts cached), beside
 *    seed 002's way (render everything, count the whole request again) and the floor (joining the
 *    same strings, no counting).
 * 2. `addMessage` latency (durable append) with no compaction running vs while one runs (a slow
 *    summarizer that answers only after the appends).
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  MAIN_CONVERSATION,
  TokenCounter,
  estimateTokens,
  loadTokenizer,
  type UnsequencedEvent,
} from '../src/conversation/index.js';
import { createSessionManager, projectConversation, type SessionManager } from '../src/sessions/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';
import { codeSample, proseSample, seededRandom } from './tokens.bench.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TARGET_TOKENS = 90_000;

function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Wall time and CPU time (user + system, this process) of one call: CPU time does not grow when other processes load the machine. */
async function timed(samples: { wall: number[]; cpu: number[] }, work: () => unknown): Promise<void> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  samples.wall.push(performance.now() - started);
  const used = process.cpuUsage(cpu);
  samples.cpu.push((used.user + used.system) / 1000);
}

const samples = () => ({ wall: [] as number[], cpu: [] as number[] });

/** Appends a realistic tool-using history until the session holds about `target` tokens. */
async function fillSession(manager: SessionManager, sessionId: string, target: number): Promise<number> {
  const prose = proseSample();
  const code = codeSample();
  const random = seededRandom(42);
  const slice = (text: string, size: number) => {
    const start = Math.floor(random() * Math.max(1, text.length - size));
    return text.slice(start, start + size);
  };
  let tokens = 0;
  let turn = 0;
  while (tokens < target) {
    const now = 1_700_000_000_000 + turn * 1000;
    const userText = slice(prose, 200 + Math.floor(random() * 600));
    const answer = slice(prose, 400 + Math.floor(random() * 1600));
    const output = slice(code, 800 + Math.floor(random() * 3200));
    const unsequenced: UnsequencedEvent[] = [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: { id: `u${turn}`, type: 'user_message', content: userText, createdAt: now },
      },
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: `c${turn}`,
          type: 'tool_use',
          toolUseId: `toolu_${turn}`,
          name: 'Read',
          input: { file_path: `src/module-${turn}.ts` },
          status: 'success',
          createdAt: now,
        },
      },
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: `r${turn}`,
          type: 'tool_result',
          toolUseId: `toolu_${turn}`,
          content: output,
          isError: false,
          createdAt: now,
        },
      },
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        block: { id: `a${turn}`, type: 'assistant_text', content: answer, createdAt: now },
      },
    ];
    await manager.appendEvents(sessionId, unsequenced);
    tokens += estimateTokens(userText) + estimateTokens(answer) + estimateTokens(output) + 40;
    turn++;
  }
  return turn;
}

/** A real git repository holding a copy of this source tree, with a CLAUDE.md and a dozen commits. */
async function makeProject(folder: string): Promise<void> {
  await cp(join(root, 'src'), join(folder, 'src'), { recursive: true });
  await cp(join(root, 'package.json'), join(folder, 'package.json'));
  await writeFile(
    join(folder, 'CLAUDE.md'),
    '# Parley\n\nTypeScript strict, ESM, relative imports end in .js. Run `npm test` before committing.\n',
  );
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=Bench', '-c', 'user.email=bench@example.com', '-c', 'commit.gpgsign=false', ...args],
      { cwd: folder, stdio: 'pipe' },
    );
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'Import the source tree');
  for (let index = 1; index < 12; index++) {
    await writeFile(join(folder, 'CHANGELOG.md'), `change ${index}\n`);
    git('add', '.');
    git('commit', '-q', '-m', `Change number ${index}: adjust the changelog`);
  }
}

async function buildSection(dataDir: string, projectRoot: string): Promise<string> {
  let manager = await createSessionManager({ dataDir, projectRoot });
  const { sessionId } = await manager.getOrCreateSession({
    type: 'task',
    agentType: 'dev',
    featureId: 'bench',
    taskId: 'build',
    taskState: 'in_dev',
  });
  const turns = await fillSession(manager, sessionId, TARGET_TOKENS - 3_000);
  await manager.close();

  // Cold: a fresh manager each time (the log is read and every message counted on the first build).
  const cold = samples();
  let request = undefined as Awaited<ReturnType<SessionManager['buildRequest']>> | undefined;
  for (let run = 0; run < 5; run++) {
    manager = await createSessionManager({ dataDir, projectRoot });
    await timed(cold, async () => (request = await manager.buildRequest(sessionId, 'What is left to do?')));
    if (run < 4) await manager.close();
  }
  const built = request!;

  // Cached, interleaved with seed 002's way and the floor, over the same history.
  const conversation = await manager.loadConversation(sessionId);
  const units = projectConversation({ blocks: conversation.blocks }).messages;
  const head = built.systemPrompt.slice(0, built.systemPrompt.indexOf('# Recent Conversation'));
  // Seed 002: render the whole request, then estimate the whole text again.
  const seedWay = () =>
    estimateTokens(
      [head, '# Recent Conversation', ...units.map((unit) => unit.content)].join('\n\n') + built.userPrompt,
    );
  const floor = () => ['# Recent Conversation', ...units.map((unit) => unit.content)].join('\n\n').length;
  // Counts not cached (a new counter), everything else the same: the cost of counting 90k tokens.
  const freshCounter = () => {
    const counter = new TokenCounter();
    let total = 0;
    for (const unit of units) total += counter.countKeyed(unit.key, unit.content);
    return total;
  };
  const cached = samples();
  const preview = samples();
  const seed = samples();
  const floors = samples();
  const counting = samples();
  for (let run = 0; run < 30; run++) {
    await timed(cached, () => manager.buildRequest(sessionId, 'What is left to do?'));
    await timed(preview, () => manager.previewRequest(sessionId, 'What is left to do?'));
    await timed(seed, seedWay);
    await timed(floors, floor);
    if (run % 6 === 0) await timed(counting, freshCounter);
  }
  await manager.close();

  const row = (name: string, values: { wall: number[]; cpu: number[] }, target = '') => [
    name,
    formatMs(median(values.wall)),
    formatMs(percentile(values.wall, 95)),
    formatMs(median(values.cpu)),
    target,
    ratio(median(values.cpu), median(seed.cpu)),
  ];
  const rows = [
    row(
      '**Parley `buildRequest`, counts cached** (context rebuilt: file tree, notes, `git log` checked, store)',
      cached,
      '< 20 ms',
    ),
    row('Parley `previewRequest` (same, no writes)', preview),
    row('**Parley `buildRequest`, cold** (fresh manager: log read, every message counted)', cold),
    row('counting the history once, no cache (part of cold)', counting),
    row("baseline: seed 002's way (render the whole request, count it all again)", seed),
    row('floor: joining the same history strings, no counting', floors),
  ];
  return [
    `### buildRequest on a session at ${Math.round(built.totalTokens / 1000)}k tokens`,
    '',
    `${turns} turns (user message, tool call with code output, assistant answer) on the file store; the request holds ${built.totalTokens.toLocaleString('en-US')} tokens (${built.messages} units; budget 100k, so nothing is cut), context from a git snapshot of this repository (${'`src/`'} tree, CLAUDE.md, 12 commits). Cached: median of 30, interleaved with the baseline and floor; cold: 5 fresh managers. Wall time depends on the machine's load (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores during this run); CPU time is this process's own work.`,
    '',
    table(['operation', 'wall median', 'wall p95', 'CPU median', 'target', 'CPU vs seed 002 way'], rows),
  ].join('\n');
}

async function appendSection(dataDir: string): Promise<string> {
  let releaseSummary: (text: string) => void = () => {};
  let summarizerCalled: () => void = () => {};
  const called = new Promise<void>((resolve) => (summarizerCalled = resolve));
  const manager = await createSessionManager({
    dataDir,
    summarize: () => {
      summarizerCalled();
      return new Promise<string>((resolve) => (releaseSummary = resolve));
    },
  });
  const quiet = (await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' })).sessionId;
  const busy = (await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' })).sessionId;
  const prose = proseSample(200_000);
  const random = seededRandom(9);
  const message = () => {
    const start = Math.floor(random() * (prose.length - 1200));
    return prose.slice(start, start + 1000);
  };
  for (let index = 0; index < 60; index++) {
    await manager.addMessage(quiet, { role: index % 2 ? 'assistant' : 'user', content: message() });
    await manager.addMessage(busy, { role: index % 2 ? 'assistant' : 'user', content: message() });
  }
  const compaction = manager.forceCompact(busy).catch(() => undefined);
  await called;

  const rounds = 300;
  const without: number[] = [];
  const during: number[] = [];
  for (let index = 0; index < rounds; index++) {
    // Interleaved: the same disk, the same moment, one session compacting and one not.
    let started = performance.now();
    await manager.addMessage(quiet, { role: 'user', content: message() });
    without.push(performance.now() - started);
    started = performance.now();
    await manager.addMessage(busy, { role: 'user', content: message() });
    during.push(performance.now() - started);
  }
  const stillRunning = manager.getCompactionStatus(busy).running;
  releaseSummary(
    JSON.stringify({ completed: ['benchmark'], inProgress: [], pending: ['more'], decisions: [], blockers: [] }),
  );
  await compaction;
  await manager.close();

  const row = (name: string, samples: number[]) => [
    name,
    formatMs(percentile(samples, 50)),
    formatMs(percentile(samples, 99)),
    formatMs(Math.max(...samples)),
    ratio(percentile(samples, 50), percentile(without, 50)),
  ];
  return [
    '### Appends while a compaction runs',
    '',
    `\`addMessage\` of ~1 KB (durable: file store, fsync), ${rounds} per session, interleaved between a session with no compaction and one whose compaction is waiting on a slow summarizer (still running at the end: ${stillRunning}). Target: as fast as without one.`,
    '',
    table(
      ['addMessage', 'p50', 'p99', 'max', 'vs without'],
      [row('without a compaction', without), row('**while a compaction runs**', during)],
    ),
  ].join('\n');
}

export async function run(): Promise<string> {
  await loadTokenizer();
  const dataDir = await mkdtemp(join(tmpdir(), 'parley-bench-request-'));
  const appendDir = await mkdtemp(join(tmpdir(), 'parley-bench-append-'));
  const projectDir = await mkdtemp(join(tmpdir(), 'parley-bench-project-'));
  try {
    await makeProject(projectDir);
    const build = await buildSection(dataDir, projectDir);
    const append = await appendSection(appendDir);
    return ['## Request building', '', build, '', append].join('\n');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
    await rm(appendDir, { recursive: true, force: true });
    await rm(projectDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await run());
}
