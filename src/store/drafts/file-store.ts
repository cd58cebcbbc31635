import { ValidationError } from '../../conversation/index.js';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isErrno, ioError } from '../atomic-file.js';
import { listEntries, readJson, readRoleFolder, writeJsonAtomic, writeTextAtomic } from './files.js';
import {
  DRAFT_FORMAT_VERSION,
  DraftSessionSchema,
  NewProjectSchema,
  ProjectFileSchema,
  ProjectRegistrySchema,
  TaskFileSchema,
  type DraftSession,
  type ProjectRecord,
  type ProjectRegistry,
  type RoleText,
  type TaskFile,
  type UnreadableDraft,
} from './records.js';
import { checkLeaseInput, LeaseTable, noActiveDraft, type DraftLeaseHolder, type DraftLeaseResult } from './lease.js';
import { checkProjectInput, type DraftStoreHome } from './home.js';
import {
  byStart,
  checkDraft,
  checkSameDraft,
  claimConflict,
  projectExists,
  projectNotFound,
  taskExists,
  taskNotFound,
} from './rules.js';
import type { DraftStore } from './draft-store.js';
import { KeyedQueue } from '../keyed-queue.js';
import { IdSchema } from '../record-format.js';
import { checkId, checkRecord, storeClosed } from '../validate.js';

/**
 * Writes that check before they write (claims, draft updates and releases, new projects) run one
 * at a time per home data folder, across every file draft store of this process. The file session
 * store's `store.lock` makes this process the only one writing that folder, so together they make
 * a claim atomic: no other writer can slip between its check and its write.
 */
const writers = new KeyedQueue();

/**
 * The file DraftStore: today's layout, exactly (src/draft/README.md):
 *
 * ```
 * <dataDir>/project.json                    optional { formatVersion, name, description, createdAt }
 * <dataDir>/projects.json                   the other projects this one knows
 * <dataDir>/roles/<role>.md                 role files
 * <dataDir>/tasks/<slug>/task.json          the task
 * <dataDir>/tasks/<slug>/draft.json         the task's current draft (active, or the last closed one)
 * <dataDir>/tasks/<slug>/drafts/<id>.json   earlier, closed drafts of the task
 * <dataDir>/projects/<name>/                folder of a project created without a path
 * ```
 *
 * Each project's files are in its own data folder; `dataDir` is the home project's. Every file is
 * replaced by write-temp + fsync + rename. It relies on the file session store's lock on the home
 * data folder for being the only writer (it takes no lock of its own: the session store of the
 * same process holds it).
 */
export function createFileDraftStore(options: { home: DraftStoreHome }): DraftStore {
  return new FileDraftStore(checkProjectInput(options.home));
}

class FileDraftStore implements DraftStore {
  readonly kind = 'file';
  private closed = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  /**
   * Draft leases, in this store: the file session store's lock makes one process the only one
   * running a data folder's drafts, so leases need not outlive it (after a restart none is held, and
   * `recover` takes every draft). They follow the DraftStore's rules all the same.
   */
  private readonly leases = new LeaseTable();

  constructor(private readonly homeInput: DraftStoreHome) {}

