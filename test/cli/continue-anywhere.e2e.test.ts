/**
 * A conversation moves between back ends (architecture decision 11), through `parley chat` as a
 * process and the real clients against the fake model servers: the Gemini CLI 0.61, the Claude
 * Agent SDK 0.3.329 with its Claude Code 2.1.329 CLI, and the `openai` client. Each CLI start costs
 * ≈0.5–1.5 s and ≈200–250 MB, so the file runs its steps one after another on one project, and
 * starts as few as the behaviour needs (vitest.config.ts runs at most two files at once).
 */
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allMessageText,
  reply,
  startFakeAnthropicServer,
  type FakeAnthropicServer,
  type MessagesRequestBody,
} from '../fixtures/fake-anthropic-server.js';
import { startFakeGeminiServer, type FakeGeminiServer } from '../fixtures/fake-gemini-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { runParley } from '../helpers/run-parley.js';

/** The Claude Code fixture: one compaction (its checkpoint pins the first request), then two more prompts. */
const CLAUDE_CODE_SESSION = 'cc-5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01';
const CLAUDE_CODE_FILE = join('claude-code', '-home-dev-src-demo', '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl');
/** The Gemini CLI fixture: "run shell", a run_shell_command call, its answer. */
const GEMINI_SESSION = 'gem-598981be-4ecc-4614-b2ce-6a2348af4241';
const GEMINI_FILE = join('gemini', 'tmp', 'demo', 'chats', 'session-2026-11-21T04-40-598981be.jsonl');

/** Every user message of the Claude Code fixture, or (the first) the checkpoint that pinned it. */
const IMPORTED_PROMPTS = [
  'Add a --verbose flag to the CLI',
  'Now add tests for the verbose output',
  'also update the README',
];

interface SessionJson {
  sessionId: string;
  type: string;
  native?: { backend: string; nativeSessionId: string };
}

