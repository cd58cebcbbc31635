/**
 * Carrying a conversation to and from Codex through the real Codex CLI (@openai/codex 0.163.0)
 * against the fake Responses API: an imported Claude Code session continues on `codex` from the
 * rollout Parley writes; a thread whose rollout was deleted climbs the fallback ladder; the session
 * that ran on `codex` then continues on `openai-compatible`. One session, one CODEX_HOME and one
 * fake server for the file, so the CLI runs only twice.
 */
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  codexResolvable,
  createCodexBackend,
  createOpenAiCompatibleBackend,
  findRollout,
  type AgentBackend,
} from '../../../src/backends/index.js';
import type { StreamEvent, SystemBlock } from '../../../src/conversation/index.js';
import {
  continueOnBackend,
  createSessionManager,
  importTranscripts,
  NATIVE_RESUME_RETRY,
  runTurnWithFallback,
  type SessionManager,
} from '../../../src/sessions/index.js';
import { createMemoryStore } from '../../../src/store/index.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../../fixtures/fake-openai-server.js';
import {
  inputTexts,
  startFakeResponsesServer,
  type FakeResponsesServer,
} from '../../fixtures/fake-openai-responses-server.js';

const CLAUDE_FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'claude-code');

function codexSkipReason(): string | undefined {
  if (codexResolvable()) return undefined;
  const reason = 'the Codex CLI is not installed (npm ci installs @openai/codex and @openai/codex-sdk)';
  if (process.env.CI === 'true') throw new Error(`${reason}. CI must run the codex back-end tests.`);
  console.warn(`\n!!! SKIPPING the codex carry tests: ${reason}.\n`);
  return reason;
}

async function drain(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

const systemBlocks = (events: readonly StreamEvent[]) =>
  events.flatMap((event) =>
    event.type === 'block_complete' && event.block.type === 'system' ? [event.block as SystemBlock] : [],
  );
const codeOf = (block: SystemBlock) => (block.data as { code?: string } | undefined)?.code;

describe.skipIf(codexSkipReason() !== undefined).sequential('carrying a conversation to and from codex', () => {
  let responses: FakeResponsesServer;
  let chat: FakeOpenAiServer;
  let root: string;
  let workspace: string;
  let codexHome: string;
  let manager: SessionManager;
  let codex: AgentBackend;
  let sessionId: string;
  let priorUserMessages: string[];

  beforeAll(async () => {
    responses = await startFakeResponsesServer();
    chat = await startFakeOpenAiServer();
    // Codex refuses its sandbox helper when CODEX_HOME lies inside TMPDIR; the import fixtures are copied beside it.
    root = await mkdtemp(join(tmpdir(), 'parley-codex-carry-'));
    workspace = join(root, 'workspace');
    codexHome = join(root, 'codex-home');
    await mkdir(workspace, { recursive: true });
    await cp(CLAUDE_FIXTURES, join(root, 'claude-code'), { recursive: true });
    manager = await createSessionManager({ store: createMemoryStore() });
    codex = createCodexBackend({ apiKey: 'test-key', baseUrl: responses.url, codexHome, maxRetries: 0 });
    const imported = await importTranscripts(join(root, 'claude-code'), { store: manager.store });
    const session = imported.sessions.find((entry) => entry.nativeSessionId === '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64');
    sessionId = session!.sessionId;
    const conversation = await manager.loadConversation(sessionId);
    priorUserMessages = conversation.blocks.flatMap((block) => (block.type === 'user_message' ? [block.content] : []));
  });
  afterAll(async () => {
    await manager.close();
    await responses.close();
    await chat.close();
    await rm(root, { recursive: true, force: true });
  });

  it('an imported Claude Code session continues on codex natively: Codex resumes the rollout Parley wrote', async () => {
    expect(priorUserMessages.length).toBeGreaterThan(0);
    const move = await continueOnBackend(manager, sessionId, codex, { cwd: workspace });
    expect(move).toMatchObject({ from: 'claude-code', to: 'codex', mode: 'native' });
    // Claude's thinking and its Task call are not Codex's: they became marked text, and the move says so.
    expect(move.conversions.map((conversion) => conversion.kind)).toEqual(expect.arrayContaining(['thinking']));
    const threadId = move.nativeSessionId!;
    expect(await findRollout(codexHome, threadId)).toContain(threadId);

    responses.enqueue({ text: 'Carried over to Codex.' });
    const events = await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: codex, prompt: 'Go on from here', cwd: workspace }))
        .events,
    );
    expect(systemBlocks(events).filter((block) => block.subtype === 'error')).toEqual([]);
    const sent = inputTexts(responses.responseRequests().at(-1)?.body);
    for (const message of priorUserMessages) expect(sent).toContain(message);
    expect(sent.some((text) => text.startsWith('[thinking from claude-code, converted to text]'))).toBe(true);
    expect(sent.at(-1)).toBe('Go on from here');
    // Codex resumed the thread Parley wrote, not a new one.
    expect((await manager.getSession(sessionId)).native).toMatchObject({ backend: 'codex', nativeSessionId: threadId });
  }, 60_000);

  it('a thread whose rollout was deleted goes down the ladder: Parley writes it again from its log and Codex resumes it', async () => {
    const threadId = (await manager.getSession(sessionId)).native!.nativeSessionId;
    await rm((await findRollout(codexHome, threadId))!);
    responses.enqueue({ text: 'Still here.' });
    const events = await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: codex, prompt: 'Are you there?', cwd: workspace }))
        .events,
    );
    const notices = systemBlocks(events);
    const failed = notices.find((block) => codeOf(block) === 'NATIVE_RESUME_FAILED');
    expect(failed?.content).toContain(threadId);
    expect(notices.some((block) => codeOf(block) === NATIVE_RESUME_RETRY)).toBe(true);
    const sent = inputTexts(responses.responseRequests().at(-1)?.body);
    // The rewritten rollout holds the turn that ran on Codex too, and the question is asked once.
    expect(sent).toEqual(expect.arrayContaining([...priorUserMessages, 'Go on from here', 'Carried over to Codex.']));
    expect(sent.filter((text) => text === 'Are you there?')).toHaveLength(1);
    expect((await manager.getSession(sessionId)).native?.nativeSessionId).toBe(threadId);
  }, 60_000);

  it('the session that ran on codex continues on openai-compatible, which is sent the prior turns', async () => {
    const openai = createOpenAiCompatibleBackend({ baseURL: chat.url, model: 'fake-model' });
    const move = await continueOnBackend(manager, sessionId, openai, { cwd: workspace });
    expect(move).toMatchObject({ from: 'codex', to: 'openai-compatible', mode: 'managed' });
    chat.enqueue({ text: 'Now on chat completions.' });
    await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: openai, prompt: 'And now?', cwd: workspace })).events,
    );
    const request = JSON.stringify(chat.completions().at(-1));
    for (const text of ['Go on from here', 'Carried over to Codex.', 'Are you there?', 'Still here.', 'And now?'])
      expect(request).toContain(text);
  }, 60_000);
});
