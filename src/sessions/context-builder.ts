import { execFile } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import type { SessionRecord, SessionStore, FeatureTask } from '../store/index.js';
import { renderCheckpoint } from './checkpoint-format.js';
import type { ContextSection } from './request-builder.js';

/**
 * The "# Context" of a request, rebuilt from its sources on every request (the stored
 * context.json is what the last request used): the project's file
 * tree (bounded), its CLAUDE.md / AGENTS.md, its recent commits from the real `git log`, the feature
 * and the task from the store (with dependencies and dependents), and the checkpoints of the sessions
 * this one names in `settings.contextSessions`, read only.
 */

export interface ContextOptions {
  /** Deepest folder level shown in the file tree. Default 3. */
  maxDepth?: number;
  /** Most files and folders shown. Default 200. */
  maxEntries?: number;
  /** Folder names never walked. Default node_modules, .git, dist, .parley. */
  skip?: readonly string[];
  /** Commits shown. Default 10. */
  maxCommits?: number;
  /** Longest CLAUDE.md / AGENTS.md / feature spec kept, in characters. Default 24,000. */
  maxNoteChars?: number;
  /** Most other tasks listed for a feature. Default 50. */
  maxTasks?: number;
  /** Time allowed to `git log`. Default 5,000 ms. */
  gitTimeoutMs?: number;
}

export interface ContextInput {
  session: SessionRecord;
  store: Pick<SessionStore, 'getFeature' | 'getFeatureTask' | 'listFeatureTasks' | 'readCheckpoint' | 'getSession'>;
  /** The project folder; without it the project sections are left out. */
  projectRoot?: string;
  signal?: AbortSignal;
}

const DEFAULT_SKIP = ['node_modules', '.git', 'dist', '.parley'];
const NOTE_FILES = ['CLAUDE.md', 'AGENTS.md'];

/** Every context section for the session, in the order the request shows them. */
export async function buildContext(input: ContextInput, options: ContextOptions = {}): Promise<ContextSection[]> {
  const root = input.projectRoot;
  const [tree, notes, commits, work, related] = await Promise.all([
    root ? projectTree(root, options) : undefined,
    root ? projectNotes(root, options) : [],
    root ? recentCommits(root, options, input.signal) : undefined,
    workSections(input, options),
    relatedCheckpoints(input),
  ]);
  const sections: ContextSection[] = [];
  if (tree !== undefined) sections.push({ key: 'project-structure', title: 'Project Structure', text: tree });
  sections.push(...notes);
  if (commits !== undefined) sections.push({ key: 'recent-commits', title: 'Recent Commits', text: commits });
  sections.push(...work);
  if (related !== undefined) sections.push(related);
  return sections;
}

/** The file tree, breadth first so the top levels are always shown, rendered as an indented list. */
export async function projectTree(root: string, options: ContextOptions = {}): Promise<string> {
  const maxDepth = options.maxDepth ?? 3;
  const maxEntries = options.maxEntries ?? 200;
  const skip = new Set(options.skip ?? DEFAULT_SKIP);
  interface Node {
    name: string;
    directory: boolean;
    children: Node[];
    hidden: number;
  }
  const top: Node = { name: '', directory: true, children: [], hidden: 0 };
  let shown = 0;
  let level: Array<{ node: Node; path: string }> = [{ node: top, path: root }];
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const listings = await Promise.all(
      level.map(async ({ node, path }) => {
        try {
          return { node, path, entries: await readdir(path, { withFileTypes: true }) };
        } catch {
          return { node, path, entries: [] };
        }
      }),
    );
    const next: Array<{ node: Node; path: string }> = [];
    for (const { node, path, entries } of listings) {
      const visible = entries
        .filter((entry) => !(entry.isDirectory() && skip.has(entry.name)))
        .sort((a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || a.name.localeCompare(b.name));
      for (const entry of visible) {
        if (shown >= maxEntries) {
          node.hidden++;
          continue;
        }
        const child: Node = { name: entry.name, directory: entry.isDirectory(), children: [], hidden: 0 };
        node.children.push(child);
        shown++;
        if (child.directory && depth < maxDepth) next.push({ node: child, path: join(path, entry.name) });
      }
    }
    level = next;
  }
  const lines: string[] = [];
  const walk = (node: Node, indent: string) => {
    for (const child of node.children) {
      lines.push(`${indent}${child.name}${child.directory ? '/' : ''}`);
      walk(child, `${indent}  `);
    }
    if (node.hidden > 0) lines.push(`${indent}… ${node.hidden} more not shown`);
  };
  walk(top, '');
  if (lines.length === 0) return '(empty folder)';
  return lines.join('\n');
}

