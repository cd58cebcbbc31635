import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApprovalBroker,
  ProjectWorkspace,
  type ResolvedPath,
  type WorkspaceFiles,
  type WorkspaceTool,
} from '../../src/workspace/index.js';
import { tempWorkspace } from './helpers.js';

/**
 * The file tools' pluggable reader and writer: read_file, edit_file and write_file go through the
 * given WorkspaceFiles (an editor's buffers, here a map), after confinement; the disk stays as it was.
 */

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
let buffers: Map<string, string>;
let calls: string[];
let tools: Map<string, WorkspaceTool>;

const memoryFiles: WorkspaceFiles = {
  async read(target: ResolvedPath) {
    calls.push(`read ${target.relative}`);
    return buffers.get(target.absolute);
  },
  async write(target: ResolvedPath, content: string) {
    calls.push(`write ${target.relative}`);
    buffers.set(target.absolute, content);
  },
};

beforeEach(async () => {
  dirs = await tempWorkspace();
  buffers = new Map();
  calls = [];
  const workspace = await ProjectWorkspace.open({ root: dirs.root, sandbox: 'none' });
  const list = workspace.tools({
    sessionId: 'session-1',
    permissions: ['files-read', 'files-write'],
    mode: 'bypassPermissions',
    broker: new ApprovalBroker(),
    files: memoryFiles,
  });
  tools = new Map(list.map((tool) => [tool.name, tool]));
});
afterEach(() => dirs.cleanup());

const call = (name: string, input: unknown) => tools.get(name)!.execute(input, {});

describe('the file tools with a WorkspaceFiles of their own', () => {
  it('read, edit and write through it, leaving the disk alone', async () => {
    const file = path.join(dirs.root, 'notes.md');
    await fs.writeFile(file, 'on disk\n');
    buffers.set(file, 'in the buffer\n');
    expect((await call('read_file', { path: 'notes.md' })).content).toBe('1\tin the buffer');
    expect(
      await call('edit_file', { path: 'notes.md', old_string: 'in the', new_string: 'in the edited' }),
    ).toMatchObject({ data: { path: 'notes.md' } });
    expect(buffers.get(file)).toBe('in the edited buffer\n');
    expect((await call('write_file', { path: 'fresh.md', content: 'new\n' })).data).toMatchObject({ created: true });
    expect(buffers.get(path.join(dirs.root, 'fresh.md'))).toBe('new\n');
    expect(await fs.readFile(file, 'utf8')).toBe('on disk\n');
    await expect(fs.stat(path.join(dirs.root, 'fresh.md'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('still refuses paths outside the project and protected folders before asking it', async () => {
    expect((await call('read_file', { path: '../outside/secret.txt' })).content).toMatch(/^PATH_OUTSIDE_PROJECT/);
    expect((await call('write_file', { path: '.git/config', content: 'x' })).content).toMatch(/^PATH_PROTECTED/);
    expect(calls).toEqual([]);
  });

  it('says a file it does not hold does not exist', async () => {
    expect((await call('edit_file', { path: 'missing.md', old_string: 'a', new_string: 'b' })).content).toMatch(
      /^NOT_FOUND/,
    );
  });
});
