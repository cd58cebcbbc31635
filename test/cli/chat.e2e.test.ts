/**
 * `parley chat`, `parley sessions` and `parley show` as processes, on the offline scripted back end
 * and through the real `openai` and `@anthropic-ai/sdk` clients against the local fake servers.
 */
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allMessageText,
  reply,
  startFakeAnthropicServer,
  type FakeAnthropicServer,
} from '../fixtures/fake-anthropic-server.js';
import { startFakeGeminiServer, type FakeGeminiServer } from '../fixtures/fake-gemini-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { runParley } from '../helpers/run-parley.js';

interface SessionJson {
  sessionId: string;
  type: string;
  stats: { totalMessages: number };
}

describe.sequential('parley chat', () => {
  let project: string;
  let openai: FakeOpenAiServer;
  let anthropic: FakeAnthropicServer;
  let gemini: FakeGeminiServer;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-chat-'));
    [openai, anthropic, gemini] = await Promise.all([
      startFakeOpenAiServer({ models: ['fake-model'] }),
      startFakeAnthropicServer(),
      startFakeGeminiServer(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    await rm(project, { recursive: true, force: true });
  });

  it('with no key anywhere runs on the scripted back end, says so, and prints the new session id', async () => {
    const result = await runParley(['chat', 'hello there'], { cwd: project });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('hello there');
    expect(result.stderr).toContain('scripted back end');
    const id = /session: (\S+)/.exec(result.stderr)?.[1];
    expect(id).toBeTruthy();

    const next = await runParley(['chat', '--session', id!, 'and again'], { cwd: project });
    expect(next.code).toBe(0);
    expect(next.stderr).not.toContain('session:');

    const listed = await runParley(['sessions', '--json'], { cwd: project });
    const sessions = JSON.parse(listed.stdout) as SessionJson[];
    expect(sessions.find((session) => session.sessionId === id)?.stats.totalMessages).toBe(4);

    const shown = await runParley(['show', id!], { cwd: project });
    expect(shown.stdout).toContain('> hello there');
    expect(shown.stdout).toContain('> and again');
    expect(shown.stdout.indexOf('hello there')).toBeLessThan(shown.stdout.indexOf('and again'));
  });

  it('reads the message from standard input, and refuses an empty one without touching anything', async () => {
    const piped = await runParley(['chat'], { cwd: project, input: 'from a pipe' });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('from a pipe');
    const before = await runParley(['sessions', '--json'], { cwd: project });
    const empty = await runParley(['chat'], { cwd: project, input: '   ' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('needs a message');
    const after = await runParley(['sessions', '--json'], { cwd: project });
    expect(JSON.parse(after.stdout)).toHaveLength((JSON.parse(before.stdout) as unknown[]).length);
  });

  it('an unknown session or back end is a clear error', async () => {
    const missing = await runParley(['chat', '--session', 'nope', 'hi'], { cwd: project });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('No session "nope"');
    const unknown = await runParley(['chat', '--backend', 'telepathy', 'hi'], { cwd: project });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('telepathy');
  });

  it('streams through the real openai client from the fake OpenAI server, with managed request building', async () => {
    openai.enqueue({ text: 'Hello from the fake OpenAI model', usage: { prompt_tokens: 40, completion_tokens: 8 } });
    const result = await runParley(['chat', '--backend', 'openai-compatible', '--model', 'fake-model', 'what is up'], {
      cwd: project,
      env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url },
    });
    expect(result.stderr).not.toContain('error');
    expect(result.stdout).toContain('Hello from the fake OpenAI model');
    const request = openai.completions().at(-1)!;
    const messages = request['messages'] as Array<{ role: string; content: string }>;
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content).toContain('# Your Role');
    // `parley chat` offers the model no tools, and its system prompt says so.
    expect(request['tools']).toBeUndefined();
    expect(messages[0]!.content).not.toContain('Allowed tools');
    expect(messages[0]!.content).toContain('No tools are available in this conversation.');
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'what is up' });
  });

  it('streams through the real @anthropic-ai/sdk client from the fake Messages API', async () => {
    anthropic.enqueue(reply('Hello from the fake Claude'));
    const result = await runParley(['chat', '--backend', 'anthropic-api', 'hi claude'], {
      cwd: project,
      env: { ANTHROPIC_API_KEY: 'dummy', ANTHROPIC_BASE_URL: anthropic.url },
    });
    expect(result.stdout).toContain('Hello from the fake Claude');
    expect(result.code).toBe(0);
  });

  it('a failing back end ends the turn with an error that says what to do, and exits non-zero', async () => {
    // 401 is not retried by the client (5xx would be, as a user would want).
    openai.enqueue({
      type: 'error',
      status: 401,
      body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } },
    });
    const result = await runParley(['chat', '--backend', 'openai-compatible', '--model', 'fake-model', 'fail please'], {
      cwd: project,
      env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('-- error:');
    expect(result.stdout).toContain('OPENAI_API_KEY');
  });

  it('runs on the claude-sdk back end (the real Agent SDK and its CLI) and resumes the native session with --session', async () => {
    const env = { ANTHROPIC_API_KEY: 'dummy', ANTHROPIC_BASE_URL: anthropic.url };
    anthropic.enqueue(reply('Noted: the word is PINEAPPLE.'));
    const first = await runParley(['chat', '--backend', 'claude-sdk', 'Remember the word PINEAPPLE.'], {
      cwd: project,
      env,
    });
    expect(first.stdout).toContain('Noted: the word is PINEAPPLE.');
    expect(first.code).toBe(0);
    const id = /session: (\S+)/.exec(first.stderr)?.[1];
    anthropic.enqueue(reply('The word was PINEAPPLE.'));
    const second = await runParley(['chat', '--backend', 'claude-sdk', '--session', id!, 'Which word?'], {
      cwd: project,
      env,
    });
    expect(second.stdout).toContain('The word was PINEAPPLE.');
    // Native continuity: the CLI resumed its own transcript, so the earlier turn is in the request.
    expect(allMessageText(anthropic.messageRequests().at(-1)?.body)).toContain('Remember the word PINEAPPLE.');
  });

  it('runs on the gemini-cli back end (the real Gemini CLI)', async () => {
    gemini.enqueue({ text: 'Hello from the fake Gemini' });
    const result = await runParley(['chat', '--backend', 'gemini-cli', 'hi gemini'], {
      cwd: project,
      env: { GEMINI_API_KEY: 'dummy', GOOGLE_GEMINI_BASE_URL: gemini.url },
    });
    expect(result.stdout).toContain('Hello from the fake Gemini');
    expect(result.code).toBe(0);
  });

  it('continues an imported Claude Code session on a managed back end, with its history as context, never touching the native file', async () => {
    const transcripts = join(project, 'claude-projects');
    await cp('test/fixtures/transcripts/claude-code', transcripts, { recursive: true });
    const native = join(transcripts, '-home-dev-src-demo', '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl');
    const hash = async () =>
      createHash('sha256')
        .update(await readFile(native))
        .digest('hex');
    const before = await hash();
    const imported = await runParley(['import', transcripts], { cwd: project });
    expect(imported.code).toBe(0);
    const sessions = JSON.parse((await runParley(['sessions', '--json'], { cwd: project })).stdout) as Array<
      SessionJson & { readOnly?: boolean }
    >;
    const session = sessions.find((candidate) => candidate.sessionId === 'cc-5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01');
    expect(session?.readOnly).toBe(true);

    openai.enqueue({ text: 'Continuing where Claude Code left off.' });
    const result = await runParley(
      [
        'chat',
        '--backend',
        'openai-compatible',
        '--model',
        'fake-model',
        '--session',
        session!.sessionId,
        'what next?',
      ],
      {
        cwd: project,
        env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url },
      },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Continuing where Claude Code left off.');
    const system = (openai.completions().at(-1)!['messages'] as Array<{ role: string; content: string }>)[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain('# Recent Conversation');
    expect(system.content).toContain('Add a');
    expect(await hash()).toBe(before);
    const shown = await runParley(['show', session!.sessionId], { cwd: project });
    expect(shown.stdout).toContain('> what next?');
  });
});
