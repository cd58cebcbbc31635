import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RequestPermissionRequest, SessionUpdate } from '@agentclientprotocol/sdk';
import { Editor, spawnParleyAcp, type EditorOptions } from './acp-process.js';

/**
 * Parley's workspace tools (read_file, edit_file, write_file, run_command) in a `parley acp`
 * session on the scripted back end, as the `dev` role has them: approvals asked through the
 * editor's `session/request_permission`, files read and written through the editor's `fs/*` when
 * it offers them.
 */

let project: string;
const editors: Editor[] = [];

beforeEach(async () => {
  project = await realpath(await mkdtemp(join(tmpdir(), 'parley-acp-tools-')));
});

afterEach(async () => {
  for (const editor of editors.splice(0)) await editor.close();
  await rm(project, { recursive: true, force: true });
});

async function startEditor(script: unknown, options: EditorOptions = {}): Promise<Editor> {
  const scriptPath = join(project, `script-${editors.length}.json`);
  await writeFile(scriptPath, JSON.stringify(script));
  const editor = new Editor(spawnParleyAcp({ cwd: project, env: { PARLEY_SCRIPTED_SCRIPT: scriptPath } }), options);
  editors.push(editor);
  await editor.initialize();
  return editor;
}

async function devSession(editor: Editor): Promise<string> {
  const { sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
  await editor.agent.request('session/set_mode', { sessionId, modeId: 'dev' });
  return sessionId;
}

/** The last word on each tool call of a session (its result), in order. */
function results(
  updates: readonly SessionUpdate[],
): Array<Extract<SessionUpdate, { sessionUpdate: 'tool_call_update' }>> {
  const last = new Map<string, Extract<SessionUpdate, { sessionUpdate: 'tool_call_update' }>>();
  for (const update of updates)
    if (update.sessionUpdate === 'tool_call_update' && update.status !== 'in_progress')
      last.set(update.toolCallId, update);
  return [...last.values()];
}

const answering =
  (answers: string[]): EditorOptions['permission'] =>
  () => ({ outcome: { outcome: 'selected', optionId: answers.shift()! } });

describe('parley acp: the workspace tools', () => {
  it('asks before an edit with the diff as content: reject leaves the file as it was, allow once edits it, allow always stops asking for the session', async () => {
    const file = join(project, 'app.ts');
    await writeFile(file, 'const a = 1;\nconst b = 2;\n');
    const edit = (from: string, to: string) => ({
      type: 'tool',
      name: 'edit_file',
      input: { path: 'app.ts', old_string: from, new_string: to },
    });
    const editor = await startEditor(
      {
        turns: [
          [edit('const a = 1;', 'const a = 10;')],
          [edit('const a = 1;', 'const a = 11;')],
          [edit('const b = 2;', 'const b = 20;')],
          [edit('const a = 11;', 'const a = 12;')],
        ],
      },
      { permission: answering(['reject_once', 'allow_once', 'allow_always']) },
    );
    const sessionId = await devSession(editor);

    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'one' }] });
    expect(editor.permissionRequests).toHaveLength(1);
    const asked: RequestPermissionRequest = editor.permissionRequests[0]!;
    expect(asked.toolCall).toMatchObject({
      title: 'Edit app.ts',
      kind: 'edit',
      content: [
        { type: 'diff', path: file, oldText: 'const a = 1;\nconst b = 2;\n', newText: 'const a = 10;\nconst b = 2;\n' },
      ],
      locations: [{ path: file }],
    });
    expect(asked.options.map((option) => option.kind)).toEqual(['allow_once', 'allow_always', 'reject_once']);
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\nconst b = 2;\n');
    expect(results(editor.updatesOf(sessionId))[0]).toMatchObject({
      status: 'failed',
      toolCallId: asked.toolCall.toolCallId,
    });
    expect(JSON.stringify(results(editor.updatesOf(sessionId))[0])).toContain('Denied by the user');

    for (const text of ['two', 'three', 'four'])
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
    // allow once, then allow always; the fourth edit is not asked about.
    expect(editor.permissionRequests).toHaveLength(3);
    expect(await readFile(file, 'utf8')).toBe('const a = 12;\nconst b = 20;\n');
    expect(results(editor.updatesOf(sessionId)).map((update) => update.status)).toEqual([
      'failed',
      'completed',
      'completed',
      'completed',
    ]);
    // The edit as it was made: diff content with the file's absolute path, as ACP wants.
    expect(results(editor.updatesOf(sessionId))[1]).toMatchObject({
      content: [
        { type: 'diff', path: file, oldText: 'const a = 1;\nconst b = 2;\n', newText: 'const a = 11;\nconst b = 2;\n' },
      ],
    });
    const call = editor
      .updatesOf(sessionId)
      .find((update) => update.sessionUpdate === 'tool_call' && update.kind === 'edit');
    expect(call).toMatchObject({ title: 'Edit app.ts', locations: [{ path: file }] });
  });

  it('asks before a command with the command as the title, and offers no "allow always" for a chained one', async () => {
    const editor = await startEditor(
      {
        turns: [
          [
            { type: 'tool', name: 'run_command', input: { command: 'echo hello' } },
            { type: 'tool', name: 'run_command', input: { command: 'echo one && echo two' } },
          ],
        ],
      },
      { permission: answering(['allow_once', 'reject_once']) },
    );
    const sessionId = await devSession(editor);
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'run' }] });
    expect(editor.permissionRequests.map((request) => [request.toolCall.title, request.toolCall.kind])).toEqual([
      ['Run `echo hello`', 'execute'],
      ['Run `echo one && echo two`', 'execute'],
    ]);
    expect(editor.permissionRequests[1]!.options.map((option) => option.kind)).toEqual(['allow_once', 'reject_once']);
    const [ran, refused] = results(editor.updatesOf(sessionId));
    expect(ran).toMatchObject({ status: 'completed' });
    expect(JSON.stringify(ran)).toContain('hello');
    expect(refused).toMatchObject({ status: 'failed' });
  });

  it("reads and writes through the editor's buffers when it offers fs, leaving the disk file alone", async () => {
    const file = join(project, 'notes.md');
    await writeFile(file, 'saved on disk\n');
    const buffers = new Map([[file, 'unsaved in the editor\n']]);
    const fsCalls: string[] = [];
    const editor = await startEditor(
      {
        turns: [
          [
            { type: 'tool', name: 'read_file', input: { path: 'notes.md' } },
            {
              type: 'tool',
              name: 'edit_file',
              input: { path: 'notes.md', old_string: 'unsaved', new_string: 'edited' },
            },
            { type: 'tool', name: 'write_file', input: { path: 'new.md', content: 'fresh\n' } },
            { type: 'tool', name: 'edit_file', input: { path: '../outside.md', old_string: 'a', new_string: 'b' } },
          ],
        ],
      },
      {
        files: buffers,
        capabilities: { fs: { readTextFile: true, writeTextFile: true } },
        permission: answering(['allow_once', 'allow_once']),
        onFileRequest: (method, path) => fsCalls.push(`${method} ${path}`),
      },
    );
    const sessionId = await devSession(editor);
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit the notes' }] });

    const [read, edited, written, outside] = results(editor.updatesOf(sessionId));
    expect(JSON.stringify(read)).toContain('unsaved in the editor');
    expect(edited).toMatchObject({ status: 'completed' });
    expect(buffers.get(file)).toBe('edited in the editor\n');
    expect(await readFile(file, 'utf8')).toBe('saved on disk\n');
    // The edit was asked about against the buffer's text, not the disk's.
    expect(editor.permissionRequests[0]!.toolCall.content).toEqual([
      { type: 'diff', path: file, oldText: 'unsaved in the editor\n', newText: 'edited in the editor\n' },
    ]);
    // A new file: created through the editor, shown as a creation (no old text).
    expect(written).toMatchObject({ status: 'completed' });
    expect(editor.permissionRequests[1]!.toolCall).toMatchObject({
      title: 'Create new.md',
      // The whole file as it will be, its last newline kept.
      content: [{ type: 'diff', path: join(project, 'new.md'), oldText: null, newText: 'fresh\n' }],
    });
    // Each question names the tool call it is about, the one its result closes.
    expect(editor.permissionRequests.map((request) => request.toolCall.toolCallId)).toEqual([
      edited!.toolCallId,
      written!.toolCallId,
    ]);
    expect(buffers.get(join(project, 'new.md'))).toBe('fresh\n');
    await expect(readFile(join(project, 'new.md'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    // Confinement still applies: the editor is never asked for a file outside the project.
    expect(outside).toMatchObject({ status: 'failed' });
    expect(JSON.stringify(outside)).toContain('PATH_OUTSIDE_PROJECT');
    expect(fsCalls.every((call) => call.split(' ')[1]!.startsWith(`${project}/`))).toBe(true);
    expect(fsCalls).toContain(`fs/write_text_file ${file}`);
    expect(fsCalls.filter((call) => call.startsWith('fs/read_text_file')).length).toBeGreaterThanOrEqual(3);
  });

  it('cancelling the turn while the editor is asked about an edit ends it cancelled, with the file unchanged', async () => {
    const file = join(project, 'app.ts');
    await writeFile(file, 'const a = 1;\n');
    let asked!: () => void;
    const questionArrived = new Promise<void>((resolve) => (asked = resolve));
    const editor = await startEditor(
      {
        turns: [
          [
            {
              type: 'tool',
              name: 'edit_file',
              input: { path: 'app.ts', old_string: 'const a = 1;', new_string: 'const a = 2;' },
            },
            { type: 'text', text: 'never said' },
          ],
        ],
      },
      // The person never answers.
      { permission: () => (asked(), new Promise(() => undefined)) },
    );
    const sessionId = await devSession(editor);
    const prompt = editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit' }] });
    await questionArrived;
    await editor.agent.notify('session/cancel', { sessionId });
    expect(await prompt).toEqual({ stopReason: 'cancelled' });
    expect(await readFile(file, 'utf8')).toBe('const a = 1;\n');
  });

  it('uses the local disk when the editor offers no fs', async () => {
    const file = join(project, 'notes.md');
    await writeFile(file, 'on disk\n');
    const fsCalls: string[] = [];
    const editor = await startEditor(
      {
        turns: [
          [
            {
              type: 'tool',
              name: 'edit_file',
              input: { path: 'notes.md', old_string: 'on disk', new_string: 'changed on disk' },
            },
          ],
        ],
      },
      {
        files: new Map(),
        permission: answering(['allow_once']),
        onFileRequest: (method, path) => fsCalls.push(`${method} ${path}`),
      },
    );
    const sessionId = await devSession(editor);
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit' }] });
    expect(results(editor.updatesOf(sessionId))[0]).toMatchObject({ status: 'completed' });
    expect(await readFile(file, 'utf8')).toBe('changed on disk\n');
    expect(fsCalls).toEqual([]);
  });
});
