import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { grepProject } from '../../src/workspace/index.js';
import { tempWorkspace, toolRig, type ToolRig } from './helpers.js';

/**
 * A hostile agent's command swaps a path between the real thing and a link leading out of the
 * project, as fast as it can, while the file tools work on that path. Whatever the interleaving,
 * no result may carry the outside text, no outside file may change, nothing may be created outside.
 */

const TRIES = 2_000;
const OUTSIDE_TEXT = 'OUTSIDE SECRET token\n';
const INSIDE_TEXT = 'inside token\n';

/**
 * Swaps `target` between what it is (moved aside to `target.held`) and a symbolic link to `link`,
 * until `stop` exists; prints how many swaps it made. Synchronous on purpose: no timers, no gaps.
 */
const SWAPPER = `
const fs = require('node:fs');
const [target, link, stop] = process.argv.slice(1);
const held = target + '.held';
// A tool may create the path while it is missing (write_file makes folders): the real one goes back.
const restore = () => {
  for (;;) {
    try { fs.renameSync(held, target); return; } catch {}
    try { fs.rmSync(target, { recursive: true, force: true }); } catch {}
  }
};
// Each state lasts a few system calls, so the tools meet the real path about as often as the link.
const linger = () => { for (let spin = 0; spin < 16; spin++) fs.existsSync(target); };
let swaps = 0;
process.stdout.write('ready\\n');
for (let round = 0; ; round++) {
  if (round % 32 === 0 && fs.existsSync(stop)) break;
  try {
    fs.renameSync(target, held);
  } catch {
    continue;
  }
  try {
    fs.symlinkSync(link, target);
    linger();
    fs.unlinkSync(target);
    swaps++;
  } catch {}
  restore();
  linger();
}
process.stdout.write(swaps + '\\n');
`;

async function startSwapper(target: string, link: string, stop: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', SWAPPER, target, link, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout!.setEncoding('utf8');
  const [first] = (await once(child.stdout!, 'data')) as [string];
  expect(first).toBe('ready\n');
  return child;
}

async function stopSwapper(child: ChildProcess, stop: string): Promise<number> {
  let output = '';
  child.stdout!.on('data', (chunk: string) => (output += chunk));
  await fs.writeFile(stop, '');
  if (child.exitCode === null) await once(child, 'exit');
  return Number(output.trim());
}

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
let rig: ToolRig;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  dirs = await tempWorkspace();
  rig = await toolRig(dirs.root);
});
afterEach(async () => {
  if (swapper && swapper.exitCode === null) {
    swapper.kill();
    await once(swapper, 'exit');
  }
  swapper = undefined;
  await dirs.cleanup();
});

/** Runs read_file, edit_file and write_file on `file` in turn while the swapper races them. */
async function raceTools(file: string): Promise<{ escaped: string[]; succeeded: number; refused: number }> {
  const escaped: string[] = [];
  let succeeded = 0;
  let refused = 0;
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const calls = [
      () => rig.call('read_file', { path: file }),
      () => rig.call('edit_file', { path: file, old_string: 'token', new_string: 'TOKEN' }),
      () => rig.call('edit_file', { path: file, old_string: 'TOKEN', new_string: 'token' }),
      () => rig.call('write_file', { path: file, content: INSIDE_TEXT }),
    ];
    const result = await calls[attempt % calls.length]!();
    const seen = `${result.content}\n${JSON.stringify(result.data ?? null)}`;
    if (seen.includes('SECRET')) escaped.push(seen);
    if (result.isError) {
      if (result.content.startsWith('PATH_OUTSIDE_PROJECT')) refused++;
    } else succeeded++;
  }
  return { escaped, succeeded, refused };
}

