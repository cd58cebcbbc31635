import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FileSnapshotError } from './errors.js';
import { diffTrees, ObjectReader, type TreeChange } from './object-reader.js';

/**
 * The shadow repository: a git folder in the data folder whose work tree is the project. It never
 * touches the project's own `.git` (git skips any folder of that name in a work tree), and its own
 * configuration makes every snapshot mean the same bytes on every machine: no user or system
 * config, no line-ending conversion or filters from `.gitattributes`, no automatic gc.
 */
export class ShadowGit {
  private readonly env: NodeJS.ProcessEnv;
  /** Trees and files are read through one `git cat-file --batch`, not a process per read. */
  private readonly objects: ObjectReader;

  constructor(
    readonly gitDir: string,
    readonly workTree: string,
  ) {
    const env: NodeJS.ProcessEnv = {};
    // A GIT_* variable of the caller (GIT_INDEX_FILE from a hook, GIT_DIR of an outer repository) would point git elsewhere.
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
    this.env = {
      ...env,
      GIT_DIR: gitDir,
      GIT_WORK_TREE: workTree,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      LC_ALL: 'C',
    };
    this.objects = new ObjectReader(this.env, workTree);
  }

  /** Makes the repository when it is missing; `excluded` are project paths never snapshotted (the data folder). */
  async prepare(excluded: readonly string[]): Promise<void> {
    const exists = await fs.stat(path.join(this.gitDir, 'HEAD')).then(
      () => true,
      () => false,
    );
    if (!exists) {
      await fs.mkdir(this.gitDir, { recursive: true });
      await this.run(['init', '--quiet']);
      const settings: Array<[string, string]> = [
        ['core.bare', 'false'],
        ['core.autocrlf', 'false'],
        ['core.safecrlf', 'false'],
        ['core.symlinks', 'true'],
        ['core.fsmonitor', 'false'],
        // The project's own repository-local ignore list counts as much as its .gitignore files.
        ['core.excludesFile', path.join(this.workTree, '.git', 'info', 'exclude')],
        ['gc.auto', '0'],
        ['maintenance.auto', 'false'],
      ];
      for (const [key, value] of settings) await this.run(['config', key, value]);
      const info = path.join(this.gitDir, 'info');
      await fs.mkdir(info, { recursive: true });
      // The highest-precedence attributes: bytes go in and come out exactly as they are on disk.
      await fs.writeFile(path.join(info, 'attributes'), '* -text -eol -filter -ident -working-tree-encoding\n');
    }
    const lines = excluded.map((entry) => `/${entry.split(path.sep).join('/')}/`);
    await fs.writeFile(
      path.join(this.gitDir, 'info', 'exclude'),
      ['# Written by Parley: never part of a file snapshot.', ...lines, ''].join('\n'),
    );
  }

  /** Stages the whole work tree (what .gitignore allows) and writes its tree: the snapshot's id. */
  async snapshotTree(): Promise<string> {
    await this.stageAll();
    return (await this.run(['write-tree'])).toString('utf8').trim();
  }

  private async stageAll(): Promise<void> {
    await this.run(['add', '--all', '--', '.']);
  }

  /** How tree `to` differs from tree `from`, file by file. */
  diff(from: string, to: string): Promise<TreeChange[]> {
    return diffTrees(this.objects, from, to);
  }

  /** The contents of `blobs`. */
  async readBlobs(blobs: readonly string[]): Promise<Map<string, Buffer>> {
    const unique = [...new Set(blobs)];
    const objects = await Promise.all(unique.map((blob) => this.objects.read(blob)));
    const contents = new Map<string, Buffer>();
    unique.forEach((blob, index) => {
      const object = objects[index];
      if (!object || object.type !== 'blob') throw failure(`the shadow repository has no file content ${blob}`);
      contents.set(blob, object.content);
    });
    return contents;
  }

  /** Ends the object reader. */
  close(): void {
    this.objects.close();
  }

  /** Whether `tree` is a tree this repository holds. */
  async hasTree(tree: string): Promise<boolean> {
    try {
      return (await this.run(['cat-file', '-t', tree])).toString('utf8').trim() === 'tree';
    } catch {
      return false;
    }
  }

  /** Points `refs/parley/trees/*` at exactly `trees`, so `gc` keeps those and drops the rest. */
  async keepOnly(trees: ReadonlySet<string>): Promise<void> {
    const current = (await this.run(['for-each-ref', '--format=%(refname)', 'refs/parley/']))
      .toString('utf8')
      .split('\n')
      .filter((line) => line !== '');
    const commands = current.map((ref) => `delete ${ref}`);
    for (const tree of trees) commands.push(`update refs/parley/trees/${tree} ${tree}`);
    // A ref both deleted and updated in one transaction is refused: drop the delete of one kept.
    const kept = new Set([...trees].map((tree) => `refs/parley/trees/${tree}`));
    const lines = commands.filter((line) => !(line.startsWith('delete ') && kept.has(line.slice(7))));
    if (lines.length > 0) await this.run(['update-ref', '--stdin'], `${lines.join('\n')}\n`);
  }

  /** Removes every object no ref (and not the index) reaches. */
  async collectGarbage(): Promise<void> {
    await this.run(['gc', '--prune=now', '--quiet']);
    // The reader started before gc knows the old packs: the next read starts a fresh one.
    this.objects.close();
  }

  /** Runs git in the shadow repository; rejects with its stderr when it fails. */
  run(args: readonly string[], input?: string): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const child = spawn('git', args, { cwd: this.workTree, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT'
            ? failure('git is not installed (file snapshots run the git command): install git, or turn snapshots off')
            : failure(`git ${args[0]} could not start: ${error.message}`),
        ),
      );
      child.on('close', (code) => {
        if (code === 0) resolve(Buffer.concat(stdout));
        else
          reject(failure(`git ${args.join(' ')} failed (${code}): ${Buffer.concat(stderr).toString('utf8').trim()}`));
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
    });
  }
}

function failure(message: string): FileSnapshotError {
  return new FileSnapshotError('SNAPSHOT_FAILED', `File snapshot: ${message}.`);
}
