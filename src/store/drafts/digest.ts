import { createHash } from 'node:crypto';
import path from 'node:path';
import { canonicalJson } from '../canonical-json.js';
import type { DraftSession, ProjectRecord } from './records.js';
import type { DraftStoreHome } from './home.js';
import type { DraftStore } from './draft-store.js';

/** A DraftStore with the home it was opened for: where a project created without a path goes. */
export interface DraftStoreSide {
  store: DraftStore;
  home: DraftStoreHome;
}

/**
 * What `parley migrate` compares between the two copies of a project: counts, and one SHA-256 of
 * the canonical JSON (keys sorted, see canonical-json.ts) of the project's details, its tasks, every
 * draft of every task and its role files' text.
 */
export interface ProjectDigest {
  project: string;
  tasks: number;
  /** Every draft, closed and active. */
  drafts: number;
  activeDrafts: number;
  roles: number;
  sha256: string;
}

/**
 * Where a project is, as the copy keeps it: `default` for one in its store's default place
 * (`<home dataDir>/projects/<name>`: each side puts it under its own home), its folder otherwise.
 * The home project's folders are each store's own, so it has none.
 */
export function placementOf(project: ProjectRecord, side: DraftStoreSide): string | undefined {
  if (project.home) return undefined;
  return path.resolve(project.path) === path.join(side.home.dataDir, 'projects', project.name)
    ? 'default'
    : path.resolve(project.path);
}

/** A task's drafts in the order they were claimed: the closed ones oldest first, then the active one. */
export async function draftsOfTask(store: DraftStore, project: string, slug: string): Promise<DraftSession[]> {
  const [closed, current] = await Promise.all([store.listClosedDrafts(project, slug), store.getDraft(project, slug)]);
  return current?.status === 'active' ? [...closed, current] : closed;
}

/**
 * The project's digest in `side`, or undefined when it has no such project. `withCreatedAt: false`
 * leaves the creation time out: a home project the source never wrote down has none to compare.
 */
export async function digestProject(
  side: DraftStoreSide,
  name: string,
  options: { withCreatedAt: boolean },
): Promise<ProjectDigest | undefined> {
  const project = await side.store.getProject(name);
  if (project === undefined) return undefined;
  const hash = createHash('sha256');
  hash.update(
    canonicalJson({
      name: project.name,
      home: project.home,
      description: project.description,
      createdAt: options.withCreatedAt ? project.createdAt : undefined,
      placement: placementOf(project, side),
    }),
  );
  hash.update('\n');
  const tasks = await side.store.listTasks(name);
  let drafts = 0;
  let activeDrafts = 0;
  for (const task of tasks) {
    hash.update(canonicalJson(task)).update('\n');
    for (const draft of await draftsOfTask(side.store, name, task.slug)) {
      hash.update(canonicalJson(draft)).update('\n');
      drafts += 1;
      if (draft.status === 'active') activeDrafts += 1;
    }
  }
  const roles = (await side.store.listRoleFiles(name)).files;
  for (const role of roles) hash.update(canonicalJson({ role: role.name, text: role.text })).update('\n');
  return { project: name, tasks: tasks.length, drafts, activeDrafts, roles: roles.length, sha256: hash.digest('hex') };
}

/** Where two digests of one project differ, in words; empty when they match. */
export function projectDigestDifferences(source: ProjectDigest, target: ProjectDigest | undefined): string[] {
  if (target === undefined) return ['the target has no such project'];
  const differences: string[] = [];
  for (const kind of ['tasks', 'drafts', 'activeDrafts', 'roles'] as const) {
    if (source[kind] !== target[kind])
      differences.push(
        `${kind === 'activeDrafts' ? 'active drafts' : kind}: ${source[kind]} in the source, ${target[kind]} in the target`,
      );
  }
  if (differences.length === 0 && source.sha256 !== target.sha256)
    differences.push('same counts, different content (SHA-256 differs)');
  return differences;
}
