import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createAnthropicApiBackend,
  createOpenAiCompatibleBackend,
  type AgentBackend,
} from '../../src/backends/index.js';
import {
  commandOf,
  fileEditOf,
  type ConversationBlock,
  type SystemBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../src/conversation/index.js';
import type { ApprovalRequest } from '../../src/workspace/index.js';
import {
  reply,
  startFakeAnthropicServer,
  toolUse,
  type FakeAnthropicServer,
} from '../fixtures/fake-anthropic-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { closeAll, harness } from './helpers.js';

/**
 * A dev agent on a managed back end, driven through the real `openai` and `@anthropic-ai/sdk`
 * clients against the fake servers: it reads a file, fixes it with edit_file, and runs the
 * project's tests with `node --test`; every change is approved by the service's approver.
 */

const SUM = 'export function sum(a, b) {\n  return a - b;\n}\n';
const SUM_TEST = [
  "import { test } from 'node:test';",
  "import assert from 'node:assert/strict';",
  "import { sum } from './sum.js';",
  "test('adds', () => assert.equal(sum(2, 3), 5));",
  '',
].join('\n');

async function writeProject(root: string): Promise<void> {
  await fs.writeFile(path.join(root, 'package.json'), '{ "type": "module" }\n');
  await fs.writeFile(path.join(root, 'sum.js'), SUM);
  await fs.writeFile(path.join(root, 'sum.test.js'), SUM_TEST);
}

/** The three tool calls and the final answer, as each fake server scripts them. */
const CALLS = [
  { name: 'read_file', input: { path: 'sum.js' } },
  { name: 'edit_file', input: { path: 'sum.js', old_string: 'return a - b;', new_string: 'return a + b;' } },
  { name: 'run_command', input: { command: 'node --test', timeout_ms: 60_000 } },
];

let openai: FakeOpenAiServer;
let anthropic: FakeAnthropicServer;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAiServer(), startFakeAnthropicServer()]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close()]);
});
afterEach(closeAll);

const backends: Array<{ name: string; make: () => AgentBackend; script: () => void; toolResultsSent: () => string[] }> =
  [
    {
      name: 'openai-compatible',
      make: () =>
        createOpenAiCompatibleBackend({ baseURL: openai.url, apiKey: 'dummy', model: 'fake-model', maxRetries: 0 }),
      script: () =>
        openai.enqueue(
          ...CALLS.map((call, index) => ({
            toolCalls: [{ id: `call-${index}`, name: call.name, arguments: call.input }],
          })),
          { text: 'Fixed sum: it added wrongly; the test passes now.' },
        ),
      toolResultsSent: () => {
        const last = openai.completions().at(-1)!;
        return (last['messages'] as Array<{ role: string; content: string }>)
          .filter((message) => message.role === 'tool')
          .map((message) => message.content);
      },
    },
    {
      name: 'anthropic-api',
      make: () =>
        createAnthropicApiBackend({
          apiKey: 'test-key',
          baseURL: anthropic.url,
          maxRetries: 0,
          defaultModel: 'claude-haiku-4-5',
        }),
      script: () =>
        anthropic.enqueue(
          ...CALLS.map((call, index) =>
            reply([toolUse(call.name, call.input, `toolu_${index}`)], { stopReason: 'tool_use' }),
          ),
          reply('Fixed sum: it added wrongly; the test passes now.'),
        ),
      toolResultsSent: () => {
        const last = anthropic.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
        return last.messages.flatMap((message) =>
          Array.isArray(message.content)
            ? (message.content as Array<{ type: string; content?: unknown }>)
                .filter((part) => part.type === 'tool_result')
                .map((part) => (typeof part.content === 'string' ? part.content : JSON.stringify(part.content)))
            : [],
        );
      },
    },
  ];

