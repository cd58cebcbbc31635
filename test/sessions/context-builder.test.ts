import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildContext, projectTree, recentCommits } from '../../src/sessions/index.js';
import { FORMAT_VERSION, createMemoryStore, type SessionRecord, type FeatureTask } from '../../src/store/index.js';

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'parley-context-'));
  folders.push(folder);
  return folder;
}

function git(cwd: string, ...args: string[]): void {
  execFileSync(
    'git',
    ['-c', 'user.name=Ada Lovelace', '-c', 'user.email=ada@example.com', '-c', 'commit.gpgsign=false', ...args],
    { cwd, stdio: 'pipe' },
  );
}

async function project(): Promise<string> {
  const root = await tempFolder();
  await mkdir(join(root, 'src', 'cli'), { recursive: true });
  await mkdir(join(root, 'node_modules', 'left-pad'), { recursive: true });
  await mkdir(join(root, 'dist'), { recursive: true });
  await writeFile(join(root, 'src', 'index.ts'), 'export {};\n');
  await writeFile(join(root, 'src', 'cli', 'args.ts'), 'export const verbose = false;\n');
  await writeFile(join(root, 'node_modules', 'left-pad', 'index.js'), '');
  await writeFile(join(root, 'dist', 'index.js'), '');
  await writeFile(join(root, 'package.json'), '{}\n');
  await writeFile(join(root, 'CLAUDE.md'), '# Rules\n\nUse tabs. Run `npm test` before committing.\n');
  await writeFile(join(root, 'AGENTS.md'), 'Agents must not touch dist/.\n');
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '.');
  git(root, 'commit', '-q', '-m', 'Initial layout');
  await writeFile(join(root, 'src', 'cli', 'args.ts'), 'export const verbose = true;\n');
  git(root, 'commit', '-q', '-am', 'Parse --verbose');
  return root;
}

const now = new Date(0).toISOString();
function task(taskId: string, title: string, dependencies: string[] = [], currentState?: string): FeatureTask {
  return {
    formatVersion: FORMAT_VERSION,
    featureId: 'cli',
    taskId,
    title,
    description: `Do ${title}.`,
    dependencies,
    states: {},
    ...(currentState ? { currentState } : {}),
    createdAt: now,
    updatedAt: now,
  };
}
function session(
  sessionId: string,
  scope: SessionRecord['scope'],
  agentType: string,
  settings: SessionRecord['settings'] = {},
): SessionRecord {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: 'scripted',
    agentProfileReference: agentType,
    agentType,
    status: 'active',
    scope,
    createdAt: 0,
    updatedAt: 0,
    settings,
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
  };
}

