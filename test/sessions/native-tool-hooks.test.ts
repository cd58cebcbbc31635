import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  observeNativeTools,
  type AgentBackend,
  type ExecuteRequest,
  type NativeToolHooks,
} from '../../src/backends/index.js';
import type { StreamEvent, UnsequencedEvent } from '../../src/conversation/index.js';
import { HookRunner, parseHooksConfig } from '../../src/hooks/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

/**
 * The tools a native back end brings itself: `runTurn` hands the back end `toolHooks`, and each
 * of its calls runs `PreToolUse` and `PostToolUse` once. Two fake native back ends stand for the two
 * kinds: one that asks before a call runs (as the Claude Agent SDK's hook callbacks do) and one
 * that reports calls it already ran (the Gemini CLI, Codex: `observeNativeTools`).
 */

let folder: string;
const managers: SessionManager[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-native-hooks-'));
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  await rm(folder, { recursive: true, force: true });
});

async function script(name: string, body: string): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

async function setup(hooks: Record<string, unknown>) {
  const parsed = parseHooksConfig(hooks, 'parley.config.json');
  expect(parsed.problems).toEqual([]);
  const manager = await createSessionManager({
    store: createMemoryStore(),
    projectRoot: folder,
    hooks: new HookRunner({ hooks: parsed.hooks, projectDir: folder }),
  });
  managers.push(manager);
  const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  return { manager, sessionId };
}

async function drain(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

async function recorded(): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(join(folder, 'events.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function block(conversationId: string, value: Record<string, unknown>): UnsequencedEvent {
  const at = Date.now();
  return {
    type: 'block_complete',
    conversationId,
    at,
    block: { id: `b-${Math.random()}`, createdAt: at, completedAt: at, ...value } as never,
  };
}

const end: UnsequencedEvent = {
  type: 'metadata_update',
  conversationId: 'main',
  at: 0,
  metadata: { turnComplete: true, stopReason: 'end_turn' },
};

/** Asks `beforeTool` first and runs the call only when it is not refused, as Claude Code does. */
function askingBackend(ran: string[]): AgentBackend & { requests: ExecuteRequest[] } {
  const requests: ExecuteRequest[] = [];
  return {
    requests,
    describe: () => ({ name: 'asking-native', continuity: 'native', models: [] }),
    execute(request) {
      requests.push(request);
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        const call = { toolName: 'Bash', toolInput: { command: 'rm -rf build' }, toolUseId: 'toolu_1' };
        yield block('main', {
          type: 'tool_use',
          toolUseId: 'toolu_1',
          name: 'Bash',
          input: call.toolInput,
          status: 'pending',
        });
        const decision = await request.toolHooks!.beforeTool(call, request.signal);
        const content = decision.block ?? 'removed';
        if (decision.block === undefined) ran.push('Bash');
        yield block('main', {
          type: 'tool_result',
          toolUseId: 'toolu_1',
          content,
          isError: decision.block !== undefined,
        });
        if (decision.block === undefined)
          await request.toolHooks!.afterTool({ ...call, response: { content, isError: false } }, request.signal);
        yield block('main', { type: 'assistant_text', content: 'done' });
        yield end;
      }
      return { events: events() };
    },
  };
}

/** Reports calls it already ran (the Gemini CLI's and Codex's way). */
function reportingBackend(): AgentBackend {
  return {
    describe: () => ({ name: 'reporting-native', continuity: 'native', models: [] }),
    execute(request) {
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        yield block('main', {
          type: 'tool_use',
          toolUseId: 'call_7',
          name: 'shell',
          input: { command: 'ls' },
          status: 'success',
        });
        yield block('main', { type: 'tool_result', toolUseId: 'call_7', content: 'a.txt', isError: false });
        yield block('main', { type: 'assistant_text', content: 'listed' });
        yield end;
      }
      return { events: observeNativeTools(events(), request.toolHooks, request.signal) };
    },
  };
}

async function recordingHooks(): Promise<Record<string, unknown>> {
  const file = join(folder, 'events.jsonl');
  const record = await script('record.sh', `cat >> ${file}; echo >> ${file}`);
  const entry = [{ hooks: [{ type: 'command', command: record }] }];
  return { PreToolUse: entry, PostToolUse: entry };
}

