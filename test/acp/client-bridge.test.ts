import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  agent,
  client,
  type AgentConnection,
  type RequestPermissionRequest,
  type ToolCallUpdate,
} from '@agentclientprotocol/sdk';
import {
  askingFirst,
  clientFilesOf,
  createPermissionBridge,
  editorFilesOf,
  type ToolCallAnnouncer,
} from '../../src/acp/index.js';
import type { ApprovalRequest } from '../../src/workspace/index.js';
import type { ToolDefinition } from '../../src/backends/index.js';

/**
 * The seam the workspace tools plug into: the permission bridge and the editor's files, against
 * the SDK's real client app connected in process (no transport), serving files from a temp folder.
 */

let folder: string;
let connection: AgentConnection;
const asked: RequestPermissionRequest[] = [];
let answers: string[] = [];
/** What reached the editor, in order: tool calls announced, calls closed, questions asked. */
const timeline: string[] = [];
const closed: ToolCallUpdate[] = [];
const calls: ToolCallAnnouncer = {
  async announce(toolCall) {
    timeline.push(`tool_call ${toolCall.toolCallId}`);
  },
  update(update) {
    closed.push(update);
    timeline.push(`tool_call_update ${update.toolCallId} ${update.status}`);
  },
};

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-acp-bridge-'));
  asked.length = 0;
  timeline.length = 0;
  closed.length = 0;
  const editor = client({ name: 'editor' })
    .onRequest('session/request_permission', ({ params }) => {
      asked.push(params);
      timeline.push(`request_permission ${params.toolCall.toolCallId}`);
      const optionId = answers.shift();
      return optionId === undefined
        ? { outcome: { outcome: 'cancelled' } }
        : { outcome: { outcome: 'selected', optionId } };
    })
    .onRequest('fs/read_text_file', async ({ params }) => {
      const lines = (await readFile(params.path, 'utf8')).split('\n');
      const start = (params.line ?? 1) - 1;
      return { content: lines.slice(start, params.limit ? start + params.limit : undefined).join('\n') };
    })
    .onRequest('fs/write_text_file', async ({ params }) => {
      await writeFile(params.path, params.content);
      return {};
    });
  connection = agent({ name: 'parley' }).connect(editor);
});

afterEach(async () => {
  connection.close();
  await rm(folder, { recursive: true, force: true });
});

function countingTool(): ToolDefinition & { runs: number } {
  const tool = {
    runs: 0,
    name: 'write_file',
    description: 'writes',
    inputSchema: { type: 'object' },
    async execute() {
      tool.runs += 1;
      return { content: 'written' };
    },
  };
  return tool;
}