async function projectNotes(root: string, options: ContextOptions): Promise<ContextSection[]> {
  const limit = options.maxNoteChars ?? 24_000;
  const found = await Promise.all(
    NOTE_FILES.map(async (name) => {
      try {
        const text = await readFile(join(root, name), 'utf8');
        return {
          key: name.toLowerCase().replace('.md', '-md'),
          title: `Project Instructions (${name})`,
          text: clipText(text.trim(), limit, name),
        };
      } catch {
        return undefined;
      }
    }),
  );
  return found.filter((section): section is ContextSection => section !== undefined && section.text.length > 0);
}

/**
 * The last `git log` output per project, with the state of the repository it was read at (HEAD, the
 * ref it points to, packed refs, the branch and tag folders). Checked on every request with a few
 * `stat` calls: when any of them changed, git runs again. Spawning git costs milliseconds; the check
 * costs a fraction of one.
 */
const gitLogCache = new Map<string, { state: string; text: string }>();

async function repositoryState(root: string): Promise<string | undefined> {
  try {
    let gitDir = join(root, '.git');
    if ((await stat(gitDir)).isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(await readFile(gitDir, 'utf8'));
      if (!pointer) return undefined;
      gitDir = resolvePath(root, pointer[1]!.trim());
    }
    const [head, common] = await Promise.all([
      readFile(join(gitDir, 'HEAD'), 'utf8'),
      readFile(join(gitDir, 'commondir'), 'utf8').then(
        (text) => resolvePath(gitDir, text.trim()),
        () => gitDir,
      ),
    ]);
    const stamp = (path: string) =>
      stat(path).then(
        (info) => `${info.ino}:${info.mtimeMs}:${info.size}`,
        () => '-',
      );
    const ref = head.startsWith('ref: ') ? head.slice(5).trim() : undefined;
    const stamps = await Promise.all([
      ...(ref ? [stamp(join(gitDir, ref)), stamp(join(common, ref))] : []),
      stamp(join(common, 'packed-refs')),
      stamp(join(common, 'refs', 'heads')),
      stamp(join(common, 'refs', 'tags')),
    ]);
    return [head.trim(), ...stamps].join('|');
  } catch {
    return undefined;
  }
}

/** `git log` of the project, bounded; says so plainly when the folder is not a repository or git is missing. */
export async function recentCommits(root: string, options: ContextOptions = {}, signal?: AbortSignal): Promise<string> {
  const maxCommits = options.maxCommits ?? 10;
  const key = `${resolvePath(root)}\n${maxCommits}`;
  const state = await repositoryState(root);
  const cached = gitLogCache.get(key);
  if (state !== undefined && cached?.state === state) return cached.text;
  const text = await runGitLog(root, maxCommits, options, signal);
  // A failure (a timeout on a busy machine) is not remembered: the next request tries again.
  if (state !== undefined && !text.startsWith('(git log failed')) gitLogCache.set(key, { state, text });
  return text;
}

function runGitLog(
  root: string,
  maxCommits: number,
  options: ContextOptions,
  signal: AbortSignal | undefined,
): Promise<string> {
  const args = ['log', `-n${maxCommits}`, '--no-color', '--date=short', '--format=%h%x09%ad%x09%an%x09%s%x09%D'];
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd: root,
        timeout: options.gitTimeoutMs ?? 5_000,
        maxBuffer: 1024 * 1024,
        windowsHide: true,
        ...(signal ? { signal } : {}),
      },
      (error, stdout, stderr) => {
        if (error) {
          const detail = `${String(stderr)} ${error.message}`;
          if ((error as NodeJS.ErrnoException).code === 'ENOENT')
            resolve('(git is not installed, so the history is not shown)');
          else if (/not a git repository/i.test(detail)) resolve('(not a git repository)');
          else if (/does not have any commits|bad default revision/i.test(detail)) resolve('(no commits yet)');
          else resolve(`(git log failed: ${firstLine(String(stderr)) || error.message})`);
          return;
        }
        const lines = String(stdout)
          .split('\n')
          .filter((line) => line.length > 0)
          .map((line) => {
            const [hash, date, author, subject, refs] = line.split('\t');
            return `- ${hash} ${date} ${subject ?? ''} (${author ?? ''})${refs ? ` [${refs}]` : ''}`;
          });
        resolve(lines.length > 0 ? lines.join('\n') : '(no commits yet)');
      },
    );
  });
}

