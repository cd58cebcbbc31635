import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { MAIN_CONVERSATION } from '../conversation/index.js';
import type { AgentBackend } from '../backends/index.js';
import {
  ApprovalDecisionSchema,
  PermissionModeSchema,
  ProjectWorkspace,
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalResolution,
  type PermissionMode,
  type WorkspaceTool,
} from '../workspace/index.js';
import { persist } from './draft-records.js';
import type { ActiveDraft, DraftServiceState } from './draft-state.js';
import { DraftError, invalidInput } from './errors.js';
import type { PermissionRequest } from '../protocol/index.js';
import type { PermissionsView } from './contract.js';
import type { ProjectLocation } from './projects.js';
import type { RoleInfo } from './types.js';

// The workspace tools of drafts and workers on managed back ends, their permission mode, and the
// approvals they ask: announced to the channel (and written into the session as a "waiting" block),
// answered by a client (`answer_permission`) or the service's approver function.

/** The wire copy of a request (protocol) and the workspace's own shape must not drift. */
type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const REQUEST_SHAPES_MATCH = true satisfies SameShape<ApprovalRequest, PermissionRequest>;

/** One ProjectWorkspace per project folder, opened on first use (its sandbox probe runs once). */
export function workspaceFor(state: DraftServiceState, project: ProjectLocation): Promise<ProjectWorkspace> {
  let workspace = state.workspaces.get(project.path);
  if (!workspace) {
    workspace = ProjectWorkspace.open({ root: project.path, dataDir: project.dataDir, sandbox: state.sandbox });
    state.workspaces.set(project.path, workspace);
    workspace.catch(() => state.workspaces.delete(project.path));
  }
  return workspace;
}

/** The mode a draft's tools run under now: the one set for the draft, else its role's, else `default`. */
export function draftMode(draft: Pick<ActiveDraft, 'session' | 'role'>): PermissionMode {
  return draft.session.permissionMode ?? draft.role.permissionMode ?? 'default';
}

/**
 * The workspace tools a role's permissions grant, for an agent on a managed back end (a native
 * one, Claude Code or the Gemini CLI, brings its own tools and permission prompts), rooted at the
 * project folder. Approvals are asked in `owner.sessionId` (a worker's in its drafting session,
 * under its own thread).
 */
export async function workspaceToolsFor(
  state: DraftServiceState,
  options: {
    sessionId: string;
    conversationId?: string;
    role: RoleInfo;
    project: ProjectLocation;
    backend: AgentBackend;
  },
): Promise<WorkspaceTool[]> {
  if (options.backend.describe().continuity !== 'managed') return [];
  if (
    !options.role.permissions.some(
      (permission) => permission === 'files-read' || permission === 'files-write' || permission === 'shell',
    )
  )
    return [];
  const workspace = await workspaceFor(state, options.project);
  const { sessionId, role } = options;
  const isDraft = options.conversationId === undefined || options.conversationId === MAIN_CONVERSATION;
  return workspace.tools({
    sessionId,
    ...(isDraft ? {} : { conversationId: options.conversationId }),
    permissions: role.permissions,
    // A draft's mode is read on every call: `set_permission_mode` applies to the next call, mid-turn too.
    mode: () => {
      const draft = isDraft ? state.bySession.get(sessionId) : undefined;
      return draft ? draftMode(draft) : (role.permissionMode ?? 'default');
    },
    broker: state.broker,
    network: role.network ?? false,
  });
}

/** Parley says once, when an agent that may run commands is drafted, that nothing confines them here. */
export async function noteMissingSandbox(state: DraftServiceState, draft: ActiveDraft): Promise<void> {
  if (!draft.role.permissions.includes('shell') || draft.backend.describe().continuity !== 'managed') return;
  const workspace = await workspaceFor(state, draft.project);
  if (workspace.sandbox.kind !== 'none') return;
  await appendInfo(
    state,
    draft.session.sessionId,
    MAIN_CONVERSATION,
    `No sandbox: ${workspace.sandbox.detail} Each command is still asked about unless the permission mode says otherwise.`,
    {
      code: 'NO_SANDBOX',
      sandbox: workspace.sandbox,
    },
  );
}