  /** Runs a call unless the store is closed, and tracks it so `close()` waits for it. */
  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('file draft'));
    const running = task();
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    return this.guard(() => writers.run(this.homeInput.dataDir, task));
  }

  // ---- projects ---------------------------------------------------------------------------------

  private registryFile(): string {
    return path.join(this.homeInput.dataDir, 'projects.json');
  }

  private async readRegistry(): Promise<ProjectRegistry> {
    return (
      (await readJson(this.registryFile(), ProjectRegistrySchema)) ?? {
        formatVersion: DRAFT_FORMAT_VERSION,
        projects: [],
      }
    );
  }

  private async projects(): Promise<ProjectRecord[]> {
    const file = await readJson(path.join(this.homeInput.dataDir, 'project.json'), ProjectFileSchema);
    const home: ProjectRecord = {
      name: file?.name ?? this.homeInput.name,
      path: this.homeInput.path,
      dataDir: this.homeInput.dataDir,
      ...(file?.description ? { description: file.description } : {}),
      ...(file ? { createdAt: file.createdAt } : {}),
      home: true,
    };
    const others = (await this.readRegistry()).projects
      .filter((entry) => entry.name !== home.name)
      .map((entry): ProjectRecord => ({
        name: entry.name,
        path: entry.path,
        dataDir: entry.dataDir ?? path.join(entry.path, '.parley'),
        ...(entry.description ? { description: entry.description } : {}),
        createdAt: entry.createdAt,
        home: false,
      }));
    return [home, ...others];
  }

  private async project(name: string): Promise<ProjectRecord> {
    const id = checkId(name, 'project');
    const found = (await this.projects()).find((project) => project.name === id);
    if (!found) throw projectNotFound(id);
    return found;
  }

  listProjects(): Promise<ProjectRecord[]> {
    return this.guard(() => this.projects());
  }

  getProject(name: string): Promise<ProjectRecord | undefined> {
    return this.guard(async () => {
      const id = checkId(name, 'project');
      return (await this.projects()).find((project) => project.name === id);
    });
  }

  createProject(input: Parameters<DraftStore['createProject']>[0]): Promise<ProjectRecord> {
    return this.exclusive(async () => {
      checkId(input?.name, 'project');
      const project = checkRecord(NewProjectSchema, input, 'project');
      const known = await this.projects();
      const home = known[0]!;
      if (home.name === project.name && home.createdAt === undefined) {
        // The home project never written down: its project.json is written now, in its own data folder.
        await writeJsonAtomic(path.join(this.homeInput.dataDir, 'project.json'), {
          formatVersion: DRAFT_FORMAT_VERSION,
          name: project.name,
          ...(project.description ? { description: project.description } : {}),
          createdAt: project.createdAt,
        });
        return {
          ...home,
          ...(project.description ? { description: project.description } : {}),
          createdAt: project.createdAt,
        };
      }
      if (known.some((other) => other.name === project.name)) throw projectExists(project.name);
      const folder =
        project.path === undefined
          ? path.join(this.homeInput.dataDir, 'projects', project.name)
          : path.resolve(this.homeInput.path, project.path);
      const dataDir = path.join(folder, '.parley');
      try {
        await fs.mkdir(dataDir, { recursive: true });
      } catch (error) {
        throw ioError('create the folder', dataDir, error);
      }
      const projectFile = path.join(dataDir, 'project.json');
      if ((await readJson(projectFile, ProjectFileSchema).catch(() => 'unreadable' as const)) === undefined) {
        await writeJsonAtomic(projectFile, {
          formatVersion: DRAFT_FORMAT_VERSION,
          name: project.name,
          ...(project.description ? { description: project.description } : {}),
          createdAt: project.createdAt,
        });
      }
      const registry = await this.readRegistry();
      const entry = {
        name: project.name,
        path: folder,
        dataDir,
        ...(project.description ? { description: project.description } : {}),
        createdAt: project.createdAt,
      };
      registry.projects.push(entry);
      await writeJsonAtomic(this.registryFile(), registry);
      return { ...entry, home: false };
    });
  }

  // ---- tasks ------------------------------------------------------------------------------------

  private tasksDir(project: ProjectRecord): string {
    return path.join(project.dataDir, 'tasks');
  }

  private taskDir(project: ProjectRecord, slug: string): string {
    return path.join(this.tasksDir(project), checkId(slug, 'task slug'));
  }

  private async slugs(project: ProjectRecord): Promise<string[]> {
    return (await listEntries(this.tasksDir(project), (entry) => entry.isDirectory())).filter(
      (slug) => IdSchema.safeParse(slug).success,
    );
  }

  private readTask(project: ProjectRecord, slug: string): Promise<TaskFile | undefined> {
    return readJson(path.join(this.taskDir(project, slug), 'task.json'), TaskFileSchema);
  }

  listTasks(projectName: string): Promise<TaskFile[]> {
    return this.guard(async () => {
      const project = await this.project(projectName);
      const tasks: TaskFile[] = [];
      for (const slug of await this.slugs(project)) {
        const task = await this.readTask(project, slug);
        if (task) tasks.push(task);
      }
      return tasks;
    });
  }

  getTask(projectName: string, slug: string): Promise<TaskFile | undefined> {
    return this.guard(async () => {
      checkId(slug, 'task slug');
      return this.readTask(await this.project(projectName), slug);
    });
  }

  createTask(projectName: string, input: TaskFile): Promise<TaskFile> {
    return this.guard(async () => {
      const project = await this.project(projectName);
      checkId(input?.slug, 'task slug');
      const task = checkRecord(TaskFileSchema, input, 'task');
      const dir = this.taskDir(project, task.slug);
      try {
        await fs.mkdir(this.tasksDir(project), { recursive: true });
        // The folder is the claim: mkdir fails for a taken slug, so two creations never share one.
        await fs.mkdir(dir);
      } catch (error) {
        if (isErrno(error, 'EEXIST')) throw taskExists(project.name, task.slug);
        throw ioError('create the folder', dir, error);
      }
      await writeJsonAtomic(path.join(dir, 'task.json'), task);
      return task;
    });
  }

  // ---- drafts -----------------------------------------------------------------------------------

  private draftFile(project: ProjectRecord, slug: string): string {
    return path.join(this.taskDir(project, slug), 'draft.json');
  }

  private readDraft(project: ProjectRecord, slug: string): Promise<DraftSession | undefined> {
    return readJson(this.draftFile(project, slug), DraftSessionSchema);
  }

  private async scanActive(projectName?: string): Promise<{ drafts: DraftSession[]; unreadable: UnreadableDraft[] }> {
    const drafts: DraftSession[] = [];
    const unreadable: UnreadableDraft[] = [];
    const projects = projectName === undefined ? await this.projects() : [await this.project(projectName)];
    for (const project of projects) {
      for (const slug of await this.slugs(project)) {
        try {
          const draft = await this.readDraft(project, slug);
          if (draft?.status === 'active') drafts.push(draft);
        } catch (error) {
          unreadable.push({
            location: this.draftFile(project, slug),
            reason: error instanceof Error ? error.message : String(error),
          });
        }
      }
    }
    return { drafts, unreadable };
  }

  getDraft(projectName: string, slug: string): Promise<DraftSession | undefined> {
    return this.guard(async () => {
      checkId(slug, 'task slug');
      return this.readDraft(await this.project(projectName), slug);
    });
  }

  findActiveDraft(channelId: string): Promise<DraftSession | undefined> {
    return this.guard(async () => {
      const holders = (await this.scanActive()).drafts.filter((draft) => draft.channelId === channelId);
      // Two active drafts on one channel only come from data written before claims were the store's: the newest counts.
      return holders.sort((a, b) => Date.parse(b.lastActivityAt) - Date.parse(a.lastActivityAt))[0];
    });
  }

  listActiveDrafts(
    filter: { project?: string } = {},
  ): Promise<{ drafts: DraftSession[]; unreadable: UnreadableDraft[] }> {
    return this.guard(() => this.scanActive(filter.project));
  }

  listClosedDrafts(projectName: string, slug: string): Promise<DraftSession[]> {
    return this.guard(async () => {
      const project = await this.project(projectName);
      const folder = path.join(this.taskDir(project, slug), 'drafts');
      const names = await listEntries(folder, (entry) => entry.isFile() && entry.name.endsWith('.json'));
      const closed: DraftSession[] = [];
      for (const name of names) {
        const draft = await readJson(path.join(folder, name), DraftSessionSchema);
        if (draft) closed.push(draft);
      }
      const current = await this.readDraft(project, slug);
      if (current?.status === 'closed' && !closed.some((draft) => draft.sessionId === current.sessionId))
        closed.push(current);
      return closed.sort(byStart);
    });
  }

  claimDraft(input: DraftSession): Promise<DraftSession> {
    return this.exclusive(async () => {
      const draft = checkDraft(input, 'active', 'claimDraft');
      const project = await this.project(draft.project);
      if (!(await this.readTask(project, draft.taskSlug))) throw taskNotFound(project.name, draft.taskSlug);
      // The task's own draft.json first: a damaged one is an error here, never overwritten.
      const previous = await this.readDraft(project, draft.taskSlug);
      const conflict = claimConflict(
        draft,
        [...(previous ? [previous] : []), ...(await this.scanActive()).drafts].filter(
          (held) => held.status === 'active',
        ),
      );
      if (conflict) throw conflict;
      // The previous draft's record is kept beside the task before draft.json is replaced.
      if (previous)
        await writeJsonAtomic(
          path.join(this.taskDir(project, draft.taskSlug), 'drafts', `${previous.sessionId}.json`),
          previous,
        );
      await writeJsonAtomic(this.draftFile(project, draft.taskSlug), draft);
      return structuredClone(draft);
    });
  }

  updateDraft(input: DraftSession): Promise<DraftSession> {
    return this.exclusive(async () => {
      const draft = checkDraft(input, 'active', 'updateDraft');
      const project = await this.project(draft.project);
      checkSameDraft(draft, await this.readDraft(project, draft.taskSlug), true);
      await writeJsonAtomic(this.draftFile(project, draft.taskSlug), draft);
      return structuredClone(draft);
    });
  }

  releaseDraft(input: DraftSession): Promise<DraftSession> {
    return this.exclusive(async () => {
      const draft = checkDraft(input, 'closed', 'releaseDraft');
      const project = await this.project(draft.project);
      checkSameDraft(draft, await this.readDraft(project, draft.taskSlug), false);
      await writeJsonAtomic(this.draftFile(project, draft.taskSlug), draft);
      this.leases.forget(draft.sessionId);
      return structuredClone(draft);
    });
  }

  // ---- the draft lease --------------------------------------------------------------------------

  acquireDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult> {
    // With the writers, so a draft released meanwhile is not granted a lease.
    return this.exclusive(async () => {
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      if (!(await this.scanActive()).drafts.some((draft) => draft.sessionId === lease.sessionId))
        throw noActiveDraft(lease.sessionId);
      return this.leases.acquire(lease.sessionId, lease.owner, lease.ttlMs);
    });
  }

  renewDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult> {
    return this.guard(async () => {
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      return this.leases.renew(lease.sessionId, lease.owner, lease.ttlMs);
    });
  }

  releaseDraftLease(sessionId: string, owner: string): Promise<void> {
    return this.guard(async () => {
      const lease = checkLeaseInput(sessionId, owner);
      this.leases.release(lease.sessionId, lease.owner);
    });
  }

  readDraftLease(sessionId: string): Promise<DraftLeaseHolder | undefined> {
    return this.guard(async () => this.leases.read(checkId(sessionId, 'session id')));
  }

  // ---- role files -------------------------------------------------------------------------------

  private rolesDir(project: ProjectRecord): string {
    return path.join(project.dataDir, 'roles');
  }

  listRoleFiles(
    projectName: string,
  ): Promise<{ files: RoleText[]; errors: Array<{ location: string; message: string }> }> {
    return this.guard(async () => readRoleFolder(this.rolesDir(await this.project(projectName))));
  }

  readRoleFile(projectName: string, role: string): Promise<RoleText | undefined> {
    return this.guard(async () => {
      const name = checkId(role, 'role');
      const location = path.join(this.rolesDir(await this.project(projectName)), `${name}.md`);
      try {
        return { name, location, text: await fs.readFile(location, 'utf8') };
      } catch (error) {
        if (isErrno(error, 'ENOENT')) return undefined;
        throw ioError('read', location, error);
      }
    });
  }

  writeRoleFile(projectName: string, role: string, text: string): Promise<RoleText> {
    return this.guard(async () => {
      const name = checkId(role, 'role');
      if (typeof text !== 'string') throw new ValidationError(`Role file "${name}" must be text.`);
      const location = path.join(this.rolesDir(await this.project(projectName)), `${name}.md`);
      await writeTextAtomic(location, text);
      return { name, location, text };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
  }
}