// Each step starts `parley` (tsx) and a CLI: generous per-test time on a shared two-core machine.
describe.sequential('continue any session on any back end', { timeout: 120_000 }, () => {
  let project: string;
  let openai: FakeOpenAiServer;
  let anthropic: FakeAnthropicServer;
  let gemini: FakeGeminiServer;
  let env: Record<string, string>;
  const hashes = new Map<string, string>();
  const hash = async (path: string) =>
    createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
  const session = async (id: string): Promise<SessionJson> =>
    (JSON.parse((await runParley(['sessions', '--json'], { cwd: project })).stdout) as SessionJson[]).find(
      (candidate) => candidate.sessionId === id,
    )!;
  const chat = (args: string[]) => runParley(['chat', ...args], { cwd: project, env });

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-continue-'));
    [openai, anthropic, gemini] = await Promise.all([
      startFakeOpenAiServer({ models: ['fake-model'] }),
      startFakeAnthropicServer(),
      startFakeGeminiServer(),
    ]);
    env = {
      ANTHROPIC_API_KEY: 'dummy',
      ANTHROPIC_BASE_URL: anthropic.url,
      CLAUDE_CODE_MAX_RETRIES: '0',
      GEMINI_API_KEY: 'dummy',
      GOOGLE_GEMINI_BASE_URL: gemini.url,
      OPENAI_API_KEY: 'dummy',
      OPENAI_BASE_URL: openai.url,
    };
    await cp('test/fixtures/transcripts/claude-code', join(project, 'claude-code'), { recursive: true });
    await cp('test/fixtures/transcripts/gemini', join(project, 'gemini'), { recursive: true });
    for (const file of [CLAUDE_CODE_FILE, GEMINI_FILE]) hashes.set(file, await hash(join(project, file)));
    for (const folder of ['claude-code', 'gemini'])
      expect((await runParley(['import', folder], { cwd: project })).code).toBe(0);
  });
  afterAll(async () => {
    await Promise.all([openai?.close(), anthropic?.close(), gemini?.close()]);
    await rm(project, { recursive: true, force: true });
  });

  it('an imported Claude Code session continues on gemini-cli: the fake Gemini server receives the prior turns as contents', async () => {
    gemini.enqueue({ text: 'Gemini here: the tests and the README are left.' });
    const result = await chat(['--backend', 'gemini-cli', '--session', CLAUDE_CODE_SESSION, 'G1: what is left?']);
    expect(result.stderr).toContain(`session ${CLAUDE_CODE_SESSION} moved from claude-code to gemini-cli (natively`);
    expect(result.stdout).toContain('Gemini here: the tests and the README are left.');
    expect(result.code).toBe(0);

    const contents = gemini.streamRequests().at(-1)!.body!['contents'] as Array<{
      role: string;
      parts: Array<Record<string, unknown>>;
    }>;
    const text = JSON.stringify(contents);
    for (const prompt of IMPORTED_PROMPTS) expect(text).toContain(prompt);
    expect(text).toContain('<state_snapshot>'); // the checkpoint that replaced the compacted turn
    // Claude Code's answer after the compaction is a model turn; its Write call (a tool Gemini lacks) is marked text.
    expect(
      contents.some(
        (content) =>
          content.role === 'model' &&
          JSON.stringify(content.parts).includes('Writing the tests and the README section now.'),
      ),
    ).toBe(true);
    expect(text).toContain('[tool call from claude-code, converted to text: Write');
    expect(JSON.stringify(contents.at(-1))).toContain('G1: what is left?');

    const record = await session(CLAUDE_CODE_SESSION);
    expect(record).toMatchObject({ type: 'gemini-cli', native: { backend: 'gemini-cli' } });
    const shown = (await runParley(['show', CLAUDE_CODE_SESSION], { cwd: project })).stdout;
    expect(shown).toContain('This session now continues on gemini-cli (it was on claude-code)');
    expect(shown).toContain('Converted:');
    // The native file Parley wrote is kept with the session; the imported one is untouched.
    expect(await readdir(join(project, '.parley', 'sessions', CLAUDE_CODE_SESSION, 'transcripts'))).toContain(
      `native-gemini-cli-${record.native!.nativeSessionId}`,
    );
    expect(await hash(join(project, CLAUDE_CODE_FILE))).toBe(hashes.get(CLAUDE_CODE_FILE));
  });

  it('the round trip goes on to claude-sdk: the real SDK resumes the transcript Parley wrote, with every earlier user message', async () => {
    anthropic.enqueue(reply('Claude here: picking it up.'));
    const result = await chat(['--backend', 'claude-sdk', '--session', CLAUDE_CODE_SESSION, 'C1: and now?']);
    expect(result.stderr).toContain('moved from gemini-cli to claude-sdk (natively');
    expect(result.stdout).toContain('Claude here: picking it up.');
    expect(result.code).toBe(0);
    const body = anthropic.messageRequests().at(-1)!.body;
    const text = allMessageText(body);
    for (const prompt of [...IMPORTED_PROMPTS, 'G1: what is left?', 'C1: and now?']) expect(text).toContain(prompt);
    expect(text).toContain('Gemini here: the tests and the README are left.');
    // What was compacted reaches the model as the summary the CLI reads from the compact_boundary.
    expect(text).toContain('This session is being continued from a previous conversation');
    expect((await session(CLAUDE_CODE_SESSION)).native?.backend).toBe('claude-sdk');
  });

  it('a native resume that fails: the ladder writes the transcript again from the log, the retry resumes, and the user is told', async () => {
    const { native } = await session(CLAUDE_CODE_SESSION);
    const projects = join(project, '.parley', 'claude-code', 'projects');
    const [folder] = await readdir(projects);
    // The CLI's copy is lost (another machine, a wiped config folder).
    await rm(join(projects, folder!, `${native!.nativeSessionId}.jsonl`));
    anthropic.enqueue(reply('Claude again, after the rewrite.'));
    // No --backend: the session continues on its own back end.
    const result = await chat(['--session', CLAUDE_CODE_SESSION, 'C2: still there?']);
    expect(result.stdout).toContain('could not resume its session');
    expect(result.stdout).toContain('writes the session');
    expect(result.stdout).toContain('Claude again, after the rewrite.');
    expect(result.code).toBe(0);
    const text = allMessageText(anthropic.messageRequests().at(-1)!.body);
    for (const prompt of [...IMPORTED_PROMPTS, 'G1: what is left?', 'C1: and now?', 'C2: still there?'])
      expect(text).toContain(prompt);
    expect((await session(CLAUDE_CODE_SESSION)).native?.nativeSessionId).toBe(native!.nativeSessionId);
  });

  it('and ends on openai-compatible, managed: the request holds every earlier user message or the checkpoint that replaced it', async () => {
    openai.enqueue({ text: 'OpenAI here: done.' });
    const result = await chat([
      '--backend',
      'openai-compatible',
      '--model',
      'fake-model',
      '--session',
      CLAUDE_CODE_SESSION,
      'O1: last step',
    ]);
    expect(result.stderr).toContain('moved from claude-sdk to openai-compatible (managed');
    expect(result.stdout).toContain('OpenAI here: done.');
    const messages = openai.completions().at(-1)!['messages'] as Array<{ role: string; content: string }>;
    const text = JSON.stringify(messages);
    for (const prompt of [
      ...IMPORTED_PROMPTS,
      'G1: what is left?',
      'C1: and now?',
      'C2: still there?',
      'O1: last step',
    ])
      expect(text).toContain(prompt);
    expect(messages[0]!.content).toContain('# Checkpoint');
    expect(await session(CLAUDE_CODE_SESSION)).toMatchObject({ type: 'openai-compatible' });
    expect((await session(CLAUDE_CODE_SESSION)).native).toBeUndefined();
    expect(await hash(join(project, CLAUDE_CODE_FILE))).toBe(hashes.get(CLAUDE_CODE_FILE));
  });

  it('an imported Gemini session continues on claude-sdk: the real SDK reads the transcript Parley wrote, and the fake Anthropic server receives the prior turns as messages', async () => {
    anthropic.enqueue(reply('Claude continues the Gemini session.'));
    const result = await chat(['--backend', 'claude-sdk', '--session', GEMINI_SESSION, 'What did the shell print?']);
    expect(result.stderr).toContain(`session ${GEMINI_SESSION} moved from gemini-cli to claude-sdk (natively`);
    expect(result.stdout).toContain('Claude continues the Gemini session.');
    expect(result.code).toBe(0);
    const body = anthropic.messageRequests().at(-1)!.body as unknown as MessagesRequestBody;
    const text = allMessageText(body);
    expect(text).toContain('run shell');
    expect(text).toContain('I listed the directory. Done.');
    // run_shell_command is not a Claude Code tool: its call and output arrive as marked text.
    expect(text).toContain('[tool call from gemini-cli, converted to text: run_shell_command');
    expect(text).toContain('hi-from-shell');
    expect(
      (body.messages ?? []).some(
        (message) =>
          message.role === 'assistant' && JSON.stringify(message.content).includes('I listed the directory. Done.'),
      ),
    ).toBe(true);
    const record = await session(GEMINI_SESSION);
    expect(record.native?.backend).toBe('claude-sdk');
    expect(await readdir(join(project, '.parley', 'sessions', GEMINI_SESSION, 'transcripts'))).toContain(
      `native-claude-sdk-${record.native!.nativeSessionId}`,
    );
    expect(await hash(join(project, GEMINI_FILE))).toBe(hashes.get(GEMINI_FILE));
  });
});
