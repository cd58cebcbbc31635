/**
 * A fork continues on any back end from its point, through `parley import`, `parley fork` and
 * `parley chat` as processes and the real clients against the fake model servers: the `openai`
 * client (managed: Parley builds the request), the Claude Agent SDK with its Claude Code CLI
 * (native: it resumes a transcript Parley writes from the fork's history) and the Gemini CLI
 * (native: a session file written the same way). What each fake server receives is the proof: turns
 * 1–3 of the source and nothing after. One CLI start per native back end; the steps share one project.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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

const FIXTURE = 'test/fixtures/transcripts/claude-code/-home-dev-src-demo/5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl';
const NATIVE_ID = '0c4f7a2e-6b1d-4c8e-9a3f-5d2e1b0c9f87';
const SESSION = `cc-${NATIVE_ID}`;
const TURNS = 5;
const question = (turn: number) => `Question number ${turn} about the parser`;
const answer = (turn: number) => `Answer number ${turn}: the parser keeps order`;

/**
 * A five-turn Claude Code session written from the frozen fixture's own records (its typed
 * prompt and its final text answer), renumbered: the fixture itself has fewer turns than a fork
 * at turn 3 needs, and adding a file to it would change what the import tests find.
 */
async function writeTranscript(folder: string): Promise<void> {
  const lines = (await readFile(FIXTURE, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const prompt = records.find((record) => record['type'] === 'user' && record['promptSource'] === 'typed')!;
  const final = records.find(
    (record) =>
      record['type'] === 'assistant' && (record['message'] as { stop_reason?: unknown }).stop_reason === 'end_turn',
  )!;
  const out: unknown[] = [];
  let parent: string | null = null;
  for (let turn = 1; turn <= TURNS; turn++) {
    const at = (second: number) => new Date(Date.UTC(2026, 7, 1, 10, turn, second)).toISOString();
    out.push({
      ...prompt,
      sessionId: NATIVE_ID,
      parentUuid: parent,
      promptId: `p-${turn}`,
      message: { role: 'user', content: question(turn) },
      uuid: `u-${turn}`,
      timestamp: at(0),
    });
    const message = final['message'] as Record<string, unknown>;
    out.push({
      ...final,
      sessionId: NATIVE_ID,
      parentUuid: `u-${turn}`,
      requestId: `req_${turn}`,
      message: { ...message, id: `msg_${turn}`, content: [{ type: 'text', text: answer(turn) }] },
      uuid: `a-${turn}`,
      timestamp: at(5),
    });
    parent = `a-${turn}`;
  }
  await mkdir(join(folder, '-home-dev-src-demo'), { recursive: true });
  await writeFile(
    join(folder, '-home-dev-src-demo', `${NATIVE_ID}.jsonl`),
    out.map((record) => JSON.stringify(record)).join('\n') + '\n',
  );
}

/** The text the model saw holds turns 1–3 and the fork's question, and nothing of turns 4 and 5. */
function expectTurnsOneToThree(text: string, forkQuestion: string): void {
  for (let turn = 1; turn <= 3; turn++) {
    expect(text).toContain(question(turn));
    expect(text).toContain(answer(turn));
  }
  for (let turn = 4; turn <= TURNS; turn++) {
    expect(text).not.toContain(question(turn));
    expect(text).not.toContain(answer(turn));
  }
  expect(text).toContain(forkQuestion);
}

describe.sequential('a fork at turn 3 of an imported Claude Code session', { timeout: 180_000 }, () => {
  let project: string;
  let openai: FakeOpenAiServer;
  let anthropic: FakeAnthropicServer;
  let gemini: FakeGeminiServer;
  let env: Record<string, string>;
  const parley = (args: string[]) => runParley(args, { cwd: project, env });
  const fork = async (backend: string): Promise<string> => {
    const forked = await parley(['fork', SESSION, '--at', 'a-3', '--backend', backend]);
    expect(forked.stderr).toContain(`onto ${backend}`);
    expect(forked.code).toBe(0);
    return forked.stdout.trim();
  };

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-fork-native-'));
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
    await writeTranscript(join(project, 'claude-code'));
    const imported = await parley(['import', 'claude-code']);
    expect(imported.code).toBe(0);
  });
  afterAll(async () => {
    await Promise.all([openai?.close(), anthropic?.close(), gemini?.close()]);
    await rm(project, { recursive: true, force: true });
  });

  it('onto openai-compatible: the request holds turns 1–3 and nothing after', async () => {
    const forkId = await fork('openai-compatible');
    openai.enqueue({ text: 'OpenAI on the fork.' });
    const result = await parley(['chat', '--session', forkId, '--model', 'fake-model', 'Fork question for OpenAI']);
    expect(result.stdout).toContain('OpenAI on the fork.');
    expect(result.code).toBe(0);
    expect(openai.completions()).toHaveLength(1);
    expectTurnsOneToThree(JSON.stringify(openai.completions()[0]!['messages']), 'Fork question for OpenAI');
  });

  it('onto claude-sdk: the real SDK resumes a transcript cut at the point', async () => {
    const forkId = await fork('claude-sdk');
    anthropic.enqueue(reply('Claude on the fork.'));
    const result = await parley(['chat', '--session', forkId, 'Fork question for Claude']);
    expect(result.stderr).toContain(`session ${forkId} continues on claude-sdk (natively, as claude-sdk session`);
    // The first resume of the written transcript worked: no step down the fallback ladder.
    expect(result.stdout).not.toContain('could not resume');
    expect(result.stdout).toContain('Claude on the fork.');
    expect(result.code).toBe(0);
    expectTurnsOneToThree(allMessageText(anthropic.messageRequests().at(-1)!.body), 'Fork question for Claude');
  });

  it('onto gemini-cli: the Gemini CLI resumes a session file cut at the point', async () => {
    const forkId = await fork('gemini-cli');
    gemini.enqueue({ text: 'Gemini on the fork.' });
    const result = await parley(['chat', '--session', forkId, 'Fork question for Gemini']);
    expect(result.stderr).toContain(`session ${forkId} continues on gemini-cli (natively, as gemini-cli session`);
    // The first resume of the written transcript worked: no step down the fallback ladder.
    expect(result.stdout).not.toContain('could not resume');
    expect(result.stdout).toContain('Gemini on the fork.');
    expect(result.code).toBe(0);
    expectTurnsOneToThree(
      JSON.stringify(gemini.streamRequests().at(-1)!.body!['contents']),
      'Fork question for Gemini',
    );

    const shown = (await parley(['show', forkId])).stdout;
    expect(shown).toContain(`forked from ${SESSION}`);
    expect(shown).toContain('This session continues natively on gemini-cli from its own history');

    // The source is as it was imported: all five turns, never moved.
    const source = (await parley(['show', SESSION])).stdout;
    expect(source).toContain(question(TURNS));
    expect(source).not.toContain('Fork question');
  });
});
