/**
 * Process failures of the gemini-cli back end, with tiny stand-in CLI scripts in
 * place of the real CLI: a crash, an exit after an API error, an abort that must stop the whole
 * process group, a missing binary.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGeminiCliBackend } from '../../../src/backends/index.js';
import { assistantText, checkEventStream, collect, finalMetadata, mainBlocks, systemBlocks } from '../conformance.js';

let root: string;
let workspace: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'parley-gemini-process-'));
  workspace = join(root, 'workspace');
  await mkdir(workspace);
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** Writes a stand-in CLI that prints the given stream-json events, then runs `then`. */
async function fakeCli(name: string, events: unknown[], then: string): Promise<string> {
  const path = join(root, `${name}.mjs`);
  const lines = events
    .map((event) => `process.stdout.write(${JSON.stringify(JSON.stringify(event) + '\n')});`)
    .join('\n');
  await writeFile(path, `${lines}\n${then}\n`);
  return path;
}

const init = {
  type: 'init',
  timestamp: '2026-01-01T00:00:00.000Z',
  session_id: '11111111-2222-3333-4444-555555555555',
  model: 'gemini-2.5-flash',
};
const delta = (content: string) => ({
  type: 'message',
  timestamp: '2026-01-01T00:00:00.000Z',
  role: 'assistant',
  content,
  delta: true,
});

function backend(cliPath: string, extra: Parameters<typeof createGeminiCliBackend>[0] = {}) {
  return createGeminiCliBackend({
    apiKey: 'dummy',
    baseUrl: 'http://127.0.0.1:9',
    cliHome: join(root, 'home'),
    cliPath,
    ...extra,
  });
}

