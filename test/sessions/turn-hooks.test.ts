import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createScriptedBackend, step, type ToolDefinition } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { HookRunner, parseHooksConfig } from '../../src/hooks/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

let folder: string;
const managers: SessionManager[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-turn-hooks-'));
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

function countingTool(): ToolDefinition & { runs: unknown[] } {
  const runs: unknown[] = [];
  return {
    runs,
    name: 'run_command',
    description: 'Runs a command.',
    inputSchema: { type: 'object' },
    execute: async (input) => {
      runs.push(input);
      return { content: 'done' };
    },
  };
}

/** Each event's hook appends its input, one JSON line, to events.jsonl. */
async function recordingHooks(): Promise<Record<string, unknown>> {
  const record = await script(
    'record.sh',
    `cat >> ${join(folder, 'events.jsonl')}; echo >> ${join(folder, 'events.jsonl')}`,
  );
  const entry = [{ hooks: [{ type: 'command', command: record }] }];
  return { SessionStart: entry, UserPromptSubmit: entry, PreToolUse: entry, PostToolUse: entry, Stop: entry };
}

async function recorded(): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(join(folder, 'events.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('hooks on a turn', () => {
  it('fires each event once, in order, with the documented fields', async () => {
    const { manager, sessionId } = await setup(await recordingHooks());
    const tool = countingTool();
    const backend = createScriptedBackend({ turns: [[step.tool('run_command', { command: 'ls' }), step.text('ok')]] });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'list files', tools: [tool] })).events);
    const inputs = await recorded();
    expect(inputs.map((input) => input['hook_event_name'])).toEqual([
      'SessionStart',
      'UserPromptSubmit',
      'PreToolUse',
      'PostToolUse',
      'Stop',
    ]);
    for (const input of inputs) expect(input).toMatchObject({ session_id: sessionId, cwd: folder });
    expect(inputs[0]).toMatchObject({ source: 'startup' });
    expect(inputs[1]).toMatchObject({ prompt: 'list files' });
    expect(inputs[2]).toMatchObject({ tool_name: 'run_command', tool_input: { command: 'ls' } });
    expect(inputs[3]).toMatchObject({
      tool_name: 'run_command',
      tool_response: { content: 'done', isError: false },
    });
    expect(inputs[4]).toMatchObject({ stop_hook_active: false });
    expect(tool.runs).toHaveLength(1);

    // The next turn of the same session: no second SessionStart.
    await drain(
      (
        await runTurn(manager, sessionId, {
          backend: createScriptedBackend({ turns: [[step.text('again')]] }),
          prompt: 'more',
        })
      ).events,
    );
    expect((await recorded()).slice(5).map((input) => input['hook_event_name'])).toEqual(['UserPromptSubmit', 'Stop']);
  });

  it('exit 2 from UserPromptSubmit refuses the prompt: the back end is not called and the reason is shown', async () => {
    const refuse = await script('refuse.sh', 'echo "no secrets in prompts" >&2; exit 2');
    const { manager, sessionId } = await setup({
      UserPromptSubmit: [{ hooks: [{ type: 'command', command: refuse }] }],
    });
    const backend = createScriptedBackend({ turns: [[step.text('never')]] });
    const events = await drain((await runTurn(manager, sessionId, { backend, prompt: 'my key is abc' })).events);
    expect(backend.calls).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ type: 'metadata_update', metadata: { turnComplete: true } });
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    expect(blocks.some((block) => block.type === 'user_message')).toBe(false);
    expect(blocks).toEqual([
      expect.objectContaining({
        type: 'system',
        content: 'A UserPromptSubmit hook refused the prompt, so it was not sent: no secrets in prompts',
      }),
    ]);
  });

  it('exit 0 output of UserPromptSubmit reaches the model, not the stored message', async () => {
    const add = await script('add.sh', 'echo "The build is red."');
    const { manager, sessionId } = await setup({ UserPromptSubmit: [{ hooks: [{ type: 'command', command: add }] }] });
    const backend = createScriptedBackend({ turns: [[step.text('ok')]] });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'status?' })).events);
    expect(backend.calls[0]!.prompt).toContain('The build is red.');
    const user = (await manager.loadConversation(sessionId)).blocks.find((block) => block.type === 'user_message');
    expect(user).toMatchObject({ content: 'status?' });
  });

  it('exit 2 from PreToolUse refuses the matching tool call and the model is told why; others run', async () => {
    const refuse = await script('refuse.sh', 'echo "commands are off today" >&2; exit 2');
    const { manager, sessionId } = await setup({
      PreToolUse: [{ matcher: 'run_command', hooks: [{ type: 'command', command: refuse }] }],
    });
    const command = countingTool();
    const read: ToolDefinition & { runs: unknown[] } = { ...countingTool(), name: 'read_file' };
    const backend = createScriptedBackend({
      turns: [
        [step.tool('run_command', { command: 'rm -rf /' }), step.tool('read_file', { path: 'a' }), step.text('ok')],
      ],
    });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'go', tools: [command, read] })).events);
    expect(command.runs).toHaveLength(0);
    expect(read.runs).toHaveLength(1);
    const blocks = (await manager.loadConversation(sessionId)).blocks;
    const results = blocks.filter((block) => block.type === 'tool_result');
    expect(results[0]).toMatchObject({
      isError: true,
      content: 'A PreToolUse hook refused this run_command call, so it did not run: commands are off today',
    });
    expect(results[1]).toMatchObject({ content: 'done' });
    expect(blocks.some((block) => block.type === 'system' && block.content.includes('commands are off today'))).toBe(
      true,
    );
  });

  it('a hook that hangs, crashes or prints garbage leaves the turn intact and a system block names it', async () => {
    const hang = await script('hang.sh', 'sleep 30');
    const crash = await script('crash.sh', 'echo boom >&2; exit 1');
    const garbage = await script('garbage.sh', `printf '{not json'`);
    const { manager, sessionId } = await setup({
      UserPromptSubmit: [{ hooks: [{ type: 'command', command: hang, timeout: 0.3 }] }],
      PreToolUse: [{ hooks: [{ type: 'command', command: garbage }] }],
      Stop: [{ hooks: [{ type: 'command', command: crash }] }],
    });
    const tool = countingTool();
    const backend = createScriptedBackend({ turns: [[step.tool('run_command', {}), step.text('finished')]] });
    const events = await drain((await runTurn(manager, sessionId, { backend, prompt: 'go', tools: [tool] })).events);
    expect(events.at(-1)).toMatchObject({ type: 'metadata_update', metadata: { turnComplete: true } });
    expect(tool.runs).toHaveLength(1);
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.some((block) => block.type === 'assistant_text' && block.content === 'finished')).toBe(
      true,
    );
    const notices = conversation.blocks.filter((block) => block.type === 'system').map((block) => block.content);
    expect(notices).toEqual([
      expect.stringMatching(
        new RegExp(`^The UserPromptSubmit hook \`${hang}\` .* failed: did not finish within 0.3 s`),
      ),
      expect.stringMatching(
        new RegExp(`^The PreToolUse hook \`${garbage}\` .* failed: printed output that is not valid JSON`),
      ),
      expect.stringMatching(new RegExp(`^The Stop hook \`${crash}\` .* failed: exited with code 1: boom`)),
    ]);
  });
});