describe.each(backends)(
  'a dev agent on $name reads, edits and tests the project',
  ({ make, script, toolResultsSent }) => {
    it('the edit’s diff is in the session, the command’s exit code and output in its tool result', async () => {
      const asked: ApprovalRequest[] = [];
      const h = await harness({
        backends: { default: make() },
        approver: (request) => {
          asked.push(request);
          return 'allow_once';
        },
      });
      await writeProject(h.root);
      const [project] = await h.service.listProjects();
      const task = await h.service.createTask({ project: project!.name, title: 'Fix sum' });
      const drafted = await h.service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
      script();
      await h.service.submitPrompt({ channelId: 'c', content: 'sum() is wrong; fix it and run the tests.' });
      await h.service.settled({ channelId: 'c' });

      expect(await fs.readFile(path.join(h.root, 'sum.js'), 'utf8')).toBe(SUM.replace('a - b', 'a + b'));
      // The dev role's default mode asked before the edit and before the command, never before the read.
      expect(asked.map((request) => [request.tool, request.kind])).toEqual([
        ['edit_file', 'edit'],
        ['run_command', 'command'],
      ]);
      expect(asked[0]!.diff).toContain('-  return a - b;\n+  return a + b;');

      const blocks = (await h.manager.loadConversation(drafted.sessionId)).blocks;
      const uses = blocks.filter((block): block is ToolUseBlock => block.type === 'tool_use');
      const results = new Map(
        blocks
          .filter((block): block is ToolResultBlock => block.type === 'tool_result')
          .map((block) => [block.toolUseId, block]),
      );
      expect(uses.map((block) => [block.name, block.status])).toEqual([
        ['read_file', 'success'],
        ['edit_file', 'success'],
        ['run_command', 'success'],
      ]);

      const read = results.get(uses[0]!.toolUseId)!;
      expect(read.content).toBe('1\texport function sum(a, b) {\n2\t  return a - b;\n3\t}');

      const edit = results.get(uses[1]!.toolUseId)!;
      expect(edit.output).toMatchObject({ path: 'sum.js' });
      expect((edit.output as { diff: string }).diff).toContain('-  return a - b;\n+  return a + b;');
      expect(fileEditOf(uses[1]!, edit)).toMatchObject({ path: 'sum.js', kind: 'edit', added: 1, removed: 1 });

      const run = results.get(uses[2]!.toolUseId)!;
      expect(run.isError).toBe(false);
      expect(run.output).toMatchObject({ exitCode: 0, timedOut: false });
      expect(run.content).toMatch(/^\$ node --test\n/);
      expect(run.content).toMatch(/# pass 1/);
      expect(run.content).toMatch(/\[exit code 0\]$/);
      expect(commandOf(uses[2]!, run)).toMatchObject({ command: 'node --test', exitCode: 0 });

      // The model got each result back in the next request of the tool loop.
      const sent = toolResultsSent();
      expect(sent).toHaveLength(3);
      expect(sent[2]).toContain('[exit code 0]');

      // Each request showed in the session as a "waiting" block, then its answer.
      const notices = blocks
        .filter((block): block is SystemBlock => block.type === 'system' && block.subtype === 'info')
        .map((block) => block.content);
      expect(notices).toEqual(
        expect.arrayContaining([
          'Waiting for your approval: Edit sum.js',
          'Waiting for your approval: Run `node --test`',
          'Allowed once.',
        ]),
      );
      const events = h.recorder.of('permission_requested');
      expect(events.map((event) => [event.channelId, event.request.tool])).toEqual([
        ['c', 'edit_file'],
        ['c', 'run_command'],
      ]);
      expect(h.recorder.of('permission_resolved').map((event) => [event.decision, event.source])).toEqual([
        ['allow_once', 'approver'],
        ['allow_once', 'approver'],
      ]);
    });
  },
);

describe('permission modes in a draft', () => {
  it('set_permission_mode applies from the next call and is kept with the draft; plan refuses the edit', async () => {
    const h = await harness({
      backends: {
        default: createOpenAiCompatibleBackend({
          baseURL: openai.url,
          apiKey: 'dummy',
          model: 'fake-model',
          maxRetries: 0,
        }),
      },
    });
    await writeProject(h.root);
    const [project] = await h.service.listProjects();
    const task = await h.service.createTask({ project: project!.name, title: 'Plan' });
    await h.service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
    expect(await h.service.getPermissions({ channelId: 'c' })).toMatchObject({ mode: 'default', requests: [] });
    expect(await h.service.setPermissionMode({ channelId: 'c', mode: 'plan' })).toMatchObject({
      mode: 'plan',
      previous: 'default',
    });
    openai.enqueue(
      { toolCalls: [{ id: 'e', name: 'edit_file', arguments: CALLS[1]!.input }] },
      { text: 'I would change sum.' },
    );
    await h.service.submitPrompt({ channelId: 'c', content: 'Plan the fix.' });
    await h.service.settled({ channelId: 'c' });
    expect(await fs.readFile(path.join(h.root, 'sum.js'), 'utf8')).toBe(SUM);
    const blocks: ConversationBlock[] = (
      await h.manager.loadConversation((await h.service.getPermissions({ channelId: 'c' })).sessionId!)
    ).blocks;
    const result = blocks.find((block): block is ToolResultBlock => block.type === 'tool_result');
    expect(result?.content).toMatch(/^Refused: the session is in plan mode/);
    expect(h.recorder.of('permission_requested')).toEqual([]);
    // Kept in draft.json.
    const stored = await fs.readFile(path.join(h.dataDir, 'tasks', task.slug, 'draft.json'), 'utf8');
    expect(JSON.parse(stored)).toMatchObject({ permissionMode: 'plan' });
    await expect(h.service.setPermissionMode({ channelId: 'nobody', mode: 'default' })).rejects.toMatchObject({
      code: 'NO_ACTIVE_DRAFT',
    });
  });
});

describe('the command sandbox', () => {
  it('without one, drafting an agent that may run commands says so once in its session', async () => {
    const h = await harness({ sandbox: 'none' });
    const [project] = await h.service.listProjects();
    const task = await h.service.createTask({ project: project!.name, title: 'Unconfined' });
    const dev = await h.service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
    const notices = (await h.manager.loadConversation(dev.sessionId)).blocks.filter(
      (block): block is SystemBlock =>
        block.type === 'system' && (block.data as { code?: string } | undefined)?.code === 'NO_SANDBOX',
    );
    expect(notices).toHaveLength(1);
    expect(notices[0]!.content).toMatch(/^No sandbox: the sandbox is turned off, so commands run unconfined\./);
    expect(await h.service.getPermissions({ channelId: 'c' })).toMatchObject({ sandbox: { kind: 'none' } });
    // A role that may not run commands is not told.
    const other = await h.service.createTask({ project: project!.name, title: 'Reading' });
    const analyst = await h.service.draft({
      channelId: 'd',
      role: 'product-analyst',
      project: project!.name,
      task: other.slug,
    });
    expect((await h.manager.loadConversation(analyst.sessionId)).blocks.some((block) => block.type === 'system')).toBe(
      false,
    );
  });
});
