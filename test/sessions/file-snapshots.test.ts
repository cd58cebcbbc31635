import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type AgentBackend, type AgentTurn } from '../../src/backends/index.js';
import { isParleyError, MAIN_CONVERSATION, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createDraftService, type DraftService } from '../../src/draft/index.js';
import {
  createSessionManager,
  FileRestoreConflictError,
  FileSnapshots,
  runTurn,
  type FileSnapshot,
  type SessionManager,
  type SnapshotHistory,
} from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function tempProject(): Promise<{ root: string; dataDir: string }> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-snapshots-'));
  cleanups.push(() => fs.rm(root, { recursive: true, force: true }));
  return { root, dataDir: path.join(root, '.parley') };
}

/**
 * Every file and symlink under `root` (ignored ones too), with its mode and bytes, leaving out the
 * project's `.git` and the data folder: what "byte for byte" is checked against.
 */
async function listTree(root: string): Promise<Record<string, string>> {
  const listing: Record<string, string> = {};
  async function walk(folder: string): Promise<void> {
    for (const entry of await fs.readdir(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const relative = path.relative(root, full);
      if (relative === '.git' || relative === '.parley') continue;
      if (entry.isSymbolicLink()) listing[relative] = `link -> ${await fs.readlink(full)}`;
      else if (entry.isDirectory()) await walk(full);
      else {
        const stat = await fs.stat(full);
        listing[relative] = `${(stat.mode & 0o777).toString(8)} ${(await fs.readFile(full)).toString('base64')}`;
      }
    }
  }
  await walk(root);
  return listing;
}

/** A project with a git repository of its own, nested .gitignore files, an executable and ignored files. */
async function writeProject(root: string): Promise<void> {
  await fs.mkdir(path.join(root, 'src'), { recursive: true });
  await fs.mkdir(path.join(root, 'bin'), { recursive: true });
  await fs.mkdir(path.join(root, 'build'), { recursive: true });
  await fs.writeFile(path.join(root, '.gitignore'), 'build/\n*.log\n');
  await fs.writeFile(path.join(root, 'src', '.gitignore'), 'secret.txt\n');
  await fs.writeFile(path.join(root, 'README.md'), '# Demo\n\nThe first line.\n');
  await fs.writeFile(path.join(root, 'src', 'a.txt'), 'alpha\r\nwith a CRLF\r\n');
  await fs.writeFile(path.join(root, 'src', 'binary.bin'), Buffer.from([0, 1, 2, 255, 254, 10, 13]));
  await fs.writeFile(path.join(root, 'bin', 'run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
  await fs.chmod(path.join(root, 'bin', 'run.sh'), 0o755);
  await fs.writeFile(path.join(root, 'build', 'out.bin'), 'built\n');
  await fs.writeFile(path.join(root, 'src', 'secret.txt'), 'do not snapshot me\n');
  await fs.writeFile(path.join(root, 'app.log'), 'log line\n');
  execFileSync('git', ['init', '--quiet'], { cwd: root });
}

function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

interface DraftProject {
  root: string;
  dataDir: string;
  manager: SessionManager;
  service: DraftService;
  snapshots: FileSnapshots;
}

async function draftProject(backend: AgentBackend): Promise<DraftProject> {
  const { root, dataDir } = await tempProject();
  await writeProject(root);
  const manager = await createSessionManager({
    store: createMemoryStore(),
    projectRoot: root,
    dataDir,
    fileSnapshots: {},
  });
  const service = await createDraftService({
    manager,
    projectRoot: root,
    dataDir,
    backendFor: () => backend,
    approver: () => 'allow_once',
    sandbox: 'none',
  });
  cleanups.push(async () => {
    await service.close();
    await manager.close();
  });
  return { root, dataDir, manager, service, snapshots: manager.fileSnapshots! };
}

/** The seq of each turn's closing event, in order. */
async function turnEnds(manager: SessionManager, sessionId: string): Promise<number[]> {
  return (await manager.getEvents(sessionId))
    .filter(
      (event) =>
        event.type === 'metadata_update' &&
        event.conversationId === MAIN_CONVERSATION &&
        event.metadata.turnComplete === true,
    )
    .map((event) => event.seq);
}

describe('file snapshots around the turns of a managed draft', () => {
  it('restores the tree of turn 1 byte for byte after three turns of edits and commands', async () => {
    const backend = createScriptedBackend({
      turns: [
        [
          step.tool('write_file', { path: 'notes.md', content: 'one\n' }),
          step.tool('edit_file', { path: 'README.md', old_string: 'The first line.', new_string: 'Edited in turn 1.' }),
          step.tool('run_command', { command: "printf 'made by a command\\n' > cmd.txt" }),
          step.text('Turn 1 done.'),
        ],
        [
          step.tool('run_command', {
            command: 'rm src/a.txt && mkdir -p deep/dir && printf x > deep/dir/f.txt && printf new > build/out2.bin',
          }),
          step.tool('write_file', { path: 'notes.md', content: 'two\n' }),
          step.text('Turn 2 done.'),
        ],
        [
          step.tool('edit_file', { path: 'notes.md', old_string: 'two', new_string: 'three' }),
          step.tool('run_command', {
            command: 'chmod -x bin/run.sh && ln -s README.md link && printf 3 > src/binary.bin',
          }),
          step.text('Turn 3 done.'),
        ],
      ],
    });
    const project = await draftProject(backend);
    const { root, manager, service, snapshots } = project;
    const [catalogProject] = await service.listProjects();
    const task = await service.createTask({ project: catalogProject!.name, title: 'Snapshots' });
    const { sessionId } = await service.draft({
      channelId: 'c',
      role: 'dev',
      project: catalogProject!.name,
      task: task.slug,
    });
    const projectGitHead = await fs.readFile(path.join(root, '.git', 'HEAD'), 'utf8');

    const trees: Array<Record<string, string>> = [];
    for (const prompt of ['first', 'second', 'third']) {
      await service.submitPrompt({ channelId: 'c', content: prompt });
      await service.settled({ channelId: 'c' });
      trees.push(await listTree(root));
    }
    // The command's change is in the tree the turn left, as the tools' are.
    expect(trees[0]!['cmd.txt']).toBe(`644 ${Buffer.from('made by a command\n').toString('base64')}`);
    expect(trees[2]!['link']).toBe('link -> README.md');

    const ends = await turnEnds(manager, sessionId);
    expect(ends).toHaveLength(3);
    const taken = await snapshots.list(sessionId);
    expect(taken.map((entry) => entry.phase)).toEqual([
      'before_turn',
      'after_turn',
      'before_turn',
      'after_turn',
      'before_turn',
      'after_turn',
    ]);
    expect(taken.filter((entry) => entry.phase === 'after_turn').map((entry) => entry.seq)).toEqual(ends);

    // What .gitignore (the nested one too) leaves out, the project's .git and the data folder are in no snapshot.
    const snapshotted = execFileSync('git', ['ls-tree', '-r', '--name-only', taken[5]!.tree], {
      env: { ...process.env, GIT_DIR: path.join(project.dataDir, 'file-snapshots', 'git') },
      encoding: 'utf8',
    })
      .split('\n')
      .filter((line) => line !== '');
    expect(snapshotted.sort()).toEqual(
      [
        '.gitignore',
        'README.md',
        'bin/run.sh',
        'cmd.txt',
        'deep/dir/f.txt',
        'link',
        'notes.md',
        'src/.gitignore',
        'src/binary.bin',
      ].sort(),
    );

    const result = await snapshots.restore(sessionId, ends[0]!);
    // Ignored files stay as they are (build/out2.bin was made in turn 2 and is ignored).
    expect(await listTree(root)).toEqual({ ...trees[0], 'build/out2.bin': trees[2]!['build/out2.bin'] });
    expect(result.snapshot.tree).toBe(taken[1]!.tree);
    expect(result.changed.sort()).toEqual(
      ['bin/run.sh', 'deep/dir/f.txt', 'link', 'notes.md', 'src/a.txt', 'src/binary.bin'].sort(),
    );
    await expect(fs.stat(path.join(root, 'deep'))).rejects.toThrow();
    // The project's own repository was never used.
    expect(await fs.readFile(path.join(root, '.git', 'HEAD'), 'utf8')).toBe(projectGitHead);
    await expect(fs.stat(path.join(root, '.git', 'index'))).rejects.toThrow();

    // Forward again, to the end of turn 3: the restore recorded where the files are, so nothing counts as the user's.
    await snapshots.restore(sessionId, ends[2]!);
    expect(await listTree(root)).toEqual(trees[2]);
  });

  it('a file the user changed since the last turn is reported, not overwritten, unless asked', async () => {
    const backend = createScriptedBackend({
      turns: [
        [
          step.tool('write_file', { path: 'notes.md', content: 'one\n' }),
          step.tool('write_file', { path: 'other.md', content: 'v1\n' }),
          step.text('1'),
        ],
        [
          step.tool('write_file', { path: 'notes.md', content: 'two\n' }),
          step.tool('write_file', { path: 'other.md', content: 'v2\n' }),
          step.text('2'),
        ],
      ],
    });
    const { root, manager, service, snapshots } = await draftProject(backend);
    const [catalogProject] = await service.listProjects();
    const task = await service.createTask({ project: catalogProject!.name, title: 'Mine' });
    const { sessionId } = await service.draft({
      channelId: 'c',
      role: 'dev',
      project: catalogProject!.name,
      task: task.slug,
    });
    for (const prompt of ['first', 'second']) {
      await service.submitPrompt({ channelId: 'c', content: prompt });
      await service.settled({ channelId: 'c' });
    }
    const ends = await turnEnds(manager, sessionId);
    await fs.writeFile(path.join(root, 'notes.md'), 'my own words\n');
    await fs.writeFile(path.join(root, 'mine.txt'), 'a file of mine\n');
    await fs.writeFile(path.join(root, 'README.md'), 'rewritten by me\n');
    // Changed by the user, but to what it was at the point: nothing of theirs would be lost.
    await fs.writeFile(path.join(root, 'other.md'), 'v1\n');
    const before = await listTree(root);

    const error = await errorOf(snapshots.restore(sessionId, ends[0]!));
    expect(error).toBeInstanceOf(FileRestoreConflictError);
    expect(isParleyError(error, 'RESTORE_CONFLICT')).toBe(true);
    expect([...(error as FileRestoreConflictError).files].sort()).toEqual(['README.md', 'mine.txt', 'notes.md']);
    expect((error as Error).message).toContain('Nothing was changed');
    expect(await listTree(root)).toEqual(before);
    // Refused again: the refusal recorded nothing that would hide the user's changes.
    await expect(snapshots.restore(sessionId, ends[0]!)).rejects.toBeInstanceOf(FileRestoreConflictError);

    const result = await snapshots.restore(sessionId, ends[0]!, { overwrite: true });
    expect(result.overwritten.sort()).toEqual(['README.md', 'mine.txt', 'notes.md']);
    expect(await fs.readFile(path.join(root, 'notes.md'), 'utf8')).toBe('one\n');
    await expect(fs.stat(path.join(root, 'mine.txt'))).rejects.toThrow();
    expect(await fs.readFile(path.join(root, 'README.md'), 'utf8')).toBe('# Demo\n\nThe first line.\n');
    expect(await fs.readFile(path.join(root, 'other.md'), 'utf8')).toBe('v1\n');
  });

  it('bad input is a clear error that changes nothing', async () => {
    const backend = createScriptedBackend({
      turns: [[step.tool('write_file', { path: 'notes.md', content: 'one\n' }), step.text('1')]],
    });
    const { root, manager, service, snapshots } = await draftProject(backend);
    const [catalogProject] = await service.listProjects();
    const task = await service.createTask({ project: catalogProject!.name, title: 'Bad' });
    const { sessionId } = await service.draft({
      channelId: 'c',
      role: 'dev',
      project: catalogProject!.name,
      task: task.slug,
    });
    await service.submitPrompt({ channelId: 'c', content: 'first' });
    await service.settled({ channelId: 'c' });
    await fs.writeFile(path.join(root, 'notes.md'), 'changed\n');
    const before = await listTree(root);
    const count = (await snapshots.list(sessionId)).length;

    const unknown = await errorOf(snapshots.restore(sessionId, 10_000));
    expect(isParleyError(unknown, 'SNAPSHOT_NOT_FOUND')).toBe(true);
    expect((unknown as Error).message).toMatch(/Seq 10000 is not in session .*pick a point in it/);

    const fresh = await manager.createSession({
      scope: { kind: 'workflow', harness: 'test', agent: 'dev' },
      agentType: 'dev',
    });
    await manager.addMessage(fresh.sessionId, { role: 'user', content: 'hello' });
    const none = await errorOf(snapshots.restore(fresh.sessionId, 0));
    expect(isParleyError(none, 'NO_FILE_SNAPSHOTS')).toBe(true);
    expect((none as Error).message).toContain(`Session ${fresh.sessionId} has no file snapshots`);

    expect(isParleyError(await errorOf(snapshots.restore('no-such-session', 0)), 'SESSION_NOT_FOUND')).toBe(true);
    expect(isParleyError(await errorOf(snapshots.restore(sessionId, 1.5)), 'INVALID_INPUT')).toBe(true);
    expect(isParleyError(await errorOf(snapshots.restore('../etc', 0)), 'INVALID_INPUT')).toBe(true);

    expect(await listTree(root)).toEqual(before);
    expect(await snapshots.list(sessionId)).toHaveLength(count);
  });

  it('a turn given no tools on a managed back end takes no snapshot', async () => {
    const { root, dataDir } = await tempProject();
    await writeProject(root);
    const manager = await createSessionManager({
      store: createMemoryStore(),
      projectRoot: root,
      dataDir,
      fileSnapshots: {},
    });
    cleanups.push(() => manager.close());
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'test', agent: 'dev' },
      agentType: 'dev',
    });
    const turn = await runTurn(manager, session.sessionId, { backend: createScriptedBackend(), prompt: 'hi' });
    for await (const event of turn.events) void event;
    expect(await manager.fileSnapshots!.list(session.sessionId)).toEqual([]);
  });
});

