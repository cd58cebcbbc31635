import path from 'node:path';
import { CONFIG_FILE_NAME, ConfigError, readParleyConfig } from '../backends/index.js';
import {
  createFileDraftStore,
  DRAFT_FORMAT_VERSION,
  IdSchema,
  StoreError,
  type DraftSession,
  type DraftStore,
  type ProjectRecord,
  type StoreErrorCode,
  type TaskFile,
} from '../store/index.js';
import { DraftError } from './errors.js';
import { parseRoles, type LoadedRoles } from './roles.js';
import type { ProjectInfo, TaskInfo } from './types.js';

/**
 * Projects and their tasks, kept by a DraftStore. A project is a folder; with the file DraftStore
 * (the default) its Parley data lives in its data folder (default `<project>/.parley`):
 *
 * ```
 * <dataDir>/project.json                 optional: { name, description }; default name: the folder's
 * <dataDir>/projects.json                the other projects this one knows (create_project)
 * <dataDir>/roles/<role>.md              role files (see roles.ts)
 * <dataDir>/tasks/<slug>/task.json       slug, title, description, state
 * <dataDir>/tasks/<slug>/draft.json      the task's current DraftSession (seed 000's persistence)
 * <dataDir>/tasks/<slug>/drafts/<id>.json  earlier, closed drafts of the task
 * <dataDir>/projects/<name>/             default folder of a project created without a path
 * <project>/parley.config.json           optional: `defaultRole`, the role a first message drafts
 * ```
 *
 * Every name and slug is validated with IdSchema before it becomes part of a path, so nothing
 * can leave the data folder.
 */
export interface ProjectLocation {
  name: string;
  path: string;
  dataDir: string;
  description?: string;
  current: boolean;
  /** The role a first message typed before any draft drafts. */
  defaultRole: string;
}

/** The default role of a project whose `parley.config.json` names none. */
export const DEFAULT_ROLE = 'product-analyst';

/**
 * A project's default role: `defaultRole` in its `parley.config.json`, else `product-analyst`.
 * Read on every listing, so an edited file counts at once. A file that cannot be read does not
 * break listing or resolving projects: it gives the default here, and its error (naming the file
 * and field) comes from where the file is used for back ends: `parley serve` refuses to start on
 * it, and a draft service that read it at start fails each draft with it. Whether the role exists
 * is checked when it is drafted ("No role …").
 */
async function defaultRoleOf(projectFolder: string): Promise<string> {
  try {
    const config = await readParleyConfig(path.join(projectFolder, CONFIG_FILE_NAME));
    return config?.defaultRole ?? DEFAULT_ROLE;
  } catch (error) {
    if (error instanceof ConfigError) return DEFAULT_ROLE;
    throw error;
  }
}

export interface ProjectCatalogOptions {
  projectRoot: string;
  dataDir: string;
  clock: () => number;
  /** Where projects, tasks, drafts and role files are kept; default: the file DraftStore over `dataDir`. */
  store?: DraftStore;
}

/** The file DraftStore over a project's data folder: today's layout. */
export function fileDraftStore(projectRoot: string, dataDir: string): DraftStore {
  const folder = path.resolve(projectRoot);
  return createFileDraftStore({ home: { name: slugify(path.basename(folder)) ?? 'project', path: folder, dataDir } });
}

/**
 * The draft layer's view of its DraftStore: projects with their default role, tasks with their
 * active draft, drafts and roles; the store's errors said the way the draft service says them.
 */
export class ProjectCatalog {
  readonly store: DraftStore;

  constructor(private readonly options: ProjectCatalogOptions) {
    this.store = options.store ?? fileDraftStore(options.projectRoot, options.dataDir);
  }

  private iso(): string {
    return new Date(this.options.clock()).toISOString();
  }

  // ---- projects -------------------------------------------------------------------------------

  async current(): Promise<ProjectLocation> {
    const [home] = await this.store.listProjects();
    return locate(home!, true);
  }

  async list(): Promise<ProjectLocation[]> {
    return Promise.all((await this.store.listProjects()).map((project) => locate(project, project.home)));
  }

