/**
 * File snapshots on a project of 10,000 files with 10 changed between points:
 * - snapshot (`FileSnapshots.take`: `git add --all`, `git write-tree` into the shadow repository,
 *   one fdatasync of the snapshot list) beside `git add -A && git write-tree` in a plain repository
 *   of an identical copy of the tree. Target: at most 1.5×.
 * - restore (`FileSnapshots.restore` to the other point: snapshot of the tree as it is, the check
 *   for the user's changes, the intent file, the files written through staging names) beside
 *   `git checkout` of the same change in the plain repository. Target: at most 1.5×.
 * The two copies are alike, so both sides stat the same 10,000 files and write the same 10.
 * `PARLEY_BENCH_SNAPSHOT_RUNS` sets the runs per side (default 20).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FileSnapshots, type SnapshotHistory } from '../src/sessions/index.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const execFileAsync = promisify(execFile);
const FOLDERS = 100;
const FILES_PER_FOLDER = 100;
const CHANGED = 10;

const history: SnapshotHistory = {
  pathTo: (sessionId, seq) => Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: seq }]),
  activePath: (sessionId) => Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: Number.MAX_SAFE_INTEGER }]),
};

async function writeTree(root: string): Promise<void> {
  const line = 'export const value = 1; // a line of a typical module, about sixty bytes\n';
  for (let folder = 0; folder < FOLDERS; folder++) {
    const dir = path.join(root, 'src', `module-${folder}`);
    await fs.mkdir(dir, { recursive: true });
    for (let file = 0; file < FILES_PER_FOLDER; file++)
      await fs.writeFile(path.join(dir, `file-${file}.ts`), `// ${folder}/${file}\n${line.repeat(16)}`);
  }
  await fs.writeFile(path.join(root, '.gitignore'), 'node_modules/\n.parley/\n');
}

/** The same 10 files in each copy, given content `version`. */
async function change(root: string, version: number): Promise<void> {
  for (let index = 0; index < CHANGED; index++)
    await fs.writeFile(
      path.join(root, 'src', `module-${index * 9}`, `file-${index * 7}.ts`),
      `// changed, version ${version}\n`,
    );
}

async function git(root: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('git', args, {
    cwd: root,
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.com',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.com',
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

async function time(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

export async function run(): Promise<string> {
  const runs = Number(process.env['PARLEY_BENCH_SNAPSHOT_RUNS'] ?? 20);
  const base = await fs.mkdtemp(path.join(tmpdir(), 'parley-bench-snapshots-'));
  try {
    const parleyRoot = path.join(base, 'parley');
    const plainRoot = path.join(base, 'plain');
    await writeTree(parleyRoot);
    await writeTree(plainRoot);
    await git(plainRoot, ['init', '--quiet']);
    await git(plainRoot, ['add', '-A']);
    await git(plainRoot, ['commit', '--quiet', '-m', 'start']);
    const snapshots = new FileSnapshots({
      projectRoot: parleyRoot,
      folder: path.join(parleyRoot, '.parley', 'file-snapshots'),
      history,
    });
    await snapshots.take('bench', { seq: 0, phase: 'after_turn' });

    // Snapshot: 10 files change, then each side records the tree.
    const snapshot = { parley: [] as number[], git: [] as number[] };
    for (let index = 0; index < runs + 3; index++) {
      await change(parleyRoot, index);
      await change(plainRoot, index);
      const takeTime = await time(() => snapshots.take('bench', { seq: index + 1, phase: 'after_turn' }));
      const gitTime = await time(async () => {
        await git(plainRoot, ['add', '-A']);
        await git(plainRoot, ['write-tree']);
      });
      if (index < 3) continue;
      snapshot.parley.push(takeTime);
      snapshot.git.push(gitTime);
    }

    // Restore: two points 10 files apart, gone back and forth on each side.
    await change(parleyRoot, 1_000);
    await change(plainRoot, 1_000);
    await snapshots.take('bench', { seq: 1_000, phase: 'after_turn' });
    await git(plainRoot, ['commit', '--quiet', '-am', 'a']);
    const commitA = await git(plainRoot, ['rev-parse', 'HEAD']);
    await change(parleyRoot, 2_000);
    await change(plainRoot, 2_000);
    await snapshots.take('bench', { seq: 2_000, phase: 'after_turn' });
    await git(plainRoot, ['commit', '--quiet', '-am', 'b']);
    const commitB = await git(plainRoot, ['rev-parse', 'HEAD']);
    const restore = { parley: [] as number[], git: [] as number[] };
    let changedPerRestore = 0;
    for (let index = 0; index < runs + 3; index++) {
      const toA = index % 2 === 0;
      const restoreTime = await time(async () => {
        changedPerRestore = (await snapshots.restore('bench', toA ? 1_000 : 2_000)).changed.length;
      });
      const gitTime = await time(() => git(plainRoot, ['checkout', '--detach', toA ? commitA : commitB]));
      if (index < 3) continue;
      restore.parley.push(restoreTime);
      restore.git.push(gitTime);
    }
    if (changedPerRestore !== CHANGED) throw new Error(`a restore changed ${changedPerRestore} files, not ${CHANGED}`);
    await snapshots.close();

    const row = (name: string, baseline: string, samples: { parley: number[]; git: number[] }) => [
      name,
      formatMs(percentile(samples.parley, 50)),
      formatMs(percentile(samples.parley, 95)),
      baseline,
      formatMs(percentile(samples.git, 50)),
      formatMs(percentile(samples.git, 95)),
      ratio(percentile(samples.parley, 50), percentile(samples.git, 50)),
      '≤ 1.50×',
    ];
    return [
      '## File snapshots',
      '',
      `A project of ${(FOLDERS * FILES_PER_FOLDER).toLocaleString('en')} files, ${CHANGED} changed between points; ${runs} runs per side (medians and p95).`,
      '',
      table(
        ['operation', 'Parley median', 'Parley p95', 'baseline', 'baseline median', 'baseline p95', 'ratio', 'target'],
        [
          row('snapshot (take)', '`git add -A && git write-tree`', snapshot),
          row('restore to a point', '`git checkout` of the same change', restore),
        ],
      ),
      '',
      'Both sides look at every file: `git checkout` refreshes its index, and a restore snapshots the tree as it is ' +
        '(`git add --all`, `git write-tree`) to find files the user changed or added anywhere. The trees are compared ' +
        'and the files read through one long-running `git cat-file --batch`.',
    ].join('\n');
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}
