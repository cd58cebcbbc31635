import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { filesStillInside, readFolderConfined } from '../../src/workspace/confined-folders.js';
import { confirmInside } from '../../src/workspace/tools/grep-confirm.js';
import { tempWorkspace } from './helpers.js';

// The checks that keep a listing or a search from showing what a swapped link leads to, each on
// a tree left in the state a race would leave it in (the race itself: confinement-races.test.ts).

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
beforeEach(async () => {
  dirs = await tempWorkspace();
  await fs.mkdir(path.join(dirs.root, 'box'));
  await fs.writeFile(path.join(dirs.root, 'box', 'inside.txt'), 'inside line\n');
  await fs.mkdir(path.join(dirs.outside, 'box'));
  await fs.writeFile(path.join(dirs.outside, 'box', 'secret.txt'), 'SECRET line\n');
});
afterEach(() => dirs.cleanup());

describe('readFolderConfined', () => {
  it('lists a folder with each entry kind, a file with its size', async () => {
    await fs.mkdir(path.join(dirs.root, 'box', 'sub'));
    await fs.symlink('inside.txt', path.join(dirs.root, 'box', 'alias'));
    const entries = await readFolderConfined(dirs.root, 'box');
    expect(typeof entries).not.toBe('string');
    const byName = Object.fromEntries((entries as Exclude<typeof entries, string>).map((entry) => [entry.name, entry]));
    expect(byName['inside.txt']).toEqual({ name: 'inside.txt', kind: 'file', size: 12 });
    expect(byName['sub']).toMatchObject({ kind: 'folder' });
    expect(byName['alias']).toEqual({ name: 'alias', kind: 'link', size: 0, link: 'inside.txt' });
  });

  it('refuses a folder that is a link now (to the outside) instead of listing where it leads', async () => {
    await fs.symlink(path.join(dirs.outside, 'box'), path.join(dirs.root, 'swapped'));
    expect(await readFolderConfined(dirs.root, 'swapped')).toBe('link');
    await fs.mkdir(path.join(dirs.root, 'a'));
    await fs.symlink(path.join(dirs.outside), path.join(dirs.root, 'a', 'b'));
    expect(await readFolderConfined(dirs.root, 'a/b/box')).toBe('link');
  });

  it('says missing for a folder that is not there and not-a-folder for a file', async () => {
    expect(await readFolderConfined(dirs.root, 'nothing')).toBe('missing');
    expect(await readFolderConfined(dirs.root, 'box/inside.txt')).toBe('not-a-folder');
  });
});

describe('filesStillInside', () => {
  it('keeps files inside and drops those a walk found through a link or that are gone', async () => {
    await fs.symlink(path.join(dirs.outside, 'box'), path.join(dirs.root, 'swapped'));
    expect(await filesStillInside(dirs.root, ['box/inside.txt', 'box/secret.txt', 'swapped/secret.txt'])).toEqual([
      'box/inside.txt',
    ]);
  });
});

describe('confirmInside', () => {
  it('keeps a line the inside file holds at that line and drops one read elsewhere', async () => {
    const long = `${'x'.repeat(600)}\n`;
    await fs.writeFile(path.join(dirs.root, 'box', 'long.txt'), long);
    const shown = await confirmInside(dirs.root, [
      'box/inside.txt:1:inside line',
      'box/inside.txt:1:SECRET line',
      'box/inside.txt:2:inside line',
      'box/secret.txt:1:SECRET line',
      `box/long.txt:1:${'x'.repeat(500)} [...]`,
    ]);
    expect(shown).toEqual(['box/inside.txt:1:inside line', `box/long.txt:1:${'x'.repeat(500)} [...]`]);
  });

  it('drops the lines of a file reached through a link out of the project', async () => {
    await fs.symlink(path.join(dirs.outside, 'box'), path.join(dirs.root, 'swapped'));
    expect(await confirmInside(dirs.root, ['swapped/secret.txt:1:SECRET line'])).toEqual([]);
  });
});