describe("a native back end's own tools", () => {
  it('asked first: PreToolUse and PostToolUse fire once each with the documented input', async () => {
    const { manager, sessionId } = await setup(await recordingHooks());
    const ran: string[] = [];
    const backend = askingBackend(ran);
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'clean up' })).events);
    expect(ran).toEqual(['Bash']);
    const inputs = await recorded();
    expect(inputs).toEqual([
      {
        session_id: sessionId,
        cwd: folder,
        hook_event_name: 'PreToolUse',
        tool_name: 'Bash',
        tool_input: { command: 'rm -rf build' },
        tool_use_id: 'toolu_1',
      },
      {
        session_id: sessionId,
        cwd: folder,
        hook_event_name: 'PostToolUse',
        tool_name: 'Bash',
        tool_input: { command: 'rm -rf build' },
        tool_use_id: 'toolu_1',
        tool_response: { content: 'removed', isError: false },
      },
    ]);
  });

  it('asked first: exit 2 refuses the call, the model gets the reason and a system block shows it', async () => {
    const refuse = await script('refuse.sh', 'echo "no deleting today" >&2; exit 2');
    const { manager, sessionId } = await setup({
      PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: refuse }] }],
    });
    const ran: string[] = [];
    await drain((await runTurn(manager, sessionId, { backend: askingBackend(ran), prompt: 'clean up' })).events);
    expect(ran).toEqual([]);
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    expect(blocks.find((entry) => entry.type === 'tool_result')).toMatchObject({
      content: 'no deleting today',
      isError: true,
    });
    expect(
      blocks.some(
        (entry) => entry.type === 'system' && entry.content === 'A PreToolUse hook refused Bash: no deleting today',
      ),
    ).toBe(true);
  });

  it('reported after the fact: each call fires once; a refusal is said to be impossible', async () => {
    const file = join(folder, 'events.jsonl');
    const refuse = await script('refuse.sh', `cat >> ${file}; echo >> ${file}; echo "not ls" >&2; exit 2`);
    const record = await script('record.sh', `cat >> ${file}; echo >> ${file}`);
    const { manager, sessionId } = await setup({
      PreToolUse: [{ hooks: [{ type: 'command', command: refuse }] }],
      PostToolUse: [{ hooks: [{ type: 'command', command: record }] }],
    });
    await drain((await runTurn(manager, sessionId, { backend: reportingBackend(), prompt: 'list' })).events);
    const inputs = await recorded();
    expect(inputs.map((input) => `${input['hook_event_name']} ${input['tool_use_id']}`)).toEqual([
      'PreToolUse call_7',
      'PostToolUse call_7',
    ]);
    expect(inputs[1]).toMatchObject({ tool_name: 'shell', tool_response: { content: 'a.txt', isError: false } });
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    expect(
      blocks.some(
        (entry) => entry.type === 'system' && entry.content.includes('runs its own tools before Parley hears of them'),
      ),
    ).toBe(true);
  });

  it('without hooks the back end gets no toolHooks and its stream passes through', async () => {
    const manager = await createSessionManager({ store: createMemoryStore(), projectRoot: folder });
    managers.push(manager);
    const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    const requests: ExecuteRequest[] = [];
    const backend: AgentBackend = {
      ...reportingBackend(),
      execute(request) {
        requests.push(request);
        return reportingBackend().execute(request);
      },
    };
    const events = await drain((await runTurn(manager, sessionId, { backend, prompt: 'list' })).events);
    expect(requests[0]!.toolHooks).toBeUndefined();
    expect(events.some((event) => event.type === 'block_complete' && event.block.type === 'tool_result')).toBe(true);

    // Hooks, but none on tools: the back end is not asked about each call either.
    const stopOnly = await setup({ Stop: [{ hooks: [{ type: 'command', command: 'true' }] }] });
    await drain((await runTurn(stopOnly.manager, stopOnly.sessionId, { backend, prompt: 'list' })).events);
    expect(requests[1]!.toolHooks).toBeUndefined();
  });
});

describe('observeNativeTools', () => {
  it('runs no hook twice for a call reported twice', async () => {
    const seen: string[] = [];
    const hooks: NativeToolHooks = {
      beforeTool: async (call) => {
        seen.push(`before ${call.toolUseId}`);
        return {};
      },
      afterTool: async (call) => {
        seen.push(`after ${call.toolUseId}`);
        return {};
      },
    };
    async function* events(): AsyncGenerator<UnsequencedEvent> {
      const use = { type: 'tool_use', toolUseId: 'c1', name: 'shell', input: {}, status: 'success' };
      yield block('main', use);
      yield block('main', use);
      yield block('main', { type: 'tool_result', toolUseId: 'c1', content: '', isError: false });
      yield block('main', { type: 'tool_result', toolUseId: 'c1', content: '', isError: false });
      // A result of a call never announced runs nothing.
      yield block('main', { type: 'tool_result', toolUseId: 'c2', content: '', isError: false });
    }
    const passed: UnsequencedEvent[] = [];
    for await (const event of observeNativeTools(events(), hooks)) passed.push(event);
    expect(passed).toHaveLength(5);
    expect(seen).toEqual(['before c1', 'after c1']);
  });
});
