import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CONFIG_FILE_NAME, ConfigError, readParleyConfig } from '../backends/index.js';
import { IdSchema } from '../store/index.js';
import { DraftError } from './errors.js';
import { exists, listFolders, readJsonFile, writeJsonAtomic } from './files.js';
import {
  DRAFT_FORMAT_VERSION,
  DraftSessionSchema,
  ProjectFileSchema,
  ProjectRegistrySchema,
  TaskFileSchema,
  type DraftSession,
  type ProjectInfo,
  type ProjectRegistry,
  type TaskFile,
  type TaskInfo,
} from './types.js';

/**
 * Projects and their tasks on disk. A project is a folder; its Parley data lives in its data
 * folder (default `<project>/.parley`):
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
  /** The role a client drafts for a first message typed before any draft. */
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
}

export class ProjectCatalog {
  private registryWrites: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ProjectCatalogOptions) {}

  private iso(): string {
    return new Date(this.options.clock()).toISOString();
  }

  // ---- projects -------------------------------------------------------------------------------

  async current(): Promise<ProjectLocation> {
    const file = await readJsonFile(path.join(this.options.dataDir, 'project.json'), ProjectFileSchema);
    const folder = path.resolve(this.options.projectRoot);
    return {
      name: file?.name ?? slugify(path.basename(folder)) ?? 'project',
      path: folder,
      dataDir: path.resolve(this.options.dataDir),
      ...(file?.description ? { description: file.description } : {}),
      current: true,
      defaultRole: await defaultRoleOf(folder),
    };
  }

  async list(): Promise<ProjectLocation[]> {
    const current = await this.current();
    const registry = await this.readRegistry();
    const others = await Promise.all(
      registry.projects
        .filter((entry) => entry.name !== current.name)
        .map(async (entry) => ({
          name: entry.name,
          path: entry.path,
          dataDir: entry.dataDir ?? path.join(entry.path, '.parley'),
          ...(entry.description ? { description: entry.description } : {}),
          current: false,
          defaultRole: await defaultRoleOf(entry.path),
        })),
    );
    return [current, ...others];
  }

  /** The project of that name; NOT_FOUND naming the known ones. */
  async resolve(name: string): Promise<ProjectLocation> {
    checkId(name, 'project');
    const projects = await this.list();
    const found = projects.find((project) => project.name === name);
    if (!found) {
      throw new DraftError('NOT_FOUND', `No project "${name}". Known projects: ${projects.map((project) => project.name).join(', ')}. Create it with create_project.`, {
        fault: 'user',
        data: { project: name },
      });
    }
    return found;
  }

  /** Registers a project (creating its folder and data folder when missing). */
  async create(params: { name: string; path?: string; description?: string }): Promise<ProjectLocation> {
    checkId(params.name, 'project');
    const work = this.registryWrites.then(async () => {
      const projects = await this.list();
      if (projects.some((project) => project.name === params.name)) {
        throw new DraftError('INVALID_INPUT', `A project named "${params.name}" already exists; choose another name.`, {
          fault: 'user',
          data: { project: params.name },
        });
      }
      const folder = params.path
        ? path.resolve(this.options.projectRoot, params.path)
        : path.join(this.options.dataDir, 'projects', params.name);
      const dataDir = path.join(folder, '.parley');
      await fs.mkdir(dataDir, { recursive: true });
      const projectFile = path.join(dataDir, 'project.json');
      if (!(await exists(projectFile))) {
        await writeJsonAtomic(projectFile, {
          formatVersion: DRAFT_FORMAT_VERSION,
          name: params.name,
          ...(params.description ? { description: params.description } : {}),
          createdAt: this.iso(),
        });
      }
      const registry = await this.readRegistry();
      registry.projects.push({
        name: params.name,
        path: folder,
        dataDir,
        ...(params.description ? { description: params.description } : {}),
        createdAt: this.iso(),
      });
      await writeJsonAtomic(this.registryFile(), registry);
      return {
        name: params.name,
        path: folder,
        dataDir,
        ...(params.description ? { description: params.description } : {}),
        current: false,
        defaultRole: await defaultRoleOf(folder),
      };
    });
    this.registryWrites = work.catch(() => undefined);
    return work;
  }

  private registryFile(): string {
    return path.join(this.options.dataDir, 'projects.json');
  }

  private async readRegistry(): Promise<ProjectRegistry> {
    return (await readJsonFile(this.registryFile(), ProjectRegistrySchema)) ?? { formatVersion: DRAFT_FORMAT_VERSION, projects: [] };
  }

  // ---- tasks ----------------------------------------------------------------------------------

  rolesDir(project: ProjectLocation): string {
    return path.join(project.dataDir, 'roles');
  }

  taskDir(project: ProjectLocation, slug: string): string {
    checkId(slug, 'task');
    return path.join(project.dataDir, 'tasks', slug);
  }

  async listTasks(project: ProjectLocation): Promise<TaskInfo[]> {
    const slugs = (await listFolders(path.join(project.dataDir, 'tasks'))).filter((slug) => IdSchema.safeParse(slug).success);
    const tasks: TaskInfo[] = [];
    for (const slug of slugs) {
      const task = await this.readTask(project, slug);
      if (task) tasks.push(task);
    }
    return tasks;
  }

  /** The task; NOT_FOUND naming the project and slug. */
  async getTask(project: ProjectLocation, slug: string): Promise<TaskInfo> {
    const task = await this.readTask(project, slug);
    if (!task) {
      throw new DraftError('NOT_FOUND', `No task "${slug}" in project "${project.name}". List tasks with list_tasks or create one with create_task.`, {
        fault: 'user',
        data: { project: project.name, task: slug },
      });
    }
    return task;
  }

  async createTask(project: ProjectLocation, params: { title: string; description?: string; slug?: string }): Promise<TaskInfo> {
    if (params.slug !== undefined) checkId(params.slug, 'task');
    const tasksDir = path.join(project.dataDir, 'tasks');
    await fs.mkdir(tasksDir, { recursive: true });
    const base = params.slug ?? slugify(params.title) ?? 'task';
    // The folder is the claim: mkdir fails for a taken slug, so two creations never share one.
    for (let attempt = 1; ; attempt++) {
      const slug = attempt === 1 ? base : `${base.slice(0, 190)}-${attempt}`;
      try {
        await fs.mkdir(path.join(tasksDir, slug));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (params.slug !== undefined) {
          throw new DraftError('INVALID_INPUT', `Project "${project.name}" already has a task "${slug}"; choose another slug.`, {
            fault: 'user',
            data: { project: project.name, task: slug },
          });
        }
        continue;
      }
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
      await writeJsonAtomic(path.join(tasksDir, slug, 'task.json'), file);
      return this.toInfo(project, file, undefined);
    }
  }

  private async readTask(project: ProjectLocation, slug: string): Promise<TaskInfo | undefined> {
    const dir = this.taskDir(project, slug);
    const file = await readJsonFile(path.join(dir, 'task.json'), TaskFileSchema);
    if (!file) return undefined;
    const draft = await this.readDraft(project, slug).catch(() => undefined);
    return this.toInfo(project, file, draft);
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
      ...(draft?.status === 'active' ? { activeDraft: { sessionId: draft.sessionId, role: draft.role, channelId: draft.channelId } } : {}),
    };
  }

  // ---- draft.json -----------------------------------------------------------------------------

  draftFile(project: ProjectLocation, slug: string): string {
    return path.join(this.taskDir(project, slug), 'draft.json');
  }

  async readDraft(project: ProjectLocation, slug: string): Promise<DraftSession | undefined> {
    return readJsonFile(this.draftFile(project, slug), DraftSessionSchema);
  }

  async writeDraft(project: ProjectLocation, draft: DraftSession): Promise<void> {
    await writeJsonAtomic(this.draftFile(project, draft.taskSlug), DraftSessionSchema.parse(draft));
  }

  /** Moves a closed draft.json aside (`drafts/<sessionId>.json`) so a new draft of the task keeps the old one's record. */
  async archiveDraft(project: ProjectLocation, draft: DraftSession): Promise<void> {
    const dir = this.taskDir(project, draft.taskSlug);
    await writeJsonAtomic(path.join(dir, 'drafts', `${draft.sessionId}.json`), draft);
  }

  /** Every draft.json of every known project, with where it was found. Unreadable files are reported, not thrown. */
  async scanDrafts(): Promise<{ found: Array<{ project: ProjectLocation; draft: DraftSession }>; failed: Array<{ file: string; reason: string }> }> {
    const found: Array<{ project: ProjectLocation; draft: DraftSession }> = [];
    const failed: Array<{ file: string; reason: string }> = [];
    for (const project of await this.list()) {
      for (const slug of await listFolders(path.join(project.dataDir, 'tasks'))) {
        if (!IdSchema.safeParse(slug).success) continue;
        const file = this.draftFile(project, slug);
        try {
          const draft = await this.readDraft(project, slug);
          if (draft) found.push({ project, draft });
        } catch (error) {
          failed.push({ file, reason: error instanceof Error ? error.message : String(error) });
        }
      }
    }
    return { found, failed };
  }
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
    throw new DraftError('INVALID_INPUT', `"${value}" is not a valid ${what} name: ${parsed.error.issues[0]?.message ?? 'invalid'}.`, {
      fault: 'user',
      data: { [what]: value },
    });
  }
}
