import { noteFromUser } from './conversations.js';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { MAIN_CONVERSATION, type StreamEvent } from '../conversation/index.js';
import type { AgentBackend } from '../backends/index.js';
import type { BackendInfo, GoalStatus } from '../protocol/index.js';
import { TypedEmitter } from '../sessions/index.js';
import { MAX_LEASE_TTL_MS } from '../store/index.js';
import type {
  DraftService,
  DraftServiceEvents,
  DraftServiceOptions,
  PermissionsView,
  SubmitOptions,
  SubmitParams,
} from './contract.js';
import { registryBackends } from './draft-backends.js';
import * as catalog from './draft-catalog.js';
import * as lifecycle from './draft-lifecycle.js';
import { DEFAULT_LEASE_TTL_MS, defaultLeaseOwner, releaseLease } from './draft-lease.js';
import { persist, refreshFromLog, workerEnded } from './draft-records.js';
import { recover, undraftAnywhere } from './draft-recovery.js';
import { createConversationsState, type DraftServiceState } from './draft-state.js';
import { listBackends } from './backend-list.js';
import { emitStatus, getDraftStatus } from './draft-status.js';
import { DraftError } from './errors.js';
import * as tools from './draft-tools.js';
import * as turns from './draft-turns.js';
import * as goals from './goals.js';
import { goalOf } from './goal-state.js';
import * as permissions from './draft-permissions.js';
import { AgentPool, WorkerSlots } from './pool.js';
import {
  ApprovalBroker,
  type ApprovalDecision,
  type ApprovalResolution,
  type PermissionMode,
} from '../workspace/index.js';
import { ProjectCatalog } from './projects.js';
import type { AgentInfo, DraftStatus, DraftSummary, ProjectInfo, RoleInfo, SubmitResult, TaskInfo } from './types.js';
import { Workers } from './workers.js';

const DEFAULT_MAX_WORKERS = 2;

function checkLeaseOwner(owner: unknown): string {
  if (typeof owner === 'string' && owner.trim() !== '' && owner.length <= 200) return owner;
  throw new DraftError(
    'INVALID_INPUT',
    `leaseOwner must be a non-empty name of at most 200 characters; got ${JSON.stringify(owner)}.`,
    { fault: 'user' },
  );
}

function checkLeaseTtl(ttlMs: unknown): number {
  if (typeof ttlMs === 'number' && Number.isInteger(ttlMs) && ttlMs >= 0 && ttlMs <= MAX_LEASE_TTL_MS) return ttlMs;
  throw new DraftError(
    'INVALID_INPUT',
    `leaseTtlMs must be a whole number of milliseconds from 0 to ${MAX_LEASE_TTL_MS}; got ${JSON.stringify(ttlMs)}.`,
    { fault: 'user' },
  );
}
const DEFAULT_AWAIT_TIMEOUT_MS = 300_000;

/** Opens the draft layer over a SessionManager and a project folder. */
export async function createDraftService(options: DraftServiceOptions): Promise<DraftService> {
  const backendFor =
    options.backendFor ??
    (await registryBackends(options.projectRoot, options.dataDir ?? path.join(options.projectRoot, '.parley')));
  return new DraftServiceImpl({ ...options, backendFor });
}

/**
 * The DraftService: it holds the shared state and wires the session manager's and the workers'
 * events to it; each call is carried out by the module of its part (catalog, lifecycle, status,
 * turns, tools and dispatch, recovery).
 */
class DraftServiceImpl implements DraftService {
  private readonly state: DraftServiceState;
  private readonly unsubscribe: Array<() => void> = [];
  /** The default file DraftStore is the service's to close; one passed in is the caller's. */
  private readonly ownsStore: boolean;

  private readonly backendNames: string[] | undefined;