describe('the ACP client bridge', () => {
  it('reads and writes files through the editor when it offers fs, and offers nothing when it does not', async () => {
    const path = join(folder, 'notes.txt');
    await writeFile(path, 'one\ntwo\nthree\n');
    const files = clientFilesOf(connection.client, 'session-1', { fs: { readTextFile: true, writeTextFile: true } })!;
    expect(await files.readTextFile(path, { line: 2, limit: 1 })).toBe('two');
    await files.writeTextFile(path, 'changed\n');
    expect(await readFile(path, 'utf8')).toBe('changed\n');
    expect(clientFilesOf(connection.client, 'session-1', {})).toBeUndefined();
    const readOnly = clientFilesOf(connection.client, 'session-1', { fs: { readTextFile: true } })!;
    await expect(readOnly.writeTextFile(path, 'x')).rejects.toThrow(/does not offer fs\/write_text_file/);
  });

  it('asks before a tool runs: reject keeps it from running, allow always stops asking for that tool, a cancelled question rejects', async () => {
    const bridge = createPermissionBridge(connection.client, 'session-1', calls);
    const tool = countingTool();
    const gated = askingFirst(tool, bridge, (input) => ({
      toolCallId: 'call-1',
      title: 'Write notes.txt',
      kind: 'edit',
      rawInput: input,
    }));

    answers = ['reject_once'];
    expect(await gated.execute({ path: 'notes.txt' }, {})).toMatchObject({
      isError: true,
      content: expect.stringContaining('declined'),
    });
    expect(tool.runs).toBe(0);
    expect(asked[0]).toMatchObject({
      sessionId: 'session-1',
      toolCall: { toolCallId: 'call-1', title: 'Write notes.txt', rawInput: { path: 'notes.txt' } },
    });

    answers = ['allow_once'];
    expect(await gated.execute({}, {})).toEqual({ content: 'written' });
    answers = ['allow_always'];
    await gated.execute({}, {});
    await gated.execute({}, {});
    expect(tool.runs).toBe(3);
    expect(asked).toHaveLength(3);

    const other = askingFirst(countingTool(), createPermissionBridge(connection.client, 'session-2', calls), () => ({
      toolCallId: 'call-2',
    }));
    answers = [];
    expect(await other.execute({}, {})).toMatchObject({ isError: true });
  });

  it('asks about a workspace approval with its diff, and hands allow always back to the broker only when the request offers it', async () => {
    const bridge = createPermissionBridge(connection.client, 'session-1', calls);
    const edit: ApprovalRequest = {
      requestId: 'request-1',
      sessionId: 'session-1',
      tool: 'edit_file',
      kind: 'edit',
      title: 'Edit src/a.ts',
      path: 'src/a.ts',
      diff: '--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,1 +1,1 @@\n-const a = 1;\n+const a = 2;\n',
      allowAlwaysScope: 'every edit_file call in this session',
      requestedAt: new Date(0).toISOString(),
    };
    answers = ['allow_always'];
    expect(await bridge.approve(edit, '/project')).toBe('allow_always');
    expect(asked[0]!.toolCall).toMatchObject({
      toolCallId: 'permission-request-1',
      title: 'Edit src/a.ts',
      kind: 'edit',
      content: [{ type: 'diff', path: '/project/src/a.ts', oldText: 'const a = 1;\n', newText: 'const a = 2;\n' }],
      locations: [{ path: '/project/src/a.ts' }],
    });
    // The bridge remembers nothing for the broker: the same request is asked again.
    answers = ['reject_once'];
    expect(await bridge.approve(edit, '/project')).toBe('deny');

    const chained: ApprovalRequest = {
      requestId: 'request-2',
      sessionId: 'session-1',
      tool: 'run_command',
      kind: 'command',
      title: 'Run `a && b`',
      command: 'a && b',
      cwd: '.',
      requestedAt: new Date(0).toISOString(),
    };
    // allow always is not offered for a chained command; an answer naming an option not offered is a deny.
    answers = ['allow_always'];
    expect(await bridge.approve(chained, '/project')).toBe('deny');
    expect(asked[2]!.options.map((option) => option.optionId)).toEqual(['allow_once', 'reject_once']);
    expect(asked[2]!.toolCall).toMatchObject({
      title: 'Run `a && b`',
      kind: 'execute',
      rawInput: { command: 'a && b', cwd: '/project' },
    });
    answers = ['allow_once'];
    expect(await bridge.approve(chained, '/project')).toBe('allow_once');
    answers = [];
    expect(await bridge.approve(chained, '/project')).toBe('deny');
  });

  it('names the tool use being executed, told to the editor before the question; a call without one is closed by the bridge', async () => {
    const bridge = createPermissionBridge(connection.client, 'session-1', calls);
    const tool = countingTool();
    const gated = askingFirst(tool, bridge, (input) => ({
      toolCallId: 'permission-own',
      title: 'create_task (needs projects-create)',
      rawInput: input,
    }));
    answers = ['reject_once'];
    await gated.execute({}, { toolUseId: 'call-7' });
    // The log's tool use closes call-7 (its result); nothing is closed here.
    expect(timeline).toEqual(['tool_call call-7', 'request_permission call-7']);

    timeline.length = 0;
    answers = ['reject_once', 'allow_once'];
    await gated.execute({}, {});
    await gated.execute({}, {});
    expect(timeline).toEqual([
      'tool_call permission-own',
      'request_permission permission-own',
      'tool_call_update permission-own failed',
      'tool_call permission-own',
      'request_permission permission-own',
      'tool_call_update permission-own completed',
    ]);
    expect(JSON.stringify(closed[0])).toContain('declined');
  });

  it("asks about a workspace approval under its tool use's id, with a written file's diff ending as the file does", async () => {
    const bridge = createPermissionBridge(connection.client, 'session-1', calls);
    const created: ApprovalRequest = {
      requestId: 'request-3',
      sessionId: 'session-1',
      tool: 'write_file',
      kind: 'write',
      title: 'Create notes.md',
      path: 'notes.md',
      diff: '--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1,2 @@\n+# Notes\n+one\n',
      requestedAt: new Date(0).toISOString(),
    };
    answers = ['reject_once'];
    expect(await bridge.approve({ ...created, toolUseId: 'call-9' }, '/project')).toBe('deny');
    expect(timeline).toEqual(['tool_call call-9', 'request_permission call-9']);
    expect(asked[0]!.toolCall.content).toEqual([
      { type: 'diff', path: '/project/notes.md', oldText: null, newText: '# Notes\none\n' },
    ]);

    const noNewline: ApprovalRequest = {
      ...created,
      requestId: 'request-4',
      diff: '--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1,2 @@\n+# Notes\n+one\n\\ No newline at end of file\n',
    };
    timeline.length = 0;
    answers = ['reject_once'];
    expect(await bridge.approve(noNewline, '/project')).toBe('deny');
    expect(asked[1]!.toolCall.content).toEqual([
      { type: 'diff', path: '/project/notes.md', oldText: null, newText: '# Notes\none' },
    ]);
    // No tool use names this call, so the bridge closes it.
    expect(timeline).toEqual([
      'tool_call permission-request-4',
      'request_permission permission-request-4',
      'tool_call_update permission-request-4 failed',
    ]);
  });

  it("gives the file tools the editor's files: a missing file is undefined, what the editor does not offer uses the disk", async () => {
    const path = join(folder, 'notes.txt');
    await writeFile(path, 'on disk\n');
    const target = { absolute: path, relative: 'notes.txt', root: folder };
    const missing = { absolute: join(folder, 'missing.txt'), relative: 'missing.txt', root: folder };
    const both = editorFilesOf(
      clientFilesOf(connection.client, 'session-1', { fs: { readTextFile: true, writeTextFile: true } })!,
    );
    expect(await both.read(target)).toBe('on disk\n');
    expect(await both.read(missing)).toBeUndefined();
    await both.write(target, 'through the editor\n');
    expect(await readFile(path, 'utf8')).toBe('through the editor\n');

    const readOnly = editorFilesOf(clientFilesOf(connection.client, 'session-1', { fs: { readTextFile: true } })!);
    await readOnly.write(missing, 'on the disk\n');
    expect(await readFile(missing.absolute, 'utf8')).toBe('on the disk\n');
  });
});