describe('gemini-cli back end: process failures', () => {
  it('runs the CLI with the model, session, approval mode and prompt as arguments, and only the configured endpoint in its environment', async () => {
    const cli = await fakeCli(
      'echo-args',
      [init],
      `const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => /GEMINI|GOOGLE|TMPDIR|SECRET/.test(key)));
       process.stdout.write(JSON.stringify({ type: 'message', role: 'assistant', content: JSON.stringify({ args: process.argv.slice(2), env }), delta: true }) + '\\n');
       process.stdout.write(JSON.stringify({ type: 'result', status: 'success', stats: { input_tokens: 10, output_tokens: 2, cached: 4, input: 6 } }) + '\\n');`,
    );
    process.env['GOOGLE_APPLICATION_CREDENTIALS'] = '/secret/key.json';
    process.env['GOOGLE_GENAI_USE_VERTEXAI'] = 'true';
    try {
      const events = await collect(
        backend(cli).execute({
          sessionId: 'not-a-uuid',
          nativeSessionId: '22222222-3333-4444-5555-666666666666',
          isNewSession: true,
          prompt: '--help me',
          model: 'gemini-2.5-pro',
          profile: { name: 'writer', instructions: 'x', permissionMode: 'acceptEdits' },
          cwd: workspace,
        }),
      );
      const seen = JSON.parse(assistantText(events)) as { args: string[]; env: Record<string, string> };
      expect(seen.args).toEqual([
        '--model',
        'gemini-2.5-pro',
        '--output-format',
        'stream-json',
        '--session-id',
        '22222222-3333-4444-5555-666666666666',
        '--approval-mode',
        'auto_edit',
        '--prompt=--help me',
      ]);
      expect(seen.env).toEqual({
        GEMINI_API_KEY: 'dummy',
        GEMINI_CLI_HOME: join(root, 'home'),
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
        GEMINI_CLI_NO_RELAUNCH: 'true',
        GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9',
        TMPDIR: join(root, 'home', 'tmp'),
      });
      expect(finalMetadata(events)).toMatchObject({
        usage: { inputTokens: 6, cacheReadTokens: 4, outputTokens: 2 },
        model: 'gemini-2.5-flash',
        contextWindow: 1_048_576,
        nativeSessionId: '11111111-2222-3333-4444-555555555555',
        stopReason: 'end_turn',
      });
      expect(finalMetadata(events).costUsd).toBeCloseTo((6 * 1.25 + 2 * 10 + 4 * 0.125) / 1e6, 12);
    } finally {
      delete process.env['GOOGLE_APPLICATION_CREDENTIALS'];
      delete process.env['GOOGLE_GENAI_USE_VERTEXAI'];
    }
  });

  it('a CLI that crashes mid-answer ends the turn with an error block holding its stderr tail; the partial text is kept', async () => {
    const cli = await fakeCli(
      'crash',
      [init, delta('Half an ')],
      `process.stderr.write('Ripgrep is not available. Falling back to GrepTool.\\nFATAL ERROR: JavaScript heap out of memory\\n'); process.kill(process.pid, 'SIGSEGV');`,
    );
    const events = await collect(backend(cli).execute({ sessionId: 's', prompt: 'x', cwd: workspace }));
    checkEventStream(events);
    expect(assistantText(events)).toBe('Half an ');
    const error = systemBlocks(events, 'error')[0]!;
    expect(error.data).toMatchObject({ code: 'PROCESS_FAILED', retryable: true });
    expect(error.content).toContain('killed by SIGSEGV');
    expect(error.content).toContain('FATAL ERROR: JavaScript heap out of memory');
    expect(error.content).not.toContain('Ripgrep');
    expect(finalMetadata(events)).toMatchObject({ costUnknown: true, stopReason: 'error', turnComplete: true });
  });

  it('an API error result with the exit code HTTP status mod 256 becomes RATE_LIMITED', async () => {
    const cli = await fakeCli(
      'rate-limited',
      [
        init,
        {
          type: 'result',
          status: 'error',
          error: { type: 'unknown', message: '[API Error: Quota exceeded]' },
          stats: { input_tokens: 0, output_tokens: 0 },
        },
      ],
      'process.exit(173);',
    );
    const events = await collect(backend(cli).execute({ sessionId: 's', prompt: 'x', cwd: workspace }));
    expect(systemBlocks(events, 'error')[0]).toMatchObject({
      data: { code: 'RATE_LIMITED', status: 429, retryable: true },
    });
  });

  it('a tool call left open by a crash is closed as an error', async () => {
    const cli = await fakeCli(
      'tool-crash',
      [
        init,
        {
          type: 'tool_use',
          timestamp: 't',
          tool_name: 'run_shell_command',
          tool_id: 'shell_1',
          parameters: { command: 'ls' },
        },
      ],
      'process.exit(1);',
    );
    const events = await collect(backend(cli).execute({ sessionId: 's', prompt: 'x', cwd: workspace }));
    checkEventStream(events);
    expect(mainBlocks(events).find((block) => block.type === 'tool_use')).toMatchObject({ status: 'error' });
    expect(systemBlocks(events, 'error')[0]?.content).toContain('exited with code 1');
  });

  it('abort stops the CLI and what it started (its process group) and ends the turn gracefully', async () => {
    const pidFile = join(root, 'grandchild.pid');
    const cli = await fakeCli(
      'hang',
      [init, delta('Working ')],
      // The grandchild shares stdout, so the turn's stdout only closes once it is gone too.
      `import { spawn } from 'node:child_process'; import { writeFileSync } from 'node:fs';
       const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: ['ignore', 'inherit', 'inherit'] });
       writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
       process.stdout.write(${JSON.stringify(JSON.stringify(delta('still working')) + '\n')});
       setInterval(() => {}, 1000);`,
    );
    const controller = new AbortController();
    const events = await collect(
      backend(cli).execute({ sessionId: 's', prompt: 'x', cwd: workspace, signal: controller.signal }),
      (event) => {
        if (event.type === 'text_delta' && event.delta === 'still working') controller.abort();
      },
    );
    checkEventStream(events);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(systemBlocks(events, 'error')).toHaveLength(0);
    expect(assistantText(events)).toBe('Working still working');
    expect(finalMetadata(events)).toMatchObject({ stopReason: 'aborted', turnComplete: true });
    expect(await isGone(Number(await readFile(pidFile, 'utf8')))).toBe(true);
  });

  it('a Node.js binary that cannot be started gives PROCESS_FAILED naming how to install', async () => {
    const events = await collect(
      backend('unused.js', { nodePath: join(root, 'no-such-node') }).execute({
        sessionId: 's',
        prompt: 'x',
        cwd: workspace,
      }),
    );
    checkEventStream(events);
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'PROCESS_FAILED' } });
    expect(systemBlocks(events, 'error')[0]?.content).toContain('npm install @google/gemini-cli@0.61.0');
  });

  it('without a GEMINI_API_KEY no process starts and the error says which variable to set', async () => {
    const events = await collect(
      createGeminiCliBackend({ cliPath: 'unused.js', cliHome: join(root, 'home') }).execute({
        sessionId: 's',
        prompt: 'x',
        cwd: workspace,
      }),
    );
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'AUTHENTICATION_FAILED' } });
    expect(systemBlocks(events, 'error')[0]?.content).toContain('GEMINI_API_KEY');
    expect(finalMetadata(events)).toMatchObject({ costUsd: 0, turnComplete: true });
  });
});

/** Gone: no such process, or a zombie waiting for init to reap it. */
async function isGone(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