  /** The project of that name; NOT_FOUND naming the known ones. */
  async resolve(name: string): Promise<ProjectLocation> {
    checkId(name, 'project');
    const found = await this.store.getProject(name);
    if (!found) {
      const projects = await this.store.listProjects();
      throw new DraftError(
        'NOT_FOUND',
        `No project "${name}". Known projects: ${projects.map((project) => project.name).join(', ')}. Create it with create_project.`,
        {
          fault: 'user',
          data: { project: name },
        },
      );
    }
    return locate(found, found.home);
  }

  /** Registers a project (creating its folder and data folder when missing). */
  async create(params: { name: string; path?: string; description?: string }): Promise<ProjectLocation> {
    checkId(params.name, 'project');
    try {
      // The store would write down a home project that has no project.json yet; here its name is simply taken.
      if ((await this.store.getProject(params.name))?.home)
        throw new StoreError('PROJECT_EXISTS', `Project "${params.name}" is the home project.`, { fault: 'user' });
      const created = await this.store.createProject({
        name: params.name,
        ...(params.path ? { path: path.resolve(this.options.projectRoot, params.path) } : {}),
        ...(params.description ? { description: params.description } : {}),
        createdAt: this.iso(),
      });
      return await locate(created, false);
    } catch (error) {
      if (isStoreError(error, 'PROJECT_EXISTS')) {
        throw new DraftError('INVALID_INPUT', `A project named "${params.name}" already exists; choose another name.`, {
          fault: 'user',
          data: { project: params.name },
          cause: error,
        });
      }
      throw error;
    }
  }

  // ---- tasks ----------------------------------------------------------------------------------

  /** `<dataDir>/tasks/<slug>`: where the file store keeps the task (TaskInfo.taskDir, DraftSession.taskDir). */
  taskDir(project: ProjectLocation, slug: string): string {
    checkId(slug, 'task');
    return path.join(project.dataDir, 'tasks', slug);
  }

  async listTasks(project: ProjectLocation): Promise<TaskInfo[]> {
    const [tasks, active] = await Promise.all([
      this.store.listTasks(project.name),
      this.store.listActiveDrafts({ project: project.name }),
    ]);
    const bySlug = new Map(active.drafts.map((draft) => [draft.taskSlug, draft]));
    return tasks.map((task) => this.toInfo(project, task, bySlug.get(task.slug)));
  }

  /** The task; NOT_FOUND naming the project and slug. */
  async getTask(project: ProjectLocation, slug: string): Promise<TaskInfo> {
    checkId(slug, 'task');
    const task = await this.store.getTask(project.name, slug);
    if (!task) {
      throw new DraftError(
        'NOT_FOUND',
        `No task "${slug}" in project "${project.name}". List tasks with list_tasks or create one with create_task.`,
        {
          fault: 'user',
          data: { project: project.name, task: slug },
        },
      );
    }
    const draft = await this.store.getDraft(project.name, slug).catch(() => undefined);
    return this.toInfo(project, task, draft);
  }

  async createTask(
    project: ProjectLocation,
    params: { title: string; description?: string; slug?: string },
  ): Promise<TaskInfo> {
    if (params.slug !== undefined) checkId(params.slug, 'task');
    const base = params.slug ?? slugify(params.title) ?? 'task';
    // The store refuses a taken slug (TASK_EXISTS); a slug made from the title takes the next free one.
    for (let attempt = 1; ; attempt++) {
      const slug = attempt === 1 ? base : `${base.slice(0, 190)}-${attempt}`;
      const now = this.iso();
      const file: TaskFile = {
        formatVersion: DRAFT_FORMAT_VERSION,
        slug,
        title: params.title,
        description: params.description ?? '',
        state: 'open',
        createdAt: now,
        updatedAt: now,
      };
      try {
        return this.toInfo(project, await this.store.createTask(project.name, file), undefined);
      } catch (error) {
        if (!isStoreError(error, 'TASK_EXISTS')) throw error;
        if (params.slug !== undefined) {
          throw new DraftError(
            'INVALID_INPUT',
            `Project "${project.name}" already has a task "${slug}"; choose another slug.`,
            {
              fault: 'user',
              data: { project: project.name, task: slug },
              cause: error,
            },
          );
        }
      }
    }
  }

