import { sameJson } from '../canonical-json.js';
import {
  digestProject,
  draftsOfTask,
  placementOf,
  projectDigestDifferences,
  type DraftStoreSide,
  type ProjectDigest,
} from './digest.js';
import type { DraftSession, ProjectRecord } from './records.js';
import { StoreError, type StoreErrorCode } from '../errors.js';

export type { DraftStoreSide, ProjectDigest } from './digest.js';

/** One record of the draft layer and what the copy did with it. */
export interface DraftRecordMigration {
  kind: 'project' | 'task' | 'draft' | 'role';
  /** `project`, `project/task`, `project/task/sessionId`, or `project/role.md`. */
  id: string;
  /** `failed`: the source's record could not be read (a damaged role file), so it was not copied. */
  status: 'copied' | 'unchanged' | 'conflict' | 'failed';
  reason?: string;
}

/** One project's check after the copy: both stores' digests, and where they differ. */
export interface ProjectVerification {
  project: string;
  home: boolean;
  source: ProjectDigest;
  /** Absent when the target has no such project. */
  target?: ProjectDigest;
  /** Empty when the two copies match. */
  differences: string[];
}

export interface DraftLayerReport {
  records: DraftRecordMigration[];
  projects: ProjectVerification[];
  /** True when nothing was written to the target. */
  nothingCopied: boolean;
  /** True when every record was copied (or already there) and every project verified equal. */
  ok: boolean;
}

/**
 * Copies the draft layer from one DraftStore into another, through the DraftStore interface only:
 * every project (description, creation time, and its place when it is not the default one), every
 * task, every draft of every task (closed and active, field for field) and every role file's text.
 *
 * Projects are matched by name, and so is the home project: both sides must be opened for a home of
 * the same name (`parley migrate` names it; see src/cli/draft-layer-migration.ts). The source's home
 * project is written down as the target's home (`createProject` of a home never written down); a
 * target whose home has another name gets the source's home as a conflict.
 *
 * Idempotent and resumable: a record the target holds equal is `unchanged`; one it holds different is
 * a `conflict`, left as it is (the tasks, drafts and roles of a project whose details differ are
 * still copied into it, each compared on its own: a server that opened the database first registered
 * its home project without a description). A
 * task's drafts are copied in the order they were claimed, each closed one claimed and released
 * again, so the target's claim rules hold throughout; the active drafts are claimed last, once every
 * closed one is in, and a target whose channel or task already has another active draft is a
 * conflict. Then every source project is verified: counts and a SHA-256 per project (digest.ts).
 *
 * The source should not be written to meanwhile (stop the servers using it).
 */
