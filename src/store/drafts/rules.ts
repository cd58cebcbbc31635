import { ValidationError } from '../../conversation/index.js';
import { DraftSessionSchema, type DraftSession } from './records.js';
import { StoreError } from '../errors.js';
import { checkId, checkRecord } from '../validate.js';

// What every DraftStore checks the same way: draft records, the claim's rule, and its errors.

/** A draft record to write, validated and copied; `status` must be the one the call expects. */
export function checkDraft(draft: unknown, status: DraftSession['status'], call: string): DraftSession {
  if (typeof draft === 'object' && draft !== null) {
    const { project, taskSlug } = draft as { project?: unknown; taskSlug?: unknown };
    checkId(project, 'project');
    checkId(taskSlug, 'task slug');
  }
  const record = checkRecord(DraftSessionSchema, draft, 'draft');
  if (record.status !== status) {
    throw new ValidationError(
      `${call} takes a draft with status "${status}"; draft "${record.sessionId}" has status "${record.status}".`,
      {
        data: { sessionId: record.sessionId, status: record.status },
      },
    );
  }
  return record;
}

/**
 * The claim's rule: `claim` may become active unless an active draft already holds its channel or
 * its task. `active` is every active draft of the store.
 */
export function claimConflict(claim: DraftSession, active: Iterable<DraftSession>): StoreError | undefined {
  for (const held of active) {
    if (held.channelId === claim.channelId) {
      return draftAlreadyActive(
        held,
        `Channel "${claim.channelId}" already has an active draft (${held.role} on task "${held.taskSlug}" of project "${held.project}"); undraft it first.`,
      );
    }
    if (held.project === claim.project && held.taskSlug === claim.taskSlug) {
      return draftAlreadyActive(
        held,
        `Task "${claim.taskSlug}" of project "${claim.project}" already has an active draft (${held.role}) on channel "${held.channelId}"; undraft it there first.`,
      );
    }
  }
  return undefined;
}

function draftAlreadyActive(held: DraftSession, message: string): StoreError {
  return new StoreError('DRAFT_ALREADY_ACTIVE', message, {
    fault: 'user',
    data: { channelId: held.channelId, sessionId: held.sessionId, project: held.project, task: held.taskSlug },
  });
}

/** An update or release must name its task's current draft, and cannot move it to another channel. */
export function checkSameDraft(next: DraftSession, current: DraftSession | undefined, mustBeActive: boolean): void {
  if (current === undefined || current.sessionId !== next.sessionId || (mustBeActive && current.status !== 'active')) {
    throw new StoreError(
      'DRAFT_NOT_FOUND',
      `Draft "${next.sessionId}" is not the ${mustBeActive ? 'active' : 'current'} draft of task "${next.taskSlug}" of project "${next.project}"` +
        `${current ? ` (that is "${current.sessionId}", ${current.status})` : ' (it has none)'}; draft the task again.`,
      { fault: 'user', data: { sessionId: next.sessionId, project: next.project, task: next.taskSlug } },
    );
  }
  if (current.channelId !== next.channelId) {
    throw new ValidationError(
      `Draft "${next.sessionId}" is on channel "${current.channelId}"; a draft cannot move to channel "${next.channelId}".`,
      {
        data: { sessionId: next.sessionId },
      },
    );
  }
}

export function projectNotFound(name: string): StoreError {
  return new StoreError(
    'PROJECT_NOT_FOUND',
    `No project "${name}" in this store. List projects to see the names that exist, or create it.`,
    {
      fault: 'user',
      data: { project: name },
    },
  );
}

export function projectExists(name: string): StoreError {
  return new StoreError('PROJECT_EXISTS', `A project named "${name}" already exists; choose another name.`, {
    fault: 'user',
    data: { project: name },
  });
}

export function taskNotFound(project: string, slug: string): StoreError {
  return new StoreError(
    'TASK_NOT_FOUND',
    `No task "${slug}" in project "${project}". List its tasks, or create this one first.`,
    {
      fault: 'user',
      data: { project, task: slug },
    },
  );
}

export function taskExists(project: string, slug: string): StoreError {
  return new StoreError('TASK_EXISTS', `Project "${project}" already has a task "${slug}"; choose another slug.`, {
    fault: 'user',
    data: { project, task: slug },
  });
}

/** Closed drafts oldest first: by start, then by session id so the order is total. */
export function byStart(a: DraftSession, b: DraftSession): number {
  return Date.parse(a.startedAt) - Date.parse(b.startedAt) || a.sessionId.localeCompare(b.sessionId);
}