  private toInfo(project: ProjectLocation, file: TaskFile, draft: DraftSession | undefined): TaskInfo {
    return {
      project: project.name,
      slug: file.slug,
      title: file.title,
      description: file.description,
      state: file.state,
      taskDir: this.taskDir(project, file.slug),
      createdAt: file.createdAt,
      updatedAt: file.updatedAt,
      ...(draft?.status === 'active'
        ? { activeDraft: { sessionId: draft.sessionId, role: draft.role, channelId: draft.channelId } }
        : {}),
    };
  }

  // ---- drafts ---------------------------------------------------------------------------------

  /** The task's current draft (active or the last closed one). */
  readDraft(project: ProjectLocation, slug: string): Promise<DraftSession | undefined> {
    return this.store.getDraft(project.name, slug);
  }

  /** The active draft holding the channel in the store, whichever process runs it. */
  activeDraftOfChannel(channelId: string): Promise<DraftSession | undefined> {
    return this.store.findActiveDraft(channelId);
  }

  /** The store's atomic claim: DRAFT_ALREADY_ACTIVE when the channel or the task is held. */
  async claimDraft(draft: DraftSession): Promise<void> {
    try {
      await this.store.claimDraft(draft);
    } catch (error) {
      if (isStoreError(error, 'DRAFT_ALREADY_ACTIVE')) {
        throw new DraftError('DRAFT_ALREADY_ACTIVE', error.message, {
          fault: 'user',
          ...(error.data ? { data: error.data } : {}),
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Saves the draft: its new state while active, or its release once closed. */
  async saveDraft(draft: DraftSession): Promise<void> {
    await (draft.status === 'closed' ? this.store.releaseDraft(draft) : this.store.updateDraft(draft));
  }

  /** Every active draft of every known project, with its project. Unreadable records are reported, not thrown. */
  async scanDrafts(): Promise<{
    found: Array<{ project: ProjectLocation; draft: DraftSession }>;
    failed: Array<{ file: string; reason: string }>;
  }> {
    const [projects, active] = await Promise.all([this.list(), this.store.listActiveDrafts()]);
    const byName = new Map(projects.map((project) => [project.name, project]));
    const found: Array<{ project: ProjectLocation; draft: DraftSession }> = [];
    for (const draft of active.drafts) {
      const project = byName.get(draft.project);
      if (project) found.push({ project, draft });
    }
    return { found, failed: active.unreadable.map((entry) => ({ file: entry.location, reason: entry.reason })) };
  }

  // ---- roles ----------------------------------------------------------------------------------

  /** Built-in roles overlaid with the project's role files. Never throws for a bad file. */
  async loadRoles(project: ProjectLocation): Promise<LoadedRoles> {
    return parseRoles(await this.store.listRoleFiles(project.name));
  }
}

async function locate(project: ProjectRecord, current: boolean): Promise<ProjectLocation> {
  return {
    name: project.name,
    path: project.path,
    dataDir: project.dataDir,
    ...(project.description ? { description: project.description } : {}),
    current,
    defaultRole: await defaultRoleOf(project.path),
  };
}

function isStoreError<Code extends StoreErrorCode>(error: unknown, code: Code): error is StoreError & { code: Code } {
  return error instanceof StoreError && error.code === code;
}

/** An id from free text: letters, digits, ".", "_", "-"; undefined when nothing is left. */
export function slugify(text: string): string | undefined {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[.-]+|[.-]+$/g, '')
    .slice(0, 80)
    .replace(/[.-]+$/g, '');
  return slug === '' ? undefined : slug;
}

function checkId(value: string, what: 'project' | 'task' | 'role'): void {
  const parsed = IdSchema.safeParse(value);
  if (!parsed.success) {
    throw new DraftError(
      'INVALID_INPUT',
      `"${value}" is not a valid ${what} name: ${parsed.error.issues[0]?.message ?? 'invalid'}.`,
      {
        fault: 'user',
        data: { [what]: value },
      },
    );
  }
}

/** A project as the protocol and the agents' tools show it. */
export function projectInfo(project: ProjectLocation): ProjectInfo {
  return {
    name: project.name,
    path: project.path,
    dataDir: project.dataDir,
    current: project.current,
    defaultRole: project.defaultRole,
    ...(project.description ? { description: project.description } : {}),
  };
}
