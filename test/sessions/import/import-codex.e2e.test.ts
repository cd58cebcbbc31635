/**
 * Importing and following rollouts the real Codex CLI (@openai/codex 0.163.0, run by
 * @openai/codex-sdk through Parley's codex back end) writes against the fake Responses API. One
 * thread, two turns (the second resumed), followed live by `watchTranscripts` as
 * `parley serve --watch-native` follows it, then imported afresh into the file store. Outside CI a
 * machine without the CLI skips this with one loud line; in CI it is an error.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codexResolvable, createCodexBackend, findRollout } from '../../../src/backends/index.js';
import {
  applyEvents,
  emptyConversation,
  fileEditOf,
  type ConversationState,
  type StreamEvent,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../src/conversation/index.js';
import { importTranscripts, watchTranscripts } from '../../../src/sessions/import/index.js';
import { withImportedSessions } from '../../../src/sessions/import/imported-store.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';
import { startFakeResponsesServer, type FakeResponsesServer } from '../../fixtures/fake-openai-responses-server.js';

function codexSkipReason(): string | undefined {
  if (codexResolvable()) return undefined;
  const reason = 'the Codex CLI is not installed (npm ci installs @openai/codex and @openai/codex-sdk)';
  if (process.env.CI === 'true') throw new Error(`${reason}. CI must run the Codex import tests.`);
  console.warn(`\n!!! SKIPPING the Codex import tests: ${reason}.\n`);
  return reason;
}

async function rebuild(store: SessionStore, sessionId: string): Promise<ConversationState> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return applyEvents(emptyConversation(sessionId), events);
}

const texts = (state: ConversationState) =>
  state.blocks.flatMap((block) => (block.type === 'assistant_text' ? [block.content] : []));

describe.skipIf(codexSkipReason() !== undefined)('importing rollouts the real Codex CLI writes', () => {
  let server: FakeResponsesServer;
  let root: string;
  let workspace: string;
  let codexHome: string;

  beforeAll(async () => {
    server = await startFakeResponsesServer();
    root = await mkdtemp(join(tmpdir(), 'parley-codex-import-'));
    workspace = join(root, 'workspace');
    codexHome = join(root, 'codex-home');
    await mkdir(workspace, { recursive: true });
  });
  afterAll(async () => {
    await server.close();
    await rm(root, { recursive: true, force: true });
  });

  it('follows a running thread live, then imports it whole: turns, tokens counted once, commands and diffs', async () => {
    const backend = createCodexBackend({ apiKey: 'test-key', baseUrl: server.url, codexHome, maxRetries: 0 });
    const store = createMemoryStore();
    // Resolves once the followed session shows `text`.
    let awaited: { text: string; resolve: () => void } | undefined;
    const shown = (text: string) => new Promise<void>((resolve) => (awaited = { text, resolve }));
    let sessionId: string | undefined;
    const watcher = watchTranscripts(join(codexHome, 'sessions'), {
      store,
      waitForPath: true,
      projectRoot: workspace,
      checkIntervalMs: 50,
      onSync: (result) => {
        sessionId ??= result.sessions[0]?.sessionId;
        if (sessionId === undefined || awaited === undefined) return;
        const wanted = awaited;
        void rebuild(store, sessionId).then((state) => {
          if (texts(state).includes(wanted.text)) wanted.resolve();
        });
      },
    });
    const run = async (prompt: string, threadId?: string): Promise<string> => {
      let id: string | undefined;
      const turn = backend.execute({
        sessionId: 'codex-import-e2e',
        prompt,
        cwd: workspace,
        ...(threadId !== undefined ? { nativeSessionId: threadId, isNewSession: false } : { isNewSession: true }),
        profile: { name: 'runner', instructions: 'Run commands.', permissionMode: 'bypassPermissions' },
      });
      for await (const event of turn.events)
        if (event.type === 'metadata_update' && event.metadata.nativeSessionId) id = event.metadata.nativeSessionId;
      return id!;
    };
    try {
      await watcher.ready;
      const patch = (body: string) => `apply_patch <<'EOF'\n*** Begin Patch\n${body}\n*** End Patch\nEOF\n`;
      server.enqueue(
        {
          reasoning: 'Running it first',
          functionCalls: [{ name: 'exec_command', arguments: { cmd: 'echo parley-out; exit 3' } }],
          usage: { input_tokens: 1000, cached_tokens: 200, output_tokens: 40 },
        },
        {
          functionCalls: [{ name: 'exec_command', arguments: { cmd: patch('*** Add File: hello.txt\n+hi\n+there') } }],
          usage: { input_tokens: 1500, output_tokens: 20 },
        },
        {
          functionCalls: [
            { name: 'exec_command', arguments: { cmd: patch('*** Update File: hello.txt\n@@\n hi\n-there\n+world') } },
          ],
          usage: { input_tokens: 1600, cached_tokens: 1000, output_tokens: 20 },
        },
        { text: 'Done.', usage: { input_tokens: 1700, output_tokens: 5 } },
      );
      const first = shown('Done.');
      const threadId = await run('Run things');
      await first;
      const second = shown('Second answer.');
      server.enqueue({ text: 'Second answer.', usage: { input_tokens: 2000, cached_tokens: 1500, output_tokens: 7 } });
      expect(await run('And again', threadId)).toBe(threadId);
      await second;
      expect(sessionId).toBe(`codex-${threadId}`);
    } finally {
      await watcher.stop();
    }

    // A final pass (not live) closes what the live ones left open; then the followed session is the whole thread.
    const rollout = (await findRollout(codexHome, sessionId!.slice('codex-'.length)))!;
    await importTranscripts(rollout, { store });
    const followed = await rebuild(store, sessionId!);
    expect(texts(followed)).toEqual(['Done.', 'Second answer.']);
    expect(followed.blocks.filter((block) => block.type === 'user_message').map((block) => block.content)).toEqual([
      expect.stringContaining('Run things') as string,
      'And again',
    ]);
    expect(followed.blocks.find((block) => block.type === 'thinking')?.content).toBe('Running it first');
    // Codex's totals run on across the resume; the session counts each request once.
    expect(followed.metrics).toMatchObject({
      turns: 2,
      inputTokens: 800 + 1500 + 600 + 1700 + 500,
      cacheReadTokens: 200 + 1000 + 1500,
      outputTokens: 40 + 20 + 20 + 5 + 7,
    });
    expect(followed.metrics.costUsd).toBeGreaterThan(0);
    const tools = followed.blocks.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    const resultOf = (tool: ToolUseBlock) =>
      followed.blocks.find(
        (block): block is ToolResultBlock => block.type === 'tool_result' && block.toolUseId === tool.toolUseId,
      );
    expect(tools.map((tool) => tool.name)).toEqual(['shell', 'write_file', 'edit_file']);
    expect(tools[0]).toMatchObject({ status: 'error', input: { command: 'echo parley-out; exit 3' } });
    expect(resultOf(tools[0]!)).toMatchObject({ isError: true, output: { exitCode: 3 } });
    expect(resultOf(tools[0]!)?.content).toContain('parley-out');
    expect(tools[1]?.input).toEqual({ path: 'hello.txt', content: 'hi\nthere\n' });
    expect(fileEditOf(tools[2]!, resultOf(tools[2]!))?.hunks[0]?.lines.map((line) => line.kind + line.text)).toEqual([
      ' hi',
      '-there',
      '+world',
    ]);

    // Imported afresh into the file store (copied, built on first read): the same conversation.
    const file = await createFileStore({ dataDir: join(root, 'data'), onWarning: () => {} });
    try {
      const result = await importTranscripts(join(codexHome, 'sessions'), { store: file });
      expect(result.sessions).toEqual([expect.objectContaining({ sessionId, deferred: true })]);
      expect(result.warnings).toEqual([]);
      const built = await rebuild(withImportedSessions(file), sessionId!);
      // The same blocks; the followed log numbers them later (the live passes appended versions of some).
      const unnumbered = (state: ConversationState) => state.blocks.map(({ seq: _seq, ...block }) => block);
      expect(unnumbered(built)).toEqual(unnumbered(followed));
      expect(built.metrics).toMatchObject({ turns: 2, inputTokens: followed.metrics.inputTokens });
    } finally {
      await file.close();
    }
  }, 120_000);
});
