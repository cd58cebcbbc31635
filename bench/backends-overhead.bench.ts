/**
 * Parley's overhead per turn on the openai-compatible and gemini-cli back ends, beside their
 * baselines on the same fake servers with the same prompt and reply:
 * - openai-compatible: `execute` consumed to its last event vs the `openai` client's streaming
 *   `chat.completions.create` iterated directly (floor: the fake server's round trip with fetch);
 * - gemini-cli: `execute` vs spawning the CLI with the same arguments and reading its stdout.
 * Turns alternate between the sides so drifts in load hit both. Targets: at most 5% overhead.
 * `PARLEY_BENCH_TURNS` sets OpenAI turns per side (default 200), `PARLEY_BENCH_CLI_TURNS` CLI runs (default 4).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createGeminiCliBackend, createOpenAiCompatibleBackend, locateGeminiCli } from '../src/backends/index.js';
import { startFakeGeminiServer } from '../test/fixtures/fake-gemini-server.js';
import { startFakeOpenAiServer } from '../test/fixtures/fake-openai-server.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const ANSWER =
  'The plan has three steps: read the failing test, fix the parser so it accepts unknown records, and add a fixture from a real session. ' +
  'Each step is small and reviewable.';

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

async function openAiSection(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 200);
  const server = await startFakeOpenAiServer();
  try {
    const backend = createOpenAiCompatibleBackend({
      baseURL: server.url,
      apiKey: 'bench',
      model: 'fake-model',
      maxRetries: 0,
    });
    const client = new OpenAI({ baseURL: server.url, apiKey: 'bench', maxRetries: 0 });
    const parley: number[] = [];
    const direct: number[] = [];
    const floor: number[] = [];
    for (let turn = 0; turn < turns + 10; turn++) {
      const warm = turn < 10;
      server.enqueue({ text: ANSWER }, { text: ANSWER }, { text: ANSWER });
      const a = await time(async () => {
        for await (const _event of backend.execute({
          sessionId: 'bench',
          prompt: 'Summarise the plan.',
          systemPrompt: 'Be brief.',
        }).events);
      });
      const b = await time(async () => {
        const stream = await client.chat.completions.create({
          model: 'fake-model',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Summarise the plan.' },
          ],
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const _chunk of stream);
      });
      const c = await time(async () => {
        const response = await fetch(`${server.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'fake-model',
            messages: [{ role: 'user', content: 'Summarise the plan.' }],
            stream: true,
          }),
        });
        await response.text();
      });
      if (warm) continue;
      parley.push(a);
      direct.push(b);
      floor.push(c);
    }
    return [
      `### openai-compatible: one streamed turn (${turns} turns per side, ${ANSWER.split(' ').length} text chunks)`,
      '',
      table(
        ['', 'median', 'p95', 'vs direct client'],
        [
          row('Parley `execute`', parley, direct),
          row('`openai` client directly (baseline)', direct),
          row('fetch + read body (floor)', floor, direct),
        ],
      ),
    ].join('\n');
  } finally {
    await server.close();
  }
}

async function geminiSection(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_CLI_TURNS'] ?? 4);
  const server = await startFakeGeminiServer();
  const root = await mkdtemp(join(tmpdir(), 'parley-bench-gemini-'));
  const cwd = join(root, 'workspace');
  const home = join(root, 'home');
  await mkdir(cwd);
  try {
    const backend = createGeminiCliBackend({ apiKey: 'bench', baseUrl: server.url, cliHome: home });
    const cli = locateGeminiCli().path;
    // One warm-up run also writes the settings both sides use.
    server.enqueue({ text: ANSWER });
    for await (const _event of backend.execute({ sessionId: 'warm', prompt: 'hi', cwd }).events);
    const parley: number[] = [];
    const direct: number[] = [];
    for (let turn = 0; turn < turns; turn++) {
      server.enqueue({ text: ANSWER }, { text: ANSWER });
      parley.push(
        await time(async () => {
          for await (const _event of backend.execute({ sessionId: 'bench', prompt: 'Summarise the plan.', cwd })
            .events);
        }),
      );
      direct.push(
        await time(
          () =>
            new Promise<void>((done, fail) => {
              const child = spawn(
                process.execPath,
                [cli, '--model', 'gemini-2.5-flash', '--output-format', 'stream-json', '--prompt=Summarise the plan.'],
                {
                  cwd,
                  stdio: ['ignore', 'pipe', 'ignore'],
                  env: {
                    PATH: process.env['PATH'],
                    HOME: process.env['HOME'],
                    GEMINI_API_KEY: 'bench',
                    GOOGLE_GEMINI_BASE_URL: server.url,
                    GEMINI_CLI_HOME: home,
                    GEMINI_CLI_TRUST_WORKSPACE: 'true',
                    GEMINI_CLI_NO_RELAUNCH: 'true',
                  },
                },
              );
              child.stdout.resume();
              child.once('error', fail);
              child.once('close', () => done());
            }),
        ),
      );
    }
    return [
      `### gemini-cli: one headless CLI run per turn (${turns} runs per side)`,
      '',
      table(
        ['', 'median', 'p95', 'vs direct CLI'],
        [row('Parley `execute`', parley, direct), row('CLI spawned directly (baseline)', direct)],
      ),
    ].join('\n');
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

export async function run(): Promise<string> {
  const sections = [
    '## Back ends: openai-compatible and gemini-cli per-turn overhead (target ≤ 5%)',
    '',
    await openAiSection(),
    '',
  ];
  try {
    if (Number(process.env['PARLEY_BENCH_CLI_TURNS'] ?? 4) > 0) sections.push(await geminiSection());
  } catch (error) {
    sections.push(`### gemini-cli: not measured (${error instanceof Error ? error.message : String(error)})`);
  }
  return sections.join('\n');
}
