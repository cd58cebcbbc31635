import path from 'node:path';
import { assertOpen, type DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';
import { projectInfo, type ProjectLocation } from './projects.js';
import type { LoadedRoles } from './roles.js';
import type { ProjectInfo, RoleInfo, TaskInfo } from './types.js';

// The draft service's project, task and role calls, over its ProjectCatalog.

export async function listProjects(state: DraftServiceState): Promise<ProjectInfo[]> {
  return (await state.catalog.list()).map(projectInfo);
}

export async function createProject(
  state: DraftServiceState,
  params: { name: string; path?: string; description?: string },
): Promise<ProjectInfo> {
  assertOpen(state);
  return projectInfo(await state.catalog.create(params));
}

export async function listTasks(state: DraftServiceState, params: { project: string }): Promise<TaskInfo[]> {
  return state.catalog.listTasks(await state.catalog.resolve(params.project));
}

export async function createTask(
  state: DraftServiceState,
  params: { project: string; title: string; description?: string; slug?: string },
): Promise<TaskInfo> {
  assertOpen(state);
  if (typeof params.title !== 'string' || params.title.trim() === '') {
    throw new DraftError('INVALID_INPUT', 'A task needs a title.', { fault: 'user' });
  }
  const project = await state.catalog.resolve(params.project);
  return state.catalog.createTask(project, {
    title: params.title,
    ...(params.description !== undefined ? { description: params.description } : {}),
    ...(params.slug !== undefined ? { slug: params.slug } : {}),
  });
}

export async function listRoles(
  state: DraftServiceState,
  params: { project?: string },
): Promise<{ roles: RoleInfo[]; errors: Array<{ file: string; field?: string; message: string }> }> {
  const project =
    params.project === undefined ? await state.catalog.current() : await state.catalog.resolve(params.project);
  return state.catalog.loadRoles(project);
}

/** The role, or NOT_FOUND listing the roles, or INVALID_INPUT naming the malformed file and field. */
export async function resolveRole(
  state: DraftServiceState,
  project: ProjectLocation,
  name: string,
  loaded?: LoadedRoles,
): Promise<RoleInfo> {
  const { roles, errors } = loaded ?? (await state.catalog.loadRoles(project));
  const broken = errors.find((error) => path.basename(error.file, '.md') === name);
  if (broken) {
    throw new DraftError(
      'INVALID_INPUT',
      `Role "${name}" cannot be used: ${broken.file}${broken.field ? `, field "${broken.field}"` : ''}: ${broken.message}`,
      { fault: 'user', data: { role: name, file: broken.file, ...(broken.field ? { field: broken.field } : {}) } },
    );
  }
  const role = roles.find((entry) => entry.name === name);
  if (!role) {
    throw new DraftError('NOT_FOUND', `No role "${name}". Roles: ${roles.map((entry) => entry.name).join(', ')}.`, {
      fault: 'user',
      data: { role: name },
    });
  }
  return role;
}