describe('a path swapped for a link while the file tools run cannot lead them out of the project', () => {
  it(`a file swapped with a link to an outside file, ${TRIES} tries`, async () => {
    await fs.writeFile(path.join(dirs.outside, 'victim.txt'), OUTSIDE_TEXT);
    await fs.mkdir(path.join(dirs.root, 'src'));
    await fs.writeFile(path.join(dirs.root, 'src', 'victim.txt'), INSIDE_TEXT);
    const stop = path.join(dirs.base, 'stop');
    swapper = await startSwapper(
      path.join(dirs.root, 'src', 'victim.txt'),
      path.join(dirs.outside, 'victim.txt'),
      stop,
    );
    const outcome = await raceTools('src/victim.txt');
    const swaps = await stopSwapper(swapper, stop);
    expect(outcome.escaped.slice(0, 3)).toEqual([]);
    expect(outcome.escaped).toHaveLength(0);
    expect(await fs.readFile(path.join(dirs.outside, 'victim.txt'), 'utf8')).toBe(OUTSIDE_TEXT);
    expect(await fs.readdir(dirs.outside)).toEqual(['victim.txt']);
    // The race was real: the tools met both the file and the link.
    expect(swaps).toBeGreaterThan(100);
    expect(outcome.succeeded).toBeGreaterThan(0);
    expect(outcome.refused).toBeGreaterThan(0);
  }, 30_000);

  it(`a folder swapped with a link to an outside folder, ${TRIES} tries`, async () => {
    await fs.mkdir(path.join(dirs.outside, 'box'));
    await fs.writeFile(path.join(dirs.outside, 'box', 'victim.txt'), OUTSIDE_TEXT);
    await fs.mkdir(path.join(dirs.root, 'box'));
    await fs.writeFile(path.join(dirs.root, 'box', 'victim.txt'), INSIDE_TEXT);
    const stop = path.join(dirs.base, 'stop');
    swapper = await startSwapper(path.join(dirs.root, 'box'), path.join(dirs.outside, 'box'), stop);
    const outcome = await raceTools('box/victim.txt');
    const swaps = await stopSwapper(swapper, stop);
    expect(outcome.escaped.slice(0, 3)).toEqual([]);
    expect(outcome.escaped).toHaveLength(0);
    expect(await fs.readFile(path.join(dirs.outside, 'box', 'victim.txt'), 'utf8')).toBe(OUTSIDE_TEXT);
    expect(await fs.readdir(path.join(dirs.outside, 'box'))).toEqual(['victim.txt']);
    expect(await fs.readdir(dirs.outside)).toEqual(['box']);
    expect(swaps).toBeGreaterThan(100);
    expect(outcome.succeeded).toBeGreaterThan(0);
    expect(outcome.refused).toBeGreaterThan(0);
  }, 30_000);

  it(`a folder swapped with a link to an outside folder while list_files, glob and grep (rg and built-in) read it, ${TRIES / 2} tries`, async () => {
    await fs.mkdir(path.join(dirs.outside, 'box'));
    await fs.writeFile(path.join(dirs.outside, 'box', 'victim.txt'), OUTSIDE_TEXT);
    await fs.writeFile(path.join(dirs.outside, 'box', 'SECRET-name.txt'), OUTSIDE_TEXT);
    await fs.mkdir(path.join(dirs.root, 'box'));
    await fs.writeFile(path.join(dirs.root, 'box', 'victim.txt'), INSIDE_TEXT);
    const stop = path.join(dirs.base, 'stop');
    swapper = await startSwapper(path.join(dirs.root, 'box'), path.join(dirs.outside, 'box'), stop);
    const escaped: string[] = [];
    let answered = 0;
    const calls = [
      () => rig.call('list_files', { path: 'box' }),
      () => rig.call('glob', { pattern: 'box/**/*' }),
      () => rig.call('grep', { pattern: 'token', path: 'box' }),
      async () => {
        const found = await grepProject(rig.workspace.paths, { pattern: 'token' }, { maxResults: 100, engine: 'node' });
        return { content: found.lines.join('\n'), isError: false };
      },
    ];
    for (let attempt = 0; attempt < TRIES / 2; attempt++) {
      const result = await calls[attempt % calls.length]!();
      if (result.content.includes('SECRET')) escaped.push(result.content);
      if (!result.isError && result.content.includes('inside token')) answered++;
    }
    const swaps = await stopSwapper(swapper, stop);
    expect(escaped.slice(0, 3)).toEqual([]);
    expect(escaped).toHaveLength(0);
    expect(swaps).toBeGreaterThan(100);
    // Searches met the real folder too, and found its line.
    expect(answered).toBeGreaterThan(0);
  }, 60_000);
});
