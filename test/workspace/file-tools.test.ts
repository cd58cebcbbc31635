import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileEditOf } from '../../src/conversation/index.js';
import { findOnPath } from '../../src/workspace/sandbox.js';
import { grepProject } from '../../src/workspace/index.js';
import { tempWorkspace, toolRig, type ToolRig } from './helpers.js';

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
let rig: ToolRig;
const write = (relative: string, text: string) =>
  fs
    .mkdir(path.dirname(path.join(dirs.root, relative)), { recursive: true })
    .then(() => fs.writeFile(path.join(dirs.root, relative), text));
const read = (relative: string) => fs.readFile(path.join(dirs.root, relative), 'utf8');

beforeEach(async () => {
  dirs = await tempWorkspace();
  rig = await toolRig(dirs.root);
});
afterEach(() => dirs.cleanup());

describe('read_file', () => {
  it('numbers lines and reads a range, saying how to read on', async () => {
    await write('many.txt', Array.from({ length: 10 }, (_, index) => `line ${index + 1}`).join('\n') + '\n');
    const range = await rig.call('read_file', { path: 'many.txt', offset: 3, limit: 2 });
    expect(range.content).toBe('3\tline 3\n4\tline 4\n[lines 3–4 of 10; read on with offset 5]');
    expect(range.data).toEqual({ path: 'many.txt', startLine: 3, endLine: 4, totalLines: 10 });
    const past = await rig.call('read_file', { path: 'many.txt', offset: 11 });
    expect(past.content).toMatch(/has 10 lines; offset 11 is past its end/);
  });

  it('says clearly when the file is missing, a folder or binary', async () => {
    expect((await rig.call('read_file', { path: 'nope.txt' })).content).toMatch(
      /^NOT_FOUND: "nope.txt" does not exist/,
    );
    await fs.mkdir(path.join(dirs.root, 'folder'));
    expect((await rig.call('read_file', { path: 'folder' })).content).toMatch(/is a folder, not a file/);
    await fs.writeFile(path.join(dirs.root, 'blob.bin'), Buffer.from([1, 0, 2]));
    expect((await rig.call('read_file', { path: 'blob.bin' })).content).toMatch(/is a binary file \(3 bytes\)/);
  });

  it('rejects input that does not match its schema, naming the field', async () => {
    const result = await rig.call('read_file', { path: 'a', offset: 0 });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^Invalid input for read_file: offset:/);
  });
});

describe('edit_file', () => {
  it('replaces a unique string and returns its unified diff as output { path, diff }', async () => {
    await write('src/app.js', 'const a = 1;\nconst b = 2;\n');
    const result = await rig.call('edit_file', {
      path: 'src/app.js',
      old_string: 'const b = 2;',
      new_string: 'const b = 3;',
    });
    expect(result.isError).toBeUndefined();
    expect(await read('src/app.js')).toBe('const a = 1;\nconst b = 3;\n');
    const output = result.data as { path: string; diff: string };
    expect(output.path).toBe('src/app.js');
    expect(output.diff).toContain('-const b = 2;\n+const b = 3;');
    // The UIs read exactly this shape.
    const view = fileEditOf(
      { name: 'edit_file', input: { path: 'src/app.js' } },
      { output: result.data, isError: false },
    );
    expect(view).toMatchObject({ path: 'src/app.js', kind: 'edit', added: 1, removed: 1 });
  });

  it('fails, changing nothing, when the old text is absent or not unique', async () => {
    await write('twice.txt', 'x = 1\nx = 1\n');
    const absent = await rig.call('edit_file', { path: 'twice.txt', old_string: 'y = 1', new_string: 'y = 2' });
    expect(absent.content).toMatch(/^EDIT_NO_MATCH: old_string was not found in "twice.txt"; nothing was changed/);
    const ambiguous = await rig.call('edit_file', { path: 'twice.txt', old_string: 'x = 1', new_string: 'x = 2' });
    expect(ambiguous.content).toMatch(
      /^EDIT_NOT_UNIQUE: old_string occurs 2 times in "twice.txt"; nothing was changed/,
    );
    expect(await read('twice.txt')).toBe('x = 1\nx = 1\n');
    const all = await rig.call('edit_file', {
      path: 'twice.txt',
      old_string: 'x = 1',
      new_string: 'x = $&2',
      replace_all: true,
    });
    expect(all.content).toMatch(/^Edited twice.txt \(2 replacements\)/);
    expect(await read('twice.txt')).toBe('x = $&2\nx = $&2\n');
  });

  it('points to write_file for a missing file', async () => {
    expect((await rig.call('edit_file', { path: 'new.txt', old_string: 'a', new_string: 'b' })).content).toMatch(
      /create it with write_file/,
    );
  });
});

