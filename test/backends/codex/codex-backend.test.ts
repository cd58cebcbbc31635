/**
 * The codex back end without running the CLI: event mapping of every item kind, usage of resumed
 * threads, failures named by their cause, a missing package and a thread Codex no longer has.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ThreadEvent } from '@openai/codex-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SystemBlock, ToolResultBlock, ToolUseBlock } from '../../../src/conversation/index.js';
import {
  CodexEventMapper,
  codexTurnUsage,
  createCodexBackend,
  describeCodexFailure,
  findRollout,
  readRolloutTotals,
  TurnEvents,
  counterIds,
  getBackendRegistration,
} from '../../../src/backends/index.js';
import { listBackendStatus } from '../../../src/cli/commands/backends.js';
import { resolveBackendConfig } from '../../../src/backends/index.js';
import { checkEventStream, collect, finalMetadata, mainBlocks, systemBlocks } from '../conformance.js';
import { planOf } from '../../../src/acp/tool-calls.js';
import { fileEditOf } from '../../../src/conversation/index.js';
import { parseCodexPatch } from '../../../src/backends/codex/codex-patch.js';
import { diffOfChange } from '../../../src/backends/codex/file-diffs.js';

function mapAll(events: ThreadEvent[], readFile?: (path: string) => string | undefined) {
  const turnEvents = new TurnEvents({ clock: () => 1, newId: counterIds('test') });
  const mapper = new CodexEventMapper(turnEvents, {
    ...(readFile ? { readFile } : {}),
  });
  const out = events.flatMap((event) => [...mapper.map(event)]);
  out.push(...mapper.finish('cut'), turnEvents.metadata({ turnComplete: true }));
  return { mapper, events: out };
}

describe('CodexEventMapper', () => {
  it('maps file changes, MCP calls, plans and warnings to blocks', () => {
    const { events, mapper } = mapAll(
      [
        { type: 'thread.started', thread_id: 'thread-1' },
        { type: 'turn.started' },
        { type: 'item.completed', item: { id: 'w', type: 'error', message: 'Model metadata for `x` not found.' } },
        {
          type: 'item.started',
          item: { id: 'p', type: 'todo_list', items: [{ text: 'Read the code', completed: false }] },
        },
        {
          type: 'item.updated',
          item: { id: 'p', type: 'todo_list', items: [{ text: 'Read the code', completed: true }] },
        },
        {
          type: 'item.completed',
          item: {
            id: 'f',
            type: 'file_change',
            status: 'completed',
            changes: [
              { path: 'new.txt', kind: 'add' },
              { path: 'old.txt', kind: 'update' },
            ],
          },
        },
        {
          type: 'item.started',
          item: {
            id: 'm',
            type: 'mcp_tool_call',
            server: 'parley',
            tool: 'draft_worker',
            arguments: { a: 1 },
            status: 'in_progress',
          },
        },
        {
          type: 'item.completed',
          item: {
            id: 'm',
            type: 'mcp_tool_call',
            server: 'parley',
            tool: 'draft_worker',
            arguments: { a: 1 },
            status: 'completed',
            result: { content: [{ type: 'text', text: 'worker drafted' }], structured_content: { id: 'w1' } },
          },
        },
        {
          type: 'item.started',
          item: {
            id: 'c',
            type: 'command_execution',
            command: 'sleep 9',
            aggregated_output: '',
            status: 'in_progress',
          },
        },
        { type: 'turn.failed', error: { message: 'stream disconnected' } },
      ],
      (path) => (path === 'new.txt' ? 'hello\n' : undefined),
    );
    checkEventStream(events);
    const blocks = mainBlocks(events);
    const tools = blocks.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(tools.map((tool) => [tool.name, tool.status])).toEqual([
      ['update_plan', 'success'],
      ['update_plan', 'success'],
      ['write_file', 'success'],
      ['edit_file', 'success'],
      ['mcp__parley__draft_worker', 'success'],
      ['shell', 'error'],
    ]);
    expect(tools[2]?.input).toEqual({ path: 'new.txt', kind: 'add', content: 'hello\n' });
    // The plan is the whole list each time, as the UIs and ACP read a to-do tool.
    expect(planOf(tools[0]!)).toEqual([{ content: 'Read the code', status: 'in_progress', priority: 'medium' }]);
    expect(planOf(tools[1]!)).toEqual([{ content: 'Read the code', status: 'completed', priority: 'medium' }]);
    const results = blocks.filter((block): block is ToolResultBlock => block.type === 'tool_result');
    expect(results[4]).toMatchObject({ content: 'worker drafted', output: { id: 'w1' } });
    expect(results[5]).toMatchObject({ content: 'cut', isError: true });
    const info = blocks.filter((block): block is SystemBlock => block.type === 'system' && block.subtype === 'info');
    expect(info.map((block) => block.content)).toEqual(['Codex: Model metadata for `x` not found.']);
    expect(mapper.threadId).toBe('thread-1');
    expect(mapper.failure).toBe('stream disconnected');
  });

  it('shows a file change as a diff built from the file now and the patch Codex recorded', () => {
    const patch = [
      '*** Begin Patch',
      '*** Update File: src/app.ts',
      '@@ function main',
      ' one',
      '-two',
      '+TWO',
      ' three',
      '*** Add File: notes.md',
      '+hello',
      '*** Delete File: old.txt',
      '*** End Patch',
    ].join('\n');
    const files: Record<string, string> = {
      '/work/src/app.ts': 'zero\none\nTWO\nthree\nfour\n',
      '/work/notes.md': 'hello\n',
    };
    const turnEvents = new TurnEvents({ clock: () => 1, newId: counterIds('test') });
    const mapper = new CodexEventMapper(turnEvents, {
      cwd: '/work',
      readFile: (path) => files[path],
      patches: () => ['*** Begin Patch\n*** Update File: other.ts\n+x\n*** End Patch', patch],
    });
    const events = [
      ...mapper.map({
        type: 'item.completed',
        item: {
          id: 'f',
          type: 'file_change',
          status: 'completed',
          changes: [
            { path: '/work/src/app.ts', kind: 'update' },
            { path: '/work/notes.md', kind: 'add' },
            { path: '/work/old.txt', kind: 'delete' },
          ],
        },
      }),
      ...mapper.finish('cut'),
    ];
    const blocks = mainBlocks(events);
    const calls = blocks.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    const results = blocks.filter((block): block is ToolResultBlock => block.type === 'tool_result');
    const edit = fileEditOf(calls[0]!, results[0]);
    expect(edit).toMatchObject({ path: '/work/src/app.ts', kind: 'edit', added: 1, removed: 1 });
    expect(edit?.hunks[0]).toMatchObject({ oldStart: 1, newStart: 1 });
    expect(edit?.hunks[0]?.lines).toContainEqual({ kind: '-', text: 'two' });
    expect(fileEditOf(calls[1]!, results[1])).toMatchObject({ path: '/work/notes.md', kind: 'write', added: 1 });
    // A deleted file's content is not in the patch: it is shown by path and kind.
    expect(calls[2]).toMatchObject({ name: 'edit_file', input: { path: '/work/old.txt', kind: 'delete' } });
    expect(results[2]?.output).toBeUndefined();
  });

  it('gives no diff for a patch that does not fit the file', () => {
    const [section] = parseCodexPatch('*** Begin Patch\n*** Update File: a\n-gone\n+here\n*** End Patch');
    expect(section).toMatchObject({ kind: 'update', path: 'a' });
    expect(diffOfChange('/a', section!, 'something else\n')).toBeUndefined();
    expect(diffOfChange('/a', section!, 'here\n')).toContain('-gone');
  });

  it('keeps an item kind it does not know as an unknown record', () => {
    const { events } = mapAll([{ type: 'item.completed', item: { id: 'x', type: 'hologram' } as never }]);
    expect(systemBlocks(events, 'unknown_record')[0]?.data).toEqual({ id: 'x', type: 'hologram' });
  });
});

describe('codex usage and failures', () => {
  it('takes a resumed turn’s usage as the difference of running totals', () => {
    const before = { input_tokens: 100, cached_input_tokens: 10, output_tokens: 5 };
    expect(codexTurnUsage({ input_tokens: 250, cached_input_tokens: 30, output_tokens: 9 }, before)).toEqual({
      input_tokens: 150,
      cached_input_tokens: 20,
      output_tokens: 4,
    });
    // A smaller total than before is not a running total: it is the turn's own.
    expect(codexTurnUsage({ input_tokens: 50, cached_input_tokens: 0, output_tokens: 2 }, before)).toEqual({
      input_tokens: 50,
      cached_input_tokens: 0,
      output_tokens: 2,
    });
  });

  it('names the cause of a failed turn', () => {
    const failure = (reported: string | undefined, error?: unknown) =>
      describeCodexFailure('codex', 'http://x/v1', 'gpt-5-codex', reported, error).code;
    expect(failure('unexpected status 401 Unauthorized: invalid api key')).toBe('AUTHENTICATION_FAILED');
    expect(failure('exceeded retry limit, last status: 500 Internal Server Error')).toBe('SERVER_ERROR');
    expect(failure('Rate limit reached')).toBe('RATE_LIMITED');
    // A thread Codex's state database points at a deleted file: the fallback ladder takes it from here.
    expect(
      failure(
        undefined,
        new Error('Codex Exec exited with code 1: Error: thread/resume failed: failed to resolve rollout path `/x`'),
      ),
    ).toBe('NATIVE_RESUME_FAILED');
    expect(failure(undefined, new Error('Codex Exec exited with code 1: spawn ENOENT'))).toBe('PROCESS_FAILED');
  });
});

describe('codex back end without the CLI', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'parley-codex-unit-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('ends a turn with NOT_INSTALLED and the install command when the SDK is missing', async () => {
    const backend = createCodexBackend({
      apiKey: 'key',
      codexHome: join(root, 'home'),
      loadSdk: () => Promise.reject(new Error("Cannot find package '@openai/codex-sdk'")),
    });
    const events = await collect(backend.execute({ sessionId: 's', prompt: 'hi' }));
    checkEventStream(events);
    const [error] = systemBlocks(events, 'error');
    expect(error?.data).toMatchObject({ code: 'NOT_INSTALLED' });
    expect(error?.content).toContain('npm install --save-exact @openai/codex-sdk@0.163.0 @openai/codex@0.163.0');
    expect(finalMetadata(events)).toMatchObject({ stopReason: 'error', turnComplete: true });
  });

  it('says which variable to set when no key is configured', async () => {
    const events = await collect(
      createCodexBackend({ codexHome: join(root, 'home') }).execute({ sessionId: 's', prompt: 'hi' }),
    );
    expect(systemBlocks(events, 'error')[0]?.content).toContain('CODEX_API_KEY');
  });

  it('reports a thread Codex no longer has as a native resume failure naming the thread', async () => {
    // A stub SDK: the thread is checked before Codex would be constructed or run.
    const fakeSdk = () => Promise.resolve({ Codex: class {} } as never);
    const resumable = createCodexBackend({ apiKey: 'key', codexHome: join(root, 'home'), loadSdk: fakeSdk });
    const failed = await collect(
      resumable.execute({ sessionId: 's', prompt: 'hi', nativeSessionId: '01a2-gone', isNewSession: false }),
    );
    const [error] = systemBlocks(failed, 'error');
    expect(error?.data).toMatchObject({ code: 'NATIVE_RESUME_FAILED' });
    expect(error?.content).toContain('01a2-gone');
    expect(finalMetadata(failed).nativeSessionId).toBe('01a2-gone');
  });

  it('finds a rollout by thread id and reads its last running total, past a torn line', async () => {
    const home = join(root, 'rollouts');
    const folder = join(home, 'sessions', '2026', '12', '02');
    await mkdir(folder, { recursive: true });
    const path = join(folder, 'rollout-2026-12-02T04-20-30-thread-abc.jsonl');
    const total = (input: number) =>
      JSON.stringify({
        type: 'event_msg',
        payload: {
          type: 'token_count',
          info: { total_token_usage: { input_tokens: input, cached_input_tokens: 1, output_tokens: 2 } },
        },
      });
    await writeFile(path, `${total(10)}\n${total(20)}\n{"type":"event_msg","payload":{"type":"token_cou`);
    expect(await findRollout(home, 'thread-abc')).toBe(path);
    expect(await findRollout(home, 'thread-other')).toBeUndefined();
    expect(await readRolloutTotals(path)).toEqual({ input_tokens: 20, cached_input_tokens: 1, output_tokens: 2 });
  });

  it('is listed by parley backends with how to install it when the package is missing', async () => {
    const registration = getBackendRegistration('codex')!;
    expect(registration.apiKeyVariables).toEqual(['CODEX_API_KEY', 'OPENAI_API_KEY']);
    // OPENAI_BASE_URL often names a chat-completions server: codex has its own setting.
    expect(registration.baseUrlVariables).toEqual(['CODEX_BASE_URL']);
    const config = await resolveBackendConfig({
      env: { CODEX_API_KEY: 'key', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' },
      projectDir: root,
    });
    expect(config.settings['codex']?.baseUrl).toBeUndefined();
    const [status] = (await listBackendStatus(config)).filter((entry) => entry.name === 'codex');
    if (registration.notInstalled?.()) {
      expect(status?.detail).toMatch(/^not installed: install it with: npm install/);
      expect(status?.reachable).toBe(false);
    } else {
      expect(status?.configured).toBe(true);
      expect(status?.detail).toContain('Codex installed');
    }
  });
});