/**
 * A native back end changes files with its own tools, which Parley never sees: here a child process,
 * as a CLI's shell tool would be. The tree snapshot after the turn holds its change all the same.
 */
function nativeCli(root: string): AgentBackend {
  let turn = 0;
  return {
    describe: () => ({ name: 'fake-cli', continuity: 'native', models: [] }),
    execute(): AgentTurn {
      turn += 1;
      const current = turn;
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        execFileSync('sh', ['-c', `printf 'turn ${current}\\n' > cli-${current}.txt && rm -f README.md`], {
          cwd: root,
        });
        const now = Date.now();
        yield {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          block: { id: `text-${current}`, type: 'assistant_text', content: 'done', createdAt: now, completedAt: now },
          at: now,
        };
        yield {
          type: 'metadata_update',
          conversationId: MAIN_CONVERSATION,
          metadata: { turnComplete: true, nativeSessionId: 'native-1' },
          at: now,
        };
      }
      return { events: events() };
    },
  };
}

describe('file snapshots of a native back end', () => {
  it('catches what the CLI’s own tools changed, and restores before it', async () => {
    const { root, dataDir } = await tempProject();
    await writeProject(root);
    const manager = await createSessionManager({
      store: createMemoryStore(),
      projectRoot: root,
      dataDir,
      fileSnapshots: {},
    });
    cleanups.push(() => manager.close());
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'test', agent: 'dev' },
      agentType: 'dev',
    });
    const backend = nativeCli(root);
    const initial = await listTree(root);
    for (const prompt of ['one', 'two']) {
      const turn = await runTurn(manager, session.sessionId, { backend, prompt });
      for await (const event of turn.events) void event;
    }
    const taken = await manager.fileSnapshots!.list(session.sessionId);
    expect(taken.map((entry) => entry.phase)).toEqual(['before_turn', 'after_turn', 'before_turn', 'after_turn']);
    const userMessage = taken[0]!.seq;
    await manager.fileSnapshots!.restore(session.sessionId, userMessage);
    expect(await listTree(root)).toEqual(initial);
  });
});