export async function migrateDraftStore(from: DraftStoreSide, to: DraftStoreSide): Promise<DraftLayerReport> {
  const records: DraftRecordMigration[] = [];
  const activeClaims: Array<{ id: string; draft: DraftSession }> = [];
  const sourceProjects = await from.store.listProjects();

  for (const project of sourceProjects) {
    const outcome = await copyProject(project, from, to);
    records.push(outcome);
    // A project whose details differ is still the target's project of that name: its records are copied into it.
    if ((await to.store.getProject(project.name)) === undefined) continue;
    for (const task of await from.store.listTasks(project.name)) {
      const id = `${project.name}/${task.slug}`;
      const existing = await to.store.getTask(project.name, task.slug);
      if (existing === undefined) {
        await to.store.createTask(project.name, task);
        records.push({ kind: 'task', id, status: 'copied' });
      } else if (sameJson(existing, task)) {
        records.push({ kind: 'task', id, status: 'unchanged' });
      } else {
        records.push({
          kind: 'task',
          id,
          status: 'conflict',
          reason: `the target's task differs from the source's (updatedAt ${existing.updatedAt} in the target, ${task.updatedAt} in the source)`,
        });
      }
      records.push(...(await copyClosedDrafts(from, to, project.name, task.slug, activeClaims)));
    }
    records.push(...(await copyRoles(from, to, project.name)));
  }

  // Active drafts last: a closed draft copied before them may have held the same channel.
  for (const { id, draft } of activeClaims) {
    try {
      await to.store.claimDraft(draft);
      records.push({ kind: 'draft', id, status: 'copied' });
    } catch (error) {
      if (!isStoreError(error, 'DRAFT_ALREADY_ACTIVE')) throw error;
      records.push({
        kind: 'draft',
        id,
        status: 'conflict',
        reason: `the target refuses the active draft: ${error.message}`,
      });
    }
  }

  const projects: ProjectVerification[] = [];
  for (const project of sourceProjects) {
    // A home project the source never wrote down has no creation time to compare.
    const options = { withCreatedAt: !(project.home && project.createdAt === undefined) };
    const source = (await digestProject(from, project.name, options))!;
    const target = await digestProject(to, project.name, options);
    projects.push({
      project: project.name,
      home: project.home,
      source,
      ...(target ? { target } : {}),
      differences: projectDigestDifferences(source, target),
    });
  }

  const nothingCopied = records.every((record) => record.status !== 'copied');
  const ok =
    records.every((record) => record.status === 'copied' || record.status === 'unchanged') &&
    projects.every((project) => project.differences.length === 0);
  return { records, projects, nothingCopied, ok };
}

async function copyProject(
  project: ProjectRecord,
  from: DraftStoreSide,
  to: DraftStoreSide,
): Promise<DraftRecordMigration> {
  const id = project.name;
  const existing = await to.store.getProject(project.name);
  if (project.home && existing?.home !== true) {
    const targetHome = (await to.store.listProjects()).find((known) => known.home);
    if (targetHome !== undefined) {
      return {
        kind: 'project',
        id,
        status: 'conflict',
        reason: `it is the source's home project, but the target's home project is "${targetHome.name}"; its tasks, drafts and roles were not copied`,
      };
    }
  }
  if (existing === undefined || (existing.home && existing.createdAt === undefined)) {
    // The target's home never written down, and the source's neither (a folder without project.json): nothing to write.
    if (existing !== undefined && project.createdAt === undefined) return { kind: 'project', id, status: 'unchanged' };
    const placement = placementOf(project, from);
    await to.store.createProject({
      name: project.name,
      ...(placement === undefined || placement === 'default' ? {} : { path: placement }),
      ...(project.description === undefined ? {} : { description: project.description }),
      // A home project the source never wrote down is written down in a database as of now (a database has no other kind).
      createdAt: project.createdAt ?? new Date().toISOString(),
    });
    return { kind: 'project', id, status: 'copied' };
  }
  const differences: string[] = [];
  if (existing.description !== project.description)
    differences.push(
      `description ${JSON.stringify(existing.description ?? null)} in the target, ${JSON.stringify(project.description ?? null)} in the source`,
    );
  if (project.createdAt !== undefined && existing.createdAt !== project.createdAt)
    differences.push(`createdAt ${existing.createdAt ?? 'none'} in the target, ${project.createdAt} in the source`);
  if (placementOf(existing, to) !== placementOf(project, from))
    differences.push(`folder ${existing.path} in the target, ${project.path} in the source`);
  if (differences.length === 0) return { kind: 'project', id, status: 'unchanged' };
  return {
    kind: 'project',
    id,
    status: 'conflict',
    reason: `the target's project differs from the source's (${differences.join('; ')}); it was left as it is`,
  };
}

/**
 * The task's closed drafts, in claim order, after those the target holds already; its active draft is
 * queued in `activeClaims`. The target's drafts must be the beginning of the source's, else conflict.
 */
