/**
 * Parley's overhead per turn on the Claude Agent SDK: the claude-sdk back end's `execute`,
 * consumed to its last event, beside calling the SDK's `query()` directly with the same options,
 * on the same fake Messages API, the same prompt and the same reply. The baseline drives the SDK
 * as Parley does (streaming input closed at the result); the plain string-prompt call is shown
 * too. Turns rotate between the sides, so drift in the machine's load hits all alike. Each turn is
 * a new session: one CLI start, one model request.
 *
 * Also measured: Parley's own CPU per turn, replaying a recorded turn's SDK messages through the
 * back end's mapper with no CLI (what Parley adds on top of the SDK, without the CLI's noise).
 *
 * Target: at most 5% overhead. `PARLEY_BENCH_TURNS` sets the turns per side (default 12).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { query, type Options, type SDKMessage, type SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import { createClaudeSdkBackend } from '../src/backends/index.js';
import { ClaudeTurnMapper } from '../src/backends/claude-sdk/turn-mapper.js';
import { reply, startFakeAnthropicServer } from '../test/fixtures/fake-anthropic-server.js';
import { formatMs, percentile, table } from './stats.js';

const here = dirname(fileURLToPath(import.meta.url));
const MODEL = 'claude-sonnet-4-5';
const PROMPT = 'Summarise the plan in two sentences.';
const ANSWER =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable, and the fixture keeps the parser honest when the CLI changes its format again.';

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 12);
  const server = await startFakeAnthropicServer({
    script: () => reply(ANSWER, { chunkSize: 12, usage: { input_tokens: 1_200, output_tokens: 60 } }),
  });
  const root = await mkdtemp(join(tmpdir(), 'parley-bench-claude-'));
  const cwd = join(root, 'workspace');
  const configDir = join(root, 'config');
  await mkdir(cwd);
  try {
    // The real SDK, with query() wrapped to note when Parley hands over to it (its setup time).
    let queryCalledAt = 0;
    const backend = createClaudeSdkBackend({
      configDir,
      cwd,
      apiKey: 'bench-key',
      baseURL: server.url,
      maxRetries: 0,
      inheritEnv: false,
      loadSdk: async () => {
        const sdk = await import('@anthropic-ai/claude-agent-sdk');
        return {
          ...sdk,
          query: (params: Parameters<typeof sdk.query>[0]) => {
            queryCalledAt = performance.now();
            return sdk.query(params);
          },
        };
      },
    });
    // What the back end passes to query() for a new session with no profile and no tools.
    const env = {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_AGENT_SDK_CLIENT_APP: 'parley',
      ANTHROPIC_API_KEY: 'bench-key',
      ANTHROPIC_BASE_URL: server.url,
      CLAUDE_CODE_MAX_RETRIES: '0',
      CLAUDE_CONFIG_DIR: configDir,
    };
    const directOptions = (sessionId: string): Options => ({
      cwd,
      env,
      settingSources: ['project'],
      includePartialMessages: true,
      sessionId,
      model: MODEL,
      permissionMode: 'default',
      systemPrompt: { type: 'preset', preset: 'claude_code' },
    });

    // CPU of this process (the SDK's host side, the fake API, and Parley), per turn: the CLI's own CPU is not in it.
    const directCpu: number[] = [];
    const parleyCpu: number[] = [];
    /** The plain way: a string prompt; the iterator ends when the CLI exits on its own. */
    const directString = async (): Promise<number> => {
      const started = performance.now();
      let text = '';
      for await (const message of query({ prompt: PROMPT, options: directOptions(randomUUID()) })) {
        if (message.type === 'result' && message.subtype === 'success') text = message.result;
      }
      const elapsed = performance.now() - started;
      if (text !== ANSWER) throw new Error(`direct query() answered ${JSON.stringify(text)}`);
      return elapsed;
    };
    /** The way Parley drives the SDK: streaming input, closed when the result arrives, text from the partial messages. */
    const direct = async (): Promise<number> => {
      const started = performance.now();
      const cpu = process.cpuUsage();
      let text = '';
      const input = new DirectInput(PROMPT);
      for await (const message of query({ prompt: input, options: directOptions(randomUUID()) })) {
        if (
          message.type === 'stream_event' &&
          message.event.type === 'content_block_delta' &&
          message.event.delta.type === 'text_delta'
        ) {
          text += message.event.delta.text;
        }
        if (message.type === 'result') input.close();
      }
      const elapsed = performance.now() - started;
      directCpu.push(cpuMs(cpu));
      if (text !== ANSWER) throw new Error(`direct query() answered ${JSON.stringify(text)}`);
      return elapsed;
    };
    const setupTimes: number[] = [];
    const parley = async (): Promise<number> => {
      const started = performance.now();
      const cpu = process.cpuUsage();
      queryCalledAt = 0;
      let text = '';
      let complete = false;
      for await (const event of backend.execute({ sessionId: randomUUID(), prompt: PROMPT, model: MODEL, cwd })
        .events) {
        if (event.type === 'text_delta') text += event.delta;
        if (event.type === 'metadata_update' && event.metadata.turnComplete) complete = true;
      }
      const elapsed = performance.now() - started;
      parleyCpu.push(cpuMs(cpu));
      setupTimes.push(queryCalledAt - started);
      if (text !== ANSWER || !complete)
        throw new Error(`Parley's turn answered ${JSON.stringify(text)} (complete: ${complete})`);
      return elapsed;
    };

    // Warm the page cache and the SDK's module load for all before timing.
    await direct();
    await directString();
    await parley();
    const directTimes: number[] = [];
    const stringTimes: number[] = [];
    const parleyTimes: number[] = [];
    const sides: Array<[() => Promise<number>, number[]]> = [
      [direct, directTimes],
      [parley, parleyTimes],
      [directString, stringTimes],
    ];
    for (let index = 0; index < turns; index++) {
      // Rotate which side goes first, so no side always runs right after another's CLI exit.
      for (let offset = 0; offset < sides.length; offset++) {
        const [measure, samples] = sides[(index + offset) % sides.length]!;
        samples.push(await measure());
      }
    }

    const mapping = await mapperCost();
    const directMedian = percentile(directTimes, 50);
    const parleyMedian = percentile(parleyTimes, 50);
    const overhead = (parleyMedian / directMedian - 1) * 100;
    // Paired: each round's Parley turn over the same round's direct turn, so slow phases of the machine cancel out.
    const paired = percentile(
      parleyTimes.map((time, index) => time / directTimes[index]!),
      50,
    );
    const setup = percentile(setupTimes.slice(1), 50);
    const directCpuMedian = percentile(directCpu.slice(1), 50);
    const parleyCpuMedian = percentile(parleyCpu.slice(1), 50);
    const stringMedian = percentile(stringTimes, 50);
    const rows = [
      [
        'SDK `query()` directly, streaming input closed at the result (baseline)',
        formatMs(directMedian),
        formatMs(percentile(directTimes, 90)),
        '1.00×',
        '—',
      ],
      [
        'Parley claude-sdk `execute` (consumed fully)',
        formatMs(parleyMedian),
        formatMs(percentile(parleyTimes, 90)),
        `${(parleyMedian / directMedian).toFixed(3)}×`,
        `${signed(overhead)}% of medians; ${signed((paired - 1) * 100)}% paired median (target ≤ 5%)`,
      ],
      [
        'SDK `query()` directly, string prompt (waits for the CLI to exit)',
        formatMs(stringMedian),
        formatMs(percentile(stringTimes, 90)),
        `${(stringMedian / directMedian).toFixed(3)}×`,
        '—',
      ],
      [
        'host-process CPU per turn: SDK `query()` directly (streaming input)',
        formatMs(directCpuMedian),
        formatMs(percentile(directCpu.slice(1), 90)),
        '1.00×',
        '—',
      ],
      [
        'host-process CPU per turn: Parley claude-sdk `execute`',
        formatMs(parleyCpuMedian),
        formatMs(percentile(parleyCpu.slice(1), 90)),
        `${(parleyCpuMedian / directCpuMedian).toFixed(3)}×`,
        `${signed((parleyCpuMedian / directCpuMedian - 1) * 100)}% of host CPU; ${signed(((parleyCpuMedian - directCpuMedian) / directMedian) * 100)}% of a turn`,
      ],
      [
        "Parley's setup before `query()` (ids, transcript lookup, options)",
        formatMs(setup),
        '—',
        `${((setup / directMedian) * 100).toFixed(3)}% of a turn`,
        '—',
      ],
      [
        "Parley's mapping of one recorded turn, no CLI (its own CPU)",
        formatMs(mapping),
        '—',
        `${((mapping / directMedian) * 100).toFixed(3)}% of a turn`,
        '—',
      ],
    ];
    return [
      '## claude-sdk back end: overhead per turn over the Agent SDK',
      '',
      `${turns} turns per side, alternating, each a new session (one CLI start, one streamed model request) against the fake Messages API on 127.0.0.1; model ${MODEL}; Claude Agent SDK 0.3.329 / Claude Code 2.1.329.`,
      '',
      table(['per turn', 'median', 'p90', 'ratio', 'overhead'], rows),
    ].join('\n');
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(1)}`;
}

/** A one-message streaming prompt, closed by the caller when the result arrives. */
class DirectInput implements AsyncIterable<SDKUserMessage> {
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(private readonly prompt: string) {}

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SDKUserMessage> {
    yield { type: 'user', message: { role: 'user', content: this.prompt }, parent_tool_use_id: null };
    while (!this.closed) await new Promise<void>((resolve) => (this.wake = resolve));
  }
}

/** Median time to map the recorded tool-loop turn (39 SDK messages) to Parley events, over many runs. */
async function mapperCost(): Promise<number> {
  const lines = (await readFile(join(here, '../test/fixtures/claude-sdk/tool-loop.jsonl'), 'utf8')).trim().split('\n');
  const messages = lines
    .map((line) => JSON.parse(line) as SDKMessage | { thrown: string })
    .filter((entry): entry is SDKMessage => !('thrown' in entry));
  const samples: number[] = [];
  for (let round = 0; round < 2_000; round++) {
    const started = performance.now();
    const mapper = new ClaudeTurnMapper({
      clock: Date.now,
      newId: (kind) => `${kind}_${randomUUID()}`,
      nativeSessionId: 'bench',
      baseline: { totalCostUsd: 0, totalApiDurationMs: 0 },
      endpoint: 'bench',
      model: MODEL,
    });
    let count = 0;
    for (const message of messages) count += mapper.map(message).length;
    count += mapper.finish({ aborted: false }).length;
    samples.push(performance.now() - started);
    if (count === 0) throw new Error('the mapper produced no events');
  }
  return percentile(samples.slice(200), 50);
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