describe('hooks on a compaction', () => {
  it('PreCompact and PostCompact run with the trigger; a failing one leaves a system block in the session', async () => {
    // One file per event: the two run beside the compaction and may overlap.
    const pre = await script('pre.sh', `cat > ${join(folder, 'pre.json')}`);
    const post = await script('post.sh', `cat > ${join(folder, 'post.json')}`);
    const crash = await script('crash.sh', 'echo "disk full" >&2; exit 1');
    const { manager, sessionId } = await setup({
      PreCompact: [{ matcher: 'manual', hooks: [{ type: 'command', command: pre }] }],
      PostCompact: [
        {
          hooks: [
            { type: 'command', command: post },
            { type: 'command', command: crash },
          ],
        },
      ],
    });
    for (let index = 0; index < 10; index++)
      await manager.addMessage(sessionId, {
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: `message ${index} ${'words '.repeat(50)}`,
      });
    const checkpoint = await manager.forceCompact(sessionId);
    const read = async (name: string) => JSON.parse(await readFile(join(folder, name), 'utf8')) as unknown;
    await vi.waitFor(async () => {
      expect(await read('pre.json')).toMatchObject({ hook_event_name: 'PreCompact', trigger: 'manual' });
      expect(await read('post.json')).toMatchObject({
        hook_event_name: 'PostCompact',
        session_id: sessionId,
        trigger: 'manual',
        checkpoint_version: checkpoint.version,
      });
    });
    await vi.waitFor(async () => {
      const blocks = (await manager.loadConversation(sessionId)).blocks;
      expect(blocks.at(-1)).toMatchObject({
        type: 'system',
        subtype: 'error',
        content: expect.stringMatching(/^The PostCompact hook .* failed: exited with code 1: disk full/),
      });
    });
  });
});