async function copyClosedDrafts(
  from: DraftStoreSide,
  to: DraftStoreSide,
  project: string,
  slug: string,
  activeClaims: Array<{ id: string; draft: DraftSession }>,
): Promise<DraftRecordMigration[]> {
  const source = await draftsOfTask(from.store, project, slug);
  const target = await draftsOfTask(to.store, project, slug);
  const idOf = (draft: DraftSession) => `${project}/${slug}/${draft.sessionId}`;
  const results: DraftRecordMigration[] = [];
  let matched = 0;
  while (matched < source.length && matched < target.length && sameJson(source[matched], target[matched])) {
    results.push({ kind: 'draft', id: idOf(source[matched]!), status: 'unchanged' });
    matched += 1;
  }
  const next = source[matched];
  // A closed draft whose copy stopped between its claim and its release: release it now.
  if (next?.status === 'closed' && matched === target.length - 1 && sameJson(target[matched], claimable(next))) {
    await to.store.releaseDraft(next);
    results.push({ kind: 'draft', id: idOf(next), status: 'copied' });
    matched += 1;
  }
  if (matched < target.length) {
    const held = target[matched]!;
    const reason =
      matched < source.length
        ? `the target's draft ${held.sessionId} (${held.status}) differs from the source's ${source[matched]!.sessionId} (${source[matched]!.status}) at position ${matched + 1} of the task's drafts`
        : `the target holds ${target.length - matched} more draft(s) of this task than the source`;
    for (const draft of source.slice(matched))
      results.push({ kind: 'draft', id: idOf(draft), status: 'conflict', reason });
    if (matched === source.length)
      results.push({ kind: 'draft', id: `${project}/${slug}`, status: 'conflict', reason });
    return results;
  }
  for (const [index, draft] of source.slice(matched).entries()) {
    if (draft.status === 'active') {
      activeClaims.push({ id: idOf(draft), draft });
      continue;
    }
    try {
      await to.store.claimDraft(claimable(draft));
    } catch (error) {
      if (!isStoreError(error, 'DRAFT_ALREADY_ACTIVE')) throw error;
      const reason = `the target refuses to take it in: ${error.message}`;
      for (const rest of source.slice(matched + index))
        results.push({ kind: 'draft', id: idOf(rest), status: 'conflict', reason });
      return results;
    }
    await to.store.releaseDraft(draft);
    results.push({ kind: 'draft', id: idOf(draft), status: 'copied' });
  }
  return results;
}

/** A closed draft as it is claimed before its release: active, without its closing fields. */
function claimable(draft: DraftSession): DraftSession {
  const { closedAt: _closedAt, closeReason: _closeReason, ...rest } = draft;
  return { ...rest, status: 'active' };
}

async function copyRoles(from: DraftStoreSide, to: DraftStoreSide, project: string): Promise<DraftRecordMigration[]> {
  const results: DraftRecordMigration[] = [];
  const { files, errors } = await from.store.listRoleFiles(project);
  for (const role of files) {
    const id = `${project}/${role.name}.md`;
    let existing;
    try {
      existing = await to.store.readRoleFile(project, role.name);
    } catch (error) {
      // A file store's role file whose name is no id (`My Role.md`): every store refuses to write that name.
      if (!isStoreError(error, 'INVALID_ID')) throw error;
      results.push({ kind: 'role', id, status: 'failed', reason: `${error.message} Rename the file to copy it.` });
      continue;
    }
    if (existing === undefined) {
      await to.store.writeRoleFile(project, role.name, role.text);
      results.push({ kind: 'role', id, status: 'copied' });
    } else if (existing.text === role.text) {
      results.push({ kind: 'role', id, status: 'unchanged' });
    } else {
      results.push({
        kind: 'role',
        id,
        status: 'conflict',
        reason: `the target's role file (${existing.location}) has other text than the source's`,
      });
    }
  }
  for (const error of errors)
    results.push({ kind: 'role', id: `${project}/${error.location}`, status: 'failed', reason: error.message });
  return results;
}

function isStoreError<Code extends StoreErrorCode>(error: unknown, code: Code): error is StoreError & { code: Code } {
  return error instanceof StoreError && error.code === code;
}
