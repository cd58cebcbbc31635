import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { diskFiles, WorkspacePaths } from '../../src/workspace/index.js';
import { tempWorkspace, toolRig, type ToolRig } from './helpers.js';

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
let rig: ToolRig;

beforeEach(async () => {
  dirs = await tempWorkspace();
  await fs.writeFile(path.join(dirs.outside, 'secret.txt'), 'outside secret\n');
  await fs.writeFile(path.join(dirs.root, 'inside.txt'), 'inside\n');
  await fs.mkdir(path.join(dirs.root, '.parley'));
  await fs.mkdir(path.join(dirs.root, '.git'));
  await fs.writeFile(path.join(dirs.root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  rig = await toolRig(dirs.root);
});
afterEach(() => dirs.cleanup());

describe('paths are confined to the project folder', () => {
  it('refuses ../ for reads and writes, and writes nothing', async () => {
    const read = await rig.call('read_file', { path: '../outside/secret.txt' });
    expect(read.isError).toBe(true);
    expect(read.content).toMatch(/^PATH_OUTSIDE_PROJECT: "..\/outside\/secret.txt" is outside the project folder/);
    const write = await rig.call('write_file', { path: '../outside/new.txt', content: 'x' });
    expect(write.content).toMatch(/PATH_OUTSIDE_PROJECT/);
    await expect(fs.access(path.join(dirs.outside, 'new.txt'))).rejects.toThrow();
  });

  it('refuses an absolute path elsewhere, and accepts an absolute path inside', async () => {
    const read = await rig.call('read_file', { path: path.join(dirs.outside, 'secret.txt') });
    expect(read.content).toMatch(/PATH_OUTSIDE_PROJECT/);
    const edit = await rig.call('edit_file', { path: '/etc/hostname', old_string: 'a', new_string: 'b' });
    expect(edit.content).toMatch(/PATH_OUTSIDE_PROJECT/);
    const inside = await rig.call('read_file', { path: path.join(dirs.root, 'inside.txt') });
    expect(inside.content).toBe('1\tinside');
  });

  it('refuses a symbolic link to a file outside, for reading and for writing through it', async () => {
    await fs.symlink(path.join(dirs.outside, 'secret.txt'), path.join(dirs.root, 'link.txt'));
    const read = await rig.call('read_file', { path: 'link.txt' });
    expect(read.content).toMatch(
      /PATH_OUTSIDE_PROJECT: "link.txt" leads outside the project folder through a symbolic link/,
    );
    const write = await rig.call('write_file', { path: 'link.txt', content: 'overwritten' });
    expect(write.isError).toBe(true);
    expect(await fs.readFile(path.join(dirs.outside, 'secret.txt'), 'utf8')).toBe('outside secret\n');
  });

  it('refuses a new file under a symlinked folder that leads out, and a dangling link that points out', async () => {
    await fs.symlink(dirs.outside, path.join(dirs.root, 'away'));
    const write = await rig.call('write_file', { path: 'away/made.txt', content: 'x' });
    expect(write.content).toMatch(/PATH_OUTSIDE_PROJECT/);
    await fs.symlink(path.join(dirs.outside, 'not-yet.txt'), path.join(dirs.root, 'dangling.txt'));
    const dangling = await rig.call('write_file', { path: 'dangling.txt', content: 'x' });
    expect(dangling.content).toMatch(/PATH_OUTSIDE_PROJECT/);
    await expect(fs.readdir(dirs.outside)).resolves.toEqual(['secret.txt']);
  });

  it('refuses writes into .parley/ and .git/, and leaves them unchanged', async () => {
    const data = await rig.call('write_file', { path: '.parley/token', content: 'stolen' });
    expect(data.content).toMatch(
      /^PATH_PROTECTED: ".parley\/token" is inside .parley\/, which tools may not write \(Parley’s data folder\)/,
    );
    const git = await rig.call('edit_file', { path: '.git/HEAD', old_string: 'main', new_string: 'evil' });
    expect(git.content).toMatch(/^PATH_PROTECTED: ".git\/HEAD" is inside .git\//);
    const sneaky = await rig.call('write_file', { path: 'sub/../.git/config', content: 'x' });
    expect(sneaky.content).toMatch(/PATH_PROTECTED/);
    await expect(fs.readdir(path.join(dirs.root, '.parley'))).resolves.toEqual([]);
    expect(await fs.readFile(path.join(dirs.root, '.git', 'HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
    // Reading them is allowed.
    expect((await rig.call('read_file', { path: '.git/HEAD' })).isError).toBeUndefined();
  });

  it('refuses a run_command working folder outside the project', async () => {
    const result = await rig.call('run_command', { command: 'pwd', cwd: '..' });
    expect(result.content).toMatch(/PATH_OUTSIDE_PROJECT/);
  });
});

describe('links inside the project', () => {
  it('a link to a file or folder inside is followed, for reading and for writing its target', async () => {
    await fs.mkdir(path.join(dirs.root, 'real'));
    await fs.writeFile(path.join(dirs.root, 'real', 'file.txt'), 'real text\n');
    await fs.symlink('real', path.join(dirs.root, 'alias'));
    await fs.symlink('alias/file.txt', path.join(dirs.root, 'chain.txt'));
    expect((await rig.call('read_file', { path: 'chain.txt' })).content).toBe('1\treal text');
    const written = await rig.call('write_file', { path: 'alias/file.txt', content: 'new text\n' });
    expect(written.data).toMatchObject({ path: 'real/file.txt' });
    expect(await fs.readFile(path.join(dirs.root, 'real', 'file.txt'), 'utf8')).toBe('new text\n');
    expect((await fs.lstat(path.join(dirs.root, 'chain.txt'))).isSymbolicLink()).toBe(true);
  });

  it('a FIFO is refused without waiting for a writer', async () => {
    execFileSync('mkfifo', [path.join(dirs.root, 'pipe')]);
    const read = await rig.call('read_file', { path: 'pipe' });
    expect(read.content).toMatch(/^INVALID_INPUT: "pipe" is not a regular file/);
  });
});

/**
 * The window between the check and the open, made wide: the path is checked, then a component is
 * swapped for a link, then the disk is opened with the checked target. The open must refuse.
 */
describe('a component swapped for a link after the check', () => {
  let paths: WorkspacePaths;
  beforeEach(async () => {
    paths = await WorkspacePaths.open(dirs.root);
    await fs.mkdir(path.join(dirs.root, 'src'));
    await fs.writeFile(path.join(dirs.root, 'src', 'victim.txt'), 'inside\n');
  });

  it('a file become a link to an outside file: reading and writing are refused, the outside file unchanged', async () => {
    const forRead = await paths.resolveForRead('src/victim.txt');
    const forWrite = await paths.resolveForWrite('src/victim.txt');
    await fs.rm(path.join(dirs.root, 'src', 'victim.txt'));
    await fs.symlink(path.join(dirs.outside, 'secret.txt'), path.join(dirs.root, 'src', 'victim.txt'));
    await expect(diskFiles.read(forRead)).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_PROJECT',
      message: expect.stringMatching(/^"src\/victim.txt" leads outside the project folder through a symbolic link/),
    });
    await expect(diskFiles.write(forWrite, 'overwritten\n')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_PROJECT' });
    expect(await fs.readFile(path.join(dirs.outside, 'secret.txt'), 'utf8')).toBe('outside secret\n');
    await expect(fs.readdir(dirs.outside)).resolves.toEqual(['secret.txt']);
  });

  it('a folder become a link to an outside folder: nothing read, written or created there', async () => {
    await fs.writeFile(path.join(dirs.outside, 'victim.txt'), 'outside victim\n');
    const forRead = await paths.resolveForRead('src/victim.txt');
    const forWrite = await paths.resolveForWrite('src/victim.txt');
    const forCreate = await paths.resolveForWrite('src/deeper/new.txt');
    await fs.rename(path.join(dirs.root, 'src'), path.join(dirs.root, 'src.moved'));
    await fs.symlink(dirs.outside, path.join(dirs.root, 'src'));
    await expect(diskFiles.read(forRead)).rejects.toMatchObject({ code: 'PATH_OUTSIDE_PROJECT' });
    await expect(diskFiles.write(forWrite, 'overwritten\n')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_PROJECT' });
    await expect(diskFiles.write(forCreate, 'new\n')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_PROJECT' });
    expect(await fs.readFile(path.join(dirs.outside, 'victim.txt'), 'utf8')).toBe('outside victim\n');
    await expect(fs.readdir(dirs.outside)).resolves.toEqual(['secret.txt', 'victim.txt']);
  });

  it('a folder become a link into .git/: the write is refused as protected', async () => {
    const forWrite = await paths.resolveForWrite('src/HEAD');
    await fs.rename(path.join(dirs.root, 'src'), path.join(dirs.root, 'src.moved'));
    await fs.symlink('.git', path.join(dirs.root, 'src'));
    await expect(diskFiles.write(forWrite, 'evil\n')).rejects.toMatchObject({ code: 'PATH_PROTECTED' });
    expect(await fs.readFile(path.join(dirs.root, '.git', 'HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
  });

  it('a link inside the project is followed; a loop of links is refused clearly', async () => {
    const forRead = await paths.resolveForRead('src/victim.txt');
    await fs.mkdir(path.join(dirs.root, 'other'));
    await fs.writeFile(path.join(dirs.root, 'other', 'victim.txt'), 'other inside\n');
    await fs.rename(path.join(dirs.root, 'src'), path.join(dirs.root, 'src.moved'));
    await fs.symlink('other', path.join(dirs.root, 'src'));
    expect(await diskFiles.read(forRead)).toBe('other inside\n');
    await fs.rm(path.join(dirs.root, 'src'));
    await fs.symlink('loop', path.join(dirs.root, 'src'));
    await fs.symlink('src', path.join(dirs.root, 'loop'));
    await expect(diskFiles.read(forRead)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(/goes through more than 40 symbolic links/),
    });
  });
});
