import { isParleyError, ParleyError, taskTitleFromMessage } from '../conversation/index.js';
import { openDraft } from './draft-lifecycle.js';
import { takeOver } from './draft-recovery.js';
import type { ActiveDraft, DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';
import type { ProjectLocation } from './projects.js';
import type { DraftingErrorData } from '../protocol/index.js';
import type { SubmitResult } from './types.js';

// A UI's first message: `submit_prompt { draft }` on a channel with no draft drafts the project's
// default role (or the one given) into the task given, or into a new task titled after the message,
// then starts the turn. The terminal, the browser and any other client get one behaviour and one
// set of error texts from here.

export interface FirstPromptParams {
  channelId: string;
  content: string;
  draft: { project: string; role?: string; task?: string };
}

/**
 * Drafts for the first prompt unless the channel has a draft by now, then `send`s the prompt to
 * the draft. First prompts on one channel run one after another: a second that arrives while the
 * first is drafting waits for it and goes to the draft it made, so two never make two drafts.
 */
export function submitFirstPrompt(
  state: DraftServiceState,
  params: FirstPromptParams,
  send: (draft: ActiveDraft) => Promise<SubmitResult>,
): Promise<SubmitResult> {
  const { channelId } = params;
  const earlier = state.firstPrompts.get(channelId) ?? Promise.resolve();
  const mine = earlier.then(() => draftThenSend(state, params, send));
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  state.firstPrompts.set(channelId, settled);
  void settled.then(() => {
    if (state.firstPrompts.get(channelId) === settled) state.firstPrompts.delete(channelId);
  });
  return mine;
}

async function draftThenSend(
  state: DraftServiceState,
  params: FirstPromptParams,
  send: (draft: ActiveDraft) => Promise<SubmitResult>,
): Promise<SubmitResult> {
  const { channelId, content } = params;
  const existing = state.drafts.get(channelId) ?? (await takeOver(state, channelId));
  if (existing) return send(existing);
  const drafting: DraftingErrorData = { step: 'project', project: params.draft.project, createdTask: false };
  let project: ProjectLocation;
  try {
    project = await state.catalog.resolve(params.draft.project);
  } catch (error) {
    throw stepFailed(error, drafting, 'Could not draft an agent for your message');
  }
  const role = params.draft.role ?? project.defaultRole;
  drafting.role = role;
  let taskSlug = params.draft.task;
  if (taskSlug === undefined) {
    drafting.step = 'task';
    try {
      taskSlug = (await state.catalog.createTask(project, { title: taskTitleFromMessage(content) })).slug;
    } catch (error) {
      throw stepFailed(error, drafting, 'Could not create a task for your message');
    }
    drafting.createdTask = true;
  }
  drafting.taskSlug = taskSlug;
  drafting.step = 'draft';
  let draft: ActiveDraft | undefined;
  try {
    await openDraft(state, { channelId, role, project: project.name, task: taskSlug });
    draft = state.drafts.get(channelId);
    if (!draft)
      throw new DraftError(
        'NO_ACTIVE_DRAFT',
        `The draft on channel "${channelId}" was closed as soon as it was made.`,
        {
          fault: 'user',
          data: { channelId },
        },
      );
  } catch (error) {
    throw stepFailed(
      error,
      drafting,
      drafting.createdTask
        ? `Created task ${taskSlug}, but could not draft ${role} on it`
        : `Could not draft ${role} on task ${taskSlug}`,
    );
  }
  drafting.step = 'submit';
  drafting.sessionId = draft.session.sessionId;
  let result: SubmitResult;
  try {
    result = await send(draft);
  } catch (error) {
    throw stepFailed(error, drafting, `Drafted ${role} on task ${taskSlug}, but your message could not be sent`);
  }
  if (result.mode !== 'draft') return result;
  return { ...result, drafted: { role, project: project.name, taskSlug, createdTask: drafting.createdTask } };
}

/**
 * A step's failure keeps its code (a client matches on it as before) with a message that names the
 * step, and `data.drafting` saying what was made. Anything but a typed error is a fault of the
 * server: it goes on as it is, to be logged.
 */
function stepFailed(error: unknown, drafting: DraftingErrorData, what: string): unknown {
  if (!isParleyError(error)) return error;
  const notSent = drafting.step === 'submit' ? '' : ' Your message was not sent.';
  return new ParleyError(error.code, `${what}: ${withStop(error.message)}${notSent}`, {
    fault: error.fault,
    data: { ...error.data, drafting: { ...drafting } },
    cause: error,
  });
}

function withStop(message: string): string {
  return /[.!?)]$/.test(message.trim()) ? message.trim() : `${message.trim()}.`;
}