/** Announces requests and answers to the channel that owns the session, and records them in its log. */
export function wireApprovals(state: DraftServiceState): () => void {
  const stopRequested = state.broker.onRequested((request) => {
    const channelId = channelOf(state, request.sessionId);
    if (channelId !== undefined) state.emitter.emit('permission_requested', { channelId, request });
    void appendInfo(
      state,
      request.sessionId,
      request.conversationId ?? MAIN_CONVERSATION,
      `Waiting for your approval: ${request.title}`,
      {
        code: 'PERMISSION_REQUESTED',
        requestId: request.requestId,
        tool: request.tool,
        kind: request.kind,
      },
    );
  });
  const stopResolved = state.broker.onResolved((resolution: ApprovalResolution) => {
    const channelId = channelOf(state, resolution.sessionId);
    if (channelId !== undefined) state.emitter.emit('permission_resolved', { channelId, ...resolution });
    const words: Record<ApprovalDecision, string> = {
      allow_once: 'Allowed once',
      allow_always: 'Allowed always (for this session)',
      deny: 'Denied',
    };
    void appendInfo(
      state,
      resolution.sessionId,
      resolution.conversationId ?? MAIN_CONVERSATION,
      `${words[resolution.decision]}${resolution.source === 'cancelled' ? ' (the turn was cancelled)' : ''}.`,
      {
        code: 'PERMISSION_RESOLVED',
        requestId: resolution.requestId,
        decision: resolution.decision,
        source: resolution.source,
      },
    );
  });
  return () => {
    stopRequested();
    stopResolved();
  };
}

const AnswerParamsSchema = z.object({
  sessionId: z.string().min(1),
  requestId: z.string().min(1),
  decision: ApprovalDecisionSchema,
});
const ModeParamsSchema = z.object({ channelId: z.string().min(1), mode: PermissionModeSchema });

/** A client's answer to a waiting request (any client of the server may answer; the first answer wins). */
export function answerPermission(
  state: DraftServiceState,
  params: { sessionId: string; requestId: string; decision: ApprovalDecision },
): ApprovalResolution {
  const parsed = AnswerParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('answer_permission', parsed.error.issues);
  return state.broker.answer(parsed.data.requestId, parsed.data.decision, { sessionId: parsed.data.sessionId });
}

/** What a client that attaches to a channel needs to show approvals: the mode and what waits (in the channel, or `all`). */
export async function getPermissions(
  state: DraftServiceState,
  params: { channelId: string; all?: boolean },
): Promise<PermissionsView> {
  const draft = state.drafts.get(params.channelId);
  const requests = state.broker
    .pending()
    .filter((request) => params.all === true || channelOf(state, request.sessionId) === params.channelId);
  if (!draft) return { requests };
  const workspace = await workspaceFor(state, draft.project).catch(() => undefined);
  return {
    sessionId: draft.session.sessionId,
    mode: draftMode(draft),
    ...(workspace ? { sandbox: workspace.sandbox } : {}),
    requests,
  };
}

/** Changes the channel's draft's permission mode; kept in draft.json, applied from the next tool call. */
export async function setPermissionMode(
  state: DraftServiceState,
  params: { channelId: string; mode: PermissionMode },
): Promise<{ sessionId: string; mode: PermissionMode; previous: PermissionMode }> {
  const parsed = ModeParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('set_permission_mode', parsed.error.issues);
  const draft = state.drafts.get(parsed.data.channelId);
  if (!draft) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `Channel "${parsed.data.channelId}" has no active draft, so there is no permission mode to set. Draft an agent first (/draft <role>).`,
      {
        fault: 'user',
        data: { channelId: parsed.data.channelId },
      },
    );
  }
  const previous = draftMode(draft);
  draft.session = { ...draft.session, permissionMode: parsed.data.mode };
  await persist(state, draft);
  await appendInfo(
    state,
    draft.session.sessionId,
    MAIN_CONVERSATION,
    `Permission mode: ${parsed.data.mode} (was ${previous}).`,
    { code: 'PERMISSION_MODE', mode: parsed.data.mode, previous },
  );
  return { sessionId: draft.session.sessionId, mode: parsed.data.mode, previous };
}

function channelOf(state: DraftServiceState, sessionId: string): string | undefined {
  return state.bySession.get(sessionId)?.session.channelId ?? state.dispatches.get(sessionId);
}

async function appendInfo(
  state: DraftServiceState,
  sessionId: string,
  conversationId: string,
  content: string,
  data: Record<string, unknown>,
): Promise<void> {
  const now = state.clock();
  await state.manager
    .appendEvents(sessionId, [
      {
        type: 'block_complete',
        conversationId,
        at: now,
        block: { id: randomUUID(), type: 'system', subtype: 'info', content, createdAt: now, completedAt: now, data },
      },
    ])
    .catch((error: unknown) =>
      process.emitWarning(`Parley: could not record a permission notice in session ${sessionId}: ${String(error)}`),
    );
}