describe('write_file', () => {
  it('creates a file and its folders, then overwrites it, with diffs; keeps the file mode', async () => {
    const created = await rig.call('write_file', { path: 'deep/er/new.sh', content: 'echo one\n' });
    expect(created.content).toMatch(/^Created deep\/er\/new.sh \(1 line\)/);
    expect((created.data as { diff: string }).diff).toContain('+echo one');
    await fs.chmod(path.join(dirs.root, 'deep/er/new.sh'), 0o755);
    await rig.call('write_file', { path: 'deep/er/new.sh', content: 'echo two\n' });
    expect(await read('deep/er/new.sh')).toBe('echo two\n');
    expect((await fs.stat(path.join(dirs.root, 'deep/er/new.sh'))).mode & 0o777).toBe(0o755);
    expect(await fs.readdir(path.join(dirs.root, 'deep/er'))).toEqual(['new.sh']);
  });
});

describe('list_files, glob and grep', () => {
  beforeEach(async () => {
    await write('.gitignore', 'node_modules/\n*.log\n');
    await write('src/a.ts', 'export const alpha = 1;\n// TODO one\n');
    await write('src/nested/b.ts', 'export const beta = 2; // todo two\n');
    await write('src/nested/.gitignore', 'generated.ts\n');
    await write('src/nested/generated.ts', 'TODO generated\n');
    await write('node_modules/dep/index.js', 'TODO dependency\n');
    await write('debug.log', 'TODO log\n');
    await write('README.md', 'TODO readme\n');
    await fs.mkdir(path.join(dirs.root, '.git'));
    await write('.git/config', 'TODO git\n');
  });

  it('list_files shows one folder, folders with "/", leaving out ignored entries and .git', async () => {
    const result = await rig.call('list_files', {});
    expect(result.content.split('\n')).toEqual(['.gitignore  (20 bytes)', 'README.md  (12 bytes)', 'src/']);
  });

  it('glob finds by pattern, respecting root and nested .gitignore files', async () => {
    expect((await rig.call('glob', { pattern: '**/*.ts' })).content).toBe('src/a.ts\nsrc/nested/b.ts');
    expect((await rig.call('glob', { pattern: '*.ts', path: 'src/nested' })).content).toBe('src/nested/b.ts');
    expect((await rig.call('glob', { pattern: '**/*.py' })).content).toBe('No files match "**/*.py".');
  });

  it.each<'node' | 'rg'>(['node', ...(findOnPath('rg') ? (['rg'] as const) : [])])(
    'grep (%s) prints path:line:text, skipping what git ignores',
    async (engine) => {
      const found = await grepProject(
        rig.workspace.paths,
        { pattern: 'todo', ignore_case: true },
        { maxResults: 100, engine },
      );
      expect([...found.lines].sort()).toEqual([
        'README.md:1:TODO readme',
        'src/a.ts:2:// TODO one',
        'src/nested/b.ts:1:export const beta = 2; // todo two',
      ]);
      const narrowed = await grepProject(
        rig.workspace.paths,
        { pattern: '^export', glob: '*.ts', path: 'src' },
        { maxResults: 1, engine },
      );
      expect(narrowed.lines).toHaveLength(1);
      expect(narrowed.truncated).toBe(true);
    },
  );

  it('grep reports an invalid pattern clearly', async () => {
    const result = await rig.call('grep', { pattern: '(unclosed' });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/INVALID_INPUT: grep/);
  });
});