describe('context', () => {
  it('is built from a real project: file tree without node_modules and dist, CLAUDE.md and AGENTS.md, and the real git log', async () => {
    const root = await project();
    const store = createMemoryStore();
    const record = session('pm-feature-cli', { kind: 'feature', featureId: 'cli' }, 'pm');
    const sections = await buildContext({ session: record, store, projectRoot: root });
    expect(sections.map((section) => section.key)).toEqual([
      'project-structure',
      'claude-md',
      'agents-md',
      'recent-commits',
      'feature',
    ]);
    const tree = sections[0]!.text;
    expect(tree).toBe(
      ['src/', '  cli/', '    args.ts', '  index.ts', 'AGENTS.md', 'CLAUDE.md', 'package.json'].join('\n'),
    );
    expect(sections[1]).toMatchObject({
      title: 'Project Instructions (CLAUDE.md)',
      text: '# Rules\n\nUse tabs. Run `npm test` before committing.',
    });
    expect(sections[2]!.text).toBe('Agents must not touch dist/.');
    const commits = sections[3]!.text.split('\n');
    expect(commits).toHaveLength(2);
    expect(commits[0]).toMatch(/^- [0-9a-f]{7,} \d{4}-\d{2}-\d{2} Parse --verbose \(Ada Lovelace\) \[HEAD -> main\]$/);
    expect(commits[1]).toMatch(/Initial layout \(Ada Lovelace\)$/);
  });

  it('reads the history again as soon as the repository changes (a commit, a new branch)', async () => {
    const root = await project();
    const first = await recentCommits(root);
    expect(await recentCommits(root)).toBe(first);
    await writeFile(join(root, 'README.md'), 'docs\n');
    git(root, 'add', '.');
    git(root, 'commit', '-q', '-m', 'Add a README');
    const second = await recentCommits(root);
    expect(second.split('\n')[0]).toMatch(/Add a README \(Ada Lovelace\) \[HEAD -> main\]$/);
    git(root, 'branch', 'feature-x');
    expect((await recentCommits(root)).split('\n')[0]).toMatch(/\[HEAD -> main, feature-x\]$/);
  });

  it('bounds the file tree by depth and by entry count, saying what is not shown', async () => {
    const root = await tempFolder();
    await mkdir(join(root, 'a', 'b', 'c', 'd'), { recursive: true });
    for (let index = 0; index < 30; index++)
      await writeFile(join(root, `file-${String(index).padStart(2, '0')}.txt`), '');
    const shallow = await projectTree(root, { maxDepth: 2 });
    expect(shallow).toContain('a/\n  b/');
    expect(shallow).not.toContain('c/');
    const few = await projectTree(root, { maxEntries: 5 });
    expect(few.split('\n')).toEqual([
      'a/',
      '  … 1 more not shown',
      'file-00.txt',
      'file-01.txt',
      'file-02.txt',
      'file-03.txt',
      '… 26 more not shown',
    ]);
  });

  it('says plainly when the folder is not a git repository or has no commits yet', async () => {
    const plain = await tempFolder();
    expect(await recentCommits(plain)).toBe('(not a git repository)');
    git(plain, 'init', '-q');
    expect(await recentCommits(plain)).toBe('(no commits yet)');
  });

  it('shows the task with its dependencies and the tasks that depend on it, from the store', async () => {
    const store = createMemoryStore();
    await store.putFeature({
      formatVersion: FORMAT_VERSION,
      featureId: 'cli',
      name: 'Photo renamer CLI',
      goal: 'Rename photos by date',
      spec: 'Reads EXIF.',
      createdAt: now,
      updatedAt: now,
    });
    await store.putFeatureTask(task('parse', 'Parse arguments', [], 'done'));
    await store.putFeatureTask(task('exif', 'Read EXIF dates', ['parse'], 'in_dev'));
    await store.putFeatureTask(task('rename', 'Rename files', ['exif']));
    await store.putFeatureTask(task('docs', 'Document', ['exif', 'rename']));
    const record = session(
      'dev-task-cli-exif-in_dev',
      { kind: 'task', featureId: 'cli', taskId: 'exif', taskState: 'in_dev' },
      'dev',
    );
    const sections = await buildContext({ session: record, store });
    expect(sections.map((section) => section.key)).toEqual(['feature', 'task']);
    expect(sections[0]!.text).toBe(
      'Id: cli\nName: Photo renamer CLI\nGoal: Rename photos by date\n\nSpec:\nReads EXIF.',
    );
    expect(sections[1]!.text).toBe(
      [
        'Id: exif',
        'Title: Read EXIF dates',
        'State: in_dev',
        '',
        'Description:',
        'Do Read EXIF dates.',
        '',
        'Dependencies (tasks this one builds on):',
        '- parse: Parse arguments [done]',
        '',
        'Dependents (tasks waiting on this one):',
        '- docs: Document',
        '- rename: Rename files',
      ].join('\n'),
    );
    const pm = await buildContext({
      session: session('pm-feature-cli', { kind: 'feature', featureId: 'cli' }, 'pm'),
      store,
    });
    expect(pm[0]!.text).toContain(
      'Tasks (4):\n- docs: Document (depends on exif, rename)\n- exif: Read EXIF dates [in_dev] (depends on parse)',
    );
  });

  it("joins the checkpoints of the sessions named in contextSessions, read only (QA reading Dev's)", async () => {
    const store = createMemoryStore();
    const dev = session(
      'dev-task-cli-exif-in_dev',
      { kind: 'task', featureId: 'cli', taskId: 'exif', taskState: 'in_dev' },
      'dev',
    );
    await store.createSession(dev);
    await store.writeCheckpoint(dev.sessionId, {
      createdAt: now,
      trigger: 'manual',
      summary: {
        completed: ['exif.ts reads DateTimeOriginal'],
        inProgress: [],
        pending: ['handle HEIC'],
        decisions: [],
        blockers: [],
      },
      pinned: [],
      liveHandles: [],
      covers: { throughSeq: 10, messageCount: 8 },
      tokens: { checkpoint: 20, lastCompactionInput: 100, totalSaved: 80 },
    });
    const qa = session('qa-task-cli-exif-in_qa', { kind: 'draft', role: 'qa' }, 'qa', {
      contextSessions: [dev.sessionId, 'missing-session'],
    });
    const before = await store.listCheckpoints(dev.sessionId);
    const sections = await buildContext({ session: qa, store });
    expect(sections.map((section) => section.key)).toEqual(['related-checkpoints']);
    expect(sections[0]!.title).toBe('Checkpoints of Related Sessions (read only)');
    expect(sections[0]!.text).toContain('### dev-task-cli-exif-in_dev (dev, checkpoint v1)');
    expect(sections[0]!.text).toContain('#### Completed\n\n- exif.ts reads DateTimeOriginal');
    expect(sections[0]!.text).toContain('### missing-session\n\n(no such session)');
    expect(await store.listCheckpoints(dev.sessionId)).toEqual(before);
  });
});
