import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