  constructor(options: DraftServiceOptions & { backendFor: (name?: string, model?: string) => AgentBackend }) {
    this.backendNames = options.backendNames;
    const clock = options.clock ?? Date.now;
    this.ownsStore = options.draftStore === undefined;
    const emitter = new TypedEmitter<DraftServiceEvents>((error) => {
      process.emitWarning(`A draft event handler threw: ${String(error)}`);
    });
    const pool = new AgentPool();
    const workers = new Workers({
      manager: options.manager,
      pool,
      slots: new WorkerSlots(options.maxConcurrentWorkers ?? DEFAULT_MAX_WORKERS),
      clock,
      onStatus: (agent) => {
        if (agent.channelId) emitter.emit('agent_status', { channelId: agent.channelId, agent });
        if (agent.endedAt !== undefined && agent.parentSessionId !== undefined)
          workerEnded(this.state, agent.parentSessionId);
      },
    });
    this.state = {
      manager: options.manager,
      clock,
      catalog: new ProjectCatalog({
        projectRoot: options.projectRoot,
        dataDir: options.dataDir ?? path.join(options.projectRoot, '.parley'),
        clock,
        ...(options.draftStore ? { store: options.draftStore } : {}),
      }),
      backendFor: options.backendFor,
      emitter,
      pool,
      workers,
      drafts: new Map(),
      bySession: new Map(),
      claims: new Set(),
      taskClaims: new Set(),
      dispatches: new Map(),
      firstPrompts: new Map(),
      takeovers: new Map(),
      defaultAwaitTimeoutMs: options.defaultAwaitTimeoutMs ?? DEFAULT_AWAIT_TIMEOUT_MS,
      broker: new ApprovalBroker(options.approver ? { approver: options.approver, clock } : { clock }),
      workspaces: new Map(),
      sandbox: options.sandbox ?? 'auto',
      conversations: createConversationsState(),
      leaseOwner: checkLeaseOwner(options.leaseOwner ?? defaultLeaseOwner()),
      leaseTtlMs: checkLeaseTtl(options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS),
      closed: false,
    };
    this.unsubscribe.push(
      permissions.wireApprovals(this.state),
      options.manager.on('session:event', ({ sessionId, event }) => this.forward(sessionId, event)),
      options.manager.on('session:compaction-complete', ({ sessionId, trigger, tokensBefore }) => {
        const draft = this.state.bySession.get(sessionId);
        if (draft)
          emitter.emit('context_compacted', {
            channelId: draft.session.channelId,
            sessionId,
            preTokens: tokensBefore,
            trigger,
          });
      }),
      // A rewind or a branch switch: the draft's turns and cost are the active branch's now.
      options.manager.on('session:history-changed', ({ sessionId }) => {
        const draft = this.state.bySession.get(sessionId);
        if (!draft) return;
        void refreshFromLog(this.state, draft)
          .then(() => persist(this.state, draft))
          .then(
            () => emitStatus(this.state, draft),
            (error: unknown) =>
              process.emitWarning(
                `Parley: could not read draft ${sessionId} again after its history changed: ${String(error)}`,
              ),
          );
      }),
    );
  }

  on<K extends keyof DraftServiceEvents>(name: K, handler: (payload: DraftServiceEvents[K]) => void): () => void {
    return this.state.emitter.on(name, handler);
  }

  /** Every event stored in a draft's (or a dispatch's) session goes to its channel, in `seq` order. */
  private forward(sessionId: string, event: StreamEvent): void {
    const draft = this.state.bySession.get(sessionId);
    // Clients show the turn as over from this event on: a prompt sent now waits for the turn to save its state.
    if (
      draft?.turn &&
      event.type === 'metadata_update' &&
      event.conversationId === MAIN_CONVERSATION &&
      event.metadata.turnComplete &&
      event.metadata.stopReason !== 'error'
    ) {
      draft.turn.settling = true;
    }
    const channelId = draft?.session.channelId ?? this.state.dispatches.get(sessionId);
    if (channelId !== undefined) this.state.emitter.emit('channel_message', { channelId, sessionId, event });
  }

  // ---- projects, tasks, roles (draft-catalog.ts) ------------------------------------------------

  listProjects(): Promise<ProjectInfo[]> {
    return catalog.listProjects(this.state);
  }

  createProject(params: { name: string; path?: string; description?: string }): Promise<ProjectInfo> {
    return catalog.createProject(this.state, params);
  }

  listTasks(params: { project: string }): Promise<TaskInfo[]> {
    return catalog.listTasks(this.state, params);
  }

  createTask(params: { project: string; title: string; description?: string; slug?: string }): Promise<TaskInfo> {
    return catalog.createTask(this.state, params);
  }

  listRoles(params: {
    project?: string;
  }): Promise<{ roles: RoleInfo[]; errors: Array<{ file: string; field?: string; message: string }> }> {
    return catalog.listRoles(this.state, params);
  }

  // ---- drafts (draft-lifecycle.ts, draft-status.ts) ---------------------------------------------

  draft(params: {
    channelId: string;
    role: string;
    project: string;
    task: string;
    /** Go on in this session (a fork of the task's draft) instead of starting a new one. */
    session?: string;
  }): Promise<{ sessionId: string; taskSlug: string; project: string }> {
    return lifecycle.openDraft(this.state, params);
  }

  undraft(params: { channelId: string }): Promise<DraftSummary> {
    return undraftAnywhere(this.state, params);
  }

  getDraftStatus(params: { channelId: string }): Promise<{ active: boolean; session?: DraftStatus }> {
    return getDraftStatus(this.state, params);
  }

