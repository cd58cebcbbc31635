/**
 * `parley chat`, `parley sessions` and `parley show` as processes, on the offline scripted back end
 * and through the real `openai` and `@anthropic-ai/sdk` clients against the local fake servers.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reply, startFakeAnthropicServer, type FakeAnthropicServer } from '../fixtures/fake-anthropic-server.js';
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

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-chat-'));
    [openai, anthropic] = await Promise.all([startFakeOpenAiServer({ models: ['fake-model'] }), startFakeAnthropicServer()]);
  });
  afterAll(async () => {
    await Promise.all([openai.close(), anthropic.close()]);
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
    openai.enqueue({ type: 'error', status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } });
    const result = await runParley(['chat', '--backend', 'openai-compatible', '--model', 'fake-model', 'fail please'], {
      cwd: project,
      env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('-- error:');
    expect(result.stdout).toContain('OPENAI_API_KEY');
  });
});