async function workSections(input: ContextInput, options: ContextOptions): Promise<ContextSection[]> {
  const scope = input.session.scope;
  if (scope.kind !== 'feature' && scope.kind !== 'task') return [];
  const [feature, tasks] = await Promise.all([
    input.store.getFeature(scope.featureId),
    input.store.listFeatureTasks(scope.featureId),
  ]);
  const sections: ContextSection[] = [];
  const limit = options.maxNoteChars ?? 24_000;
  const maxTasks = options.maxTasks ?? 50;
  const byId = new Map(tasks.map((task) => [task.taskId, task]));
  const describeTask = (id: string) => {
    const task = byId.get(id);
    return task
      ? `- ${id}: ${task.title}${task.currentState ? ` [${task.currentState}]` : ''}`
      : `- ${id} (not found in this feature)`;
  };

  const featureLines = [`Id: ${scope.featureId}`];
  if (feature) {
    featureLines.push(`Name: ${feature.name}`);
    if (feature.goal) featureLines.push(`Goal: ${feature.goal}`);
    if (feature.spec) featureLines.push('', 'Spec:', clipText(feature.spec.trim(), limit, 'the feature spec'));
  } else {
    featureLines.push('(no feature record yet)');
  }
  if (scope.kind === 'feature' && tasks.length > 0) {
    const sorted = [...tasks].sort((a, b) => a.taskId.localeCompare(b.taskId));
    featureLines.push('', `Tasks (${tasks.length}):`);
    for (const task of sorted.slice(0, maxTasks)) {
      featureLines.push(
        `${describeTask(task.taskId)}${task.dependencies.length > 0 ? ` (depends on ${task.dependencies.join(', ')})` : ''}`,
      );
    }
    if (tasks.length > maxTasks) featureLines.push(`… ${tasks.length - maxTasks} more tasks not shown`);
  }
  sections.push({ key: 'feature', title: 'Feature', text: featureLines.join('\n') });

  if (scope.kind === 'task') {
    const task = byId.get(scope.taskId) ?? (await input.store.getFeatureTask(scope.featureId, scope.taskId));
    sections.push({
      key: 'task',
      title: 'FeatureTask',
      text: renderTask(scope.taskId, scope.taskState, task, tasks, describeTask, limit),
    });
  }
  return sections;
}

function renderTask(
  taskId: string,
  state: string,
  task: FeatureTask | undefined,
  tasks: readonly FeatureTask[],
  describeTask: (id: string) => string,
  limit: number,
): string {
  if (!task) return `Id: ${taskId}\nState: ${state}\n(no task record yet)`;
  const dependents = tasks
    .filter((other) => other.taskId !== task.taskId && other.dependencies.includes(task.taskId))
    .map((other) => other.taskId);
  return [
    `Id: ${task.taskId}`,
    `Title: ${task.title}`,
    `State: ${state}`,
    '',
    'Description:',
    task.description.trim() ? clipText(task.description.trim(), limit, 'the task description') : '(none)',
    '',
    'Dependencies (tasks this one builds on):',
    ...(task.dependencies.length > 0 ? task.dependencies.map(describeTask) : ['(none)']),
    '',
    'Dependents (tasks waiting on this one):',
    ...(dependents.length > 0 ? dependents.sort().map(describeTask) : ['(none)']),
  ].join('\n');
}

async function relatedCheckpoints(input: ContextInput): Promise<ContextSection | undefined> {
  const ids = (input.session.settings.contextSessions ?? []).filter((id) => id !== input.session.sessionId);
  if (ids.length === 0) return undefined;
  const parts = await Promise.all(
    ids.map(async (id) => {
      const [record, checkpoint] = await Promise.all([
        input.store.getSession(id).catch(() => undefined),
        input.store.readCheckpoint(id).catch(() => undefined),
      ]);
      if (!record) return `### ${id}\n\n(no such session)`;
      const heading = `### ${id} (${record.agentType}${checkpoint ? `, checkpoint v${checkpoint.version}` : ''})`;
      if (!checkpoint) return `${heading}\n\n(no checkpoint yet)`;
      return `${heading}\n\n${renderCheckpoint(checkpoint, { heading: false, level: 4 })}`;
    }),
  );
  return { key: 'related-checkpoints', title: 'Checkpoints of Related Sessions (read only)', text: parts.join('\n\n') };
}

function clipText(text: string, limit: number, what: string): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n[… ${what} continues for ${(text.length - limit).toLocaleString('en-US')} more characters, not shown …]`;
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