  listBackends(): BackendInfo[] {
    return listBackends(this.state.backendFor, this.backendNames);
  }

  /** The session of the channel's draft; NO_ACTIVE_DRAFT without one. */
  draftSessionId(channelId: string): string {
    return lifecycle.requireDraft(this.state, channelId).session.sessionId;
  }

  /** The channel whose draft (or dispatch) runs the session here, if one does. */
  channelOfSession(sessionId: string): string | undefined {
    return this.state.bySession.get(sessionId)?.session.channelId ?? this.state.dispatches.get(sessionId);
  }

  // ---- turns (draft-turns.ts) -------------------------------------------------------------------

  submitPrompt(params: SubmitParams, options: SubmitOptions = {}): Promise<SubmitResult> {
    return turns.submitPrompt(this.state, params, options);
  }

  cancel(params: { channelId: string }): Promise<{ cancelled: boolean }> {
    return turns.cancel(this.state, params);
  }

  settled(params: { channelId: string }): Promise<void> {
    return turns.settled(this.state, params);
  }

  // ---- workers and tools (draft-tools.ts) -------------------------------------------------------

  listAgents(params: { channelId?: string }): Promise<AgentInfo[]> {
    return tools.listAgents(this.state, params);
  }

  killAgent(params: { agentId: string }): Promise<{ killed: boolean }> {
    return tools.killAgent(this.state, params);
  }

  sayInConversation(params: {
    conversationId: string;
    message: string;
  }): Promise<{ conversationId: string; delivered: 'next_message' }> {
    return noteFromUser(this.state, this.state.conversations, params.conversationId, params.message);
  }

  createMcpServer(params: { channelId: string }): Promise<McpServer> {
    return tools.createMcpServer(this.state, params);
  }

  // ---- approvals (draft-permissions.ts) ----------------------------------------------------------

  answerPermission(params: {
    sessionId: string;
    requestId: string;
    decision: ApprovalDecision;
  }): Promise<ApprovalResolution> {
    return Promise.resolve().then(() => permissions.answerPermission(this.state, params));
  }

  getPermissions(params: { channelId: string; all?: boolean }): Promise<PermissionsView> {
    return permissions.getPermissions(this.state, params);
  }

  setPermissionMode(params: {
    channelId: string;
    mode: PermissionMode;
  }): Promise<{ sessionId: string; mode: PermissionMode; previous: PermissionMode }> {
    return permissions.setPermissionMode(this.state, params);
  }

  // ---- goals (goals.ts) ---------------------------------------------------------------------------

  private readonly startGoalTurn: goals.StartTurn = async (draft, content) =>
    (await turns.startDraftTurn(this.state, draft, content)).turn;

  setGoal(params: goals.SetGoalParams): Promise<GoalStatus> {
    return goals.setGoal(this.state, params, this.startGoalTurn);
  }

  stopGoal(params: { channelId: string }): Promise<GoalStatus> {
    return goals.stopGoal(this.state, params);
  }

  getGoal(params: { channelId: string }): Promise<GoalStatus | undefined> {
    const draft = this.state.drafts.get(params.channelId);
    return Promise.resolve(draft ? goalOf(this.state, draft.session.sessionId) : undefined);
  }

  goalSettled(params: { channelId: string }): Promise<GoalStatus | undefined> {
    return goals.goalSettled(this.state, params.channelId);
  }

  // ---- recovery and shutdown --------------------------------------------------------------------

  async recover(): Promise<{ recovered: number; failed: Array<{ sessionId: string; reason: string }> }> {
    const result = await recover(this.state);
    await goals.resumeGoals(this.state, this.startGoalTurn).catch((error: unknown) => {
      process.emitWarning(`Goals could not be resumed: ${String(error)}`);
    });
    return result;
  }

  async close(): Promise<void> {
    const state = this.state;
    if (state.closed) return;
    state.closed = true;
    const drafts = [...state.drafts.values()];
    for (const draft of drafts) draft.turn?.controller.abort();
    await Promise.all(drafts.map((draft) => draft.turn?.done));
    await state.workers.killAll(() => true);
    // Drafts stay active in the store: `recover` picks them up at the next start. Their leases end
    // now, so another server sharing the store may take them over at their next prompt.
    await Promise.all(drafts.map((draft) => draft.writes));
    await Promise.all(drafts.map((draft) => releaseLease(state, draft).catch(() => undefined)));
    for (const stop of this.unsubscribe.splice(0)) stop();
    state.drafts.clear();
    state.bySession.clear();
    if (this.ownsStore) await state.catalog.store.close();
  }
}
