import { describe, expect, it } from 'vitest';
import { commandOf, fileEditOf, parseUnifiedDiff } from '../../src/conversation/index.js';

describe('fileEditOf', () => {
  it("shows Claude Code's Edit as the lines it removes and adds", () => {
    const view = fileEditOf({
      name: 'Edit',
      input: { file_path: '/p/a.ts', old_string: 'const a = 1;\n', new_string: 'const a = 2;\nconst b = 3;\n' },
    });
    expect(view).toMatchObject({ path: '/p/a.ts', kind: 'edit', added: 2, removed: 1 });
    expect(view?.hunks[0]?.lines).toEqual([
      { kind: '-', text: 'const a = 1;' },
      { kind: '+', text: 'const a = 2;' },
      { kind: '+', text: 'const b = 3;' },
    ]);
  });

  it('shows a whole-file write as added lines, and MultiEdit as one hunk per edit', () => {
    expect(fileEditOf({ name: 'Write', input: { file_path: 'n.md', content: '# T\nbody' } })).toMatchObject({
      kind: 'write',
      added: 2,
      removed: 0,
    });
    const multi = fileEditOf({
      name: 'MultiEdit',
      input: {
        file_path: 'm.ts',
        edits: [
          { old_string: 'a', new_string: 'b' },
          { old_string: 'c', new_string: 'd' },
        ],
      },
    });
    expect(multi?.hunks).toHaveLength(2);
    expect(multi).toMatchObject({ added: 2, removed: 2 });
  });

  it('prefers the diff a Parley file tool reports it made over the one its input asked for', () => {
    const diff = '--- a/x.txt\n+++ b/x.txt\n@@ -3,2 +3,2 @@\n keep\n-old\n+new\n';
    const view = fileEditOf(
      { name: 'edit_file', input: { path: 'x.txt', old_string: 'zzz', new_string: 'yyy' } },
      { output: { path: 'x.txt', diff }, isError: false },
    );
    expect(view).toMatchObject({ path: 'x.txt', added: 1, removed: 1 });
    expect(view?.hunks[0]).toMatchObject({ oldStart: 3, newStart: 3 });
  });

  it('is undefined for tools that do not edit, and for edit inputs it cannot read', () => {
    expect(fileEditOf({ name: 'Read', input: { file_path: 'a' } })).toBeUndefined();
    expect(fileEditOf({ name: 'Edit', input: { file_path: 'a' } })).toBeUndefined();
    expect(fileEditOf({ name: 'Write', input: 'not an object' })).toBeUndefined();
  });
});

describe('commandOf', () => {
  it('shows a shell tool as its command, with the output and exit code once the result is in', () => {
    expect(commandOf({ name: 'Bash', input: { command: 'ls' } })).toEqual({ command: 'ls' });
    expect(
      commandOf(
        { name: 'run_command', input: { command: 'node --test', cwd: 'pkg' } },
        { content: 'ok', output: { exitCode: 1 }, isError: true },
      ),
    ).toEqual({
      command: 'node --test',
      cwd: 'pkg',
      output: 'ok',
      exitCode: 1,
      isError: true,
    });
    expect(commandOf({ name: 'Edit', input: { command: 'x' } })).toBeUndefined();
  });
});

describe('parseUnifiedDiff', () => {
  it('reads hunk headers with and without line counts, skipping file headers', () => {
    const hunks = parseUnifiedDiff(
      'Index: f\n===\n--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n@@ -10,3 +10,4 @@\n x\n+y\n x\n x\n',
    );
    expect(hunks.map((hunk) => [hunk.oldStart, hunk.oldLines, hunk.newStart, hunk.newLines])).toEqual([
      [1, 1, 1, 1],
      [10, 3, 10, 4],
    ]);
  });
});
