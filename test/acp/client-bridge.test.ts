import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agent, client, type AgentConnection, type RequestPermissionRequest } from '@agentclientprotocol/sdk';
import { askingFirst, clientFilesOf, createPermissionBridge } from '../../src/acp/index.js';
import type { ToolDefinition } from '../../src/backends/index.js';

/**
 * The seam the workspace tools plug into: the permission bridge and the editor's files, against
 * the SDK's real client app connected in process (no transport), serving files from a temp folder.
 */

let folder: string;
let connection: AgentConnection;
const asked: RequestPermissionRequest[] = [];
let answers: string[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-acp-bridge-'));
  asked.length = 0;
  const editor = client({ name: 'editor' })
    .onRequest('session/request_permission', ({ params }) => {
      asked.push(params);
      const optionId = answers.shift();
      return optionId === undefined ? { outcome: { outcome: 'cancelled' } } : { outcome: { outcome: 'selected', optionId } };
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
    const bridge = createPermissionBridge(connection.client, 'session-1');
    const tool = countingTool();
    const gated = askingFirst(tool, bridge, (input) => ({ toolCallId: 'call-1', title: 'Write notes.txt', kind: 'edit', rawInput: input }));

    answers = ['reject_once'];
    expect(await gated.execute({ path: 'notes.txt' }, {})).toMatchObject({ isError: true, content: expect.stringContaining('declined') });
    expect(tool.runs).toBe(0);
    expect(asked[0]).toMatchObject({ sessionId: 'session-1', toolCall: { toolCallId: 'call-1', title: 'Write notes.txt', rawInput: { path: 'notes.txt' } } });

    answers = ['allow_once'];
    expect(await gated.execute({}, {})).toEqual({ content: 'written' });
    answers = ['allow_always'];
    await gated.execute({}, {});
    await gated.execute({}, {});
    expect(tool.runs).toBe(3);
    expect(asked).toHaveLength(3);

    const other = askingFirst(countingTool(), createPermissionBridge(connection.client, 'session-2'), () => ({ toolCallId: 'call-2' }));
    answers = [];
    expect(await other.execute({}, {})).toMatchObject({ isError: true });
  });
});