describe('pruning', () => {
  it('removes old snapshots of abandoned branches and the files only they held; keeps the active branch', async () => {
    const { root, dataDir } = await tempProject();
    await writeProject(root);
    let now = 1_000;
    const history: SnapshotHistory = {
      pathTo: (sessionId, seq) => Promise.resolve([{ sessionId, firstSeq: -1, lastSeq: seq }]),
      // The branch through seqs 10–19 was left: the active one is 0–9, then 20 on.
      activePath: (sessionId) =>
        Promise.resolve([
          { sessionId, firstSeq: -1, lastSeq: 9 },
          { sessionId, firstSeq: 20, lastSeq: Number.MAX_SAFE_INTEGER },
        ]),
    };
    const folder = path.join(dataDir, 'file-snapshots');
    const snapshots = new FileSnapshots({
      projectRoot: root,
      folder,
      history,
      clock: () => now,
      maxAbandonedAgeMs: 500,
    });
    cleanups.push(() => snapshots.close());
    const take = async (seq: number, content: string): Promise<FileSnapshot> => {
      await fs.writeFile(path.join(root, 'state.txt'), content);
      return snapshots.take('s1', { seq, phase: 'after_turn' });
    };
    await take(5, 'kept on the active branch\n');
    await take(12, 'only on the abandoned branch\n');
    expect(await snapshots.prune()).toEqual({ removed: 0, kept: 2 });

    now += 400;
    const recent = await take(15, 'abandoned but recent\n');
    await take(25, 'the active tip\n');
    now += 200;
    expect(await snapshots.prune()).toEqual({ removed: 1, kept: 3 });
    expect((await snapshots.list('s1')).map((entry) => entry.seq)).toEqual([5, 15, 25]);
    const git = (args: string[]): string =>
      execFileSync('git', args, {
        env: { ...process.env, GIT_DIR: path.join(folder, 'git'), GIT_WORK_TREE: root },
        encoding: 'utf8',
      });
    const hashOf = (text: string): string =>
      execFileSync('git', ['hash-object', '--stdin'], { input: text, encoding: 'utf8' }).trim();
    expect(() => git(['cat-file', '-e', hashOf('only on the abandoned branch\n')])).toThrow();
    expect(git(['cat-file', '-p', hashOf('abandoned but recent\n')])).toBe('abandoned but recent\n');
    expect(recent.seq).toBe(15);

    // What is kept still restores.
    await fs.writeFile(path.join(root, 'state.txt'), 'the active tip\n');
    await snapshots.restore('s1', 9);
    expect(await fs.readFile(path.join(root, 'state.txt'), 'utf8')).toBe('kept on the active branch\n');
  });

  it('refuses an age that is not a number of milliseconds', () => {
    const history: SnapshotHistory = { pathTo: () => Promise.resolve([]), activePath: () => Promise.resolve([]) };
    expect(() => new FileSnapshots({ projectRoot: '/tmp', folder: '/tmp/x', history, maxAbandonedAgeMs: -1 })).toThrow(
      /maxAbandonedAgeMs must be a number of milliseconds/,
    );
  });
});
