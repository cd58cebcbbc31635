import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type SessionMetrics,
  type StreamEvent,
} from '../conversation/index.js';
import { createBackend, resolveBackendConfig, type AgentBackend, type AgentProfile, type ResolvedBackendConfig } from '../backends/index.js';
import { closeInterruptedTurn, runTurn, TypedEmitter, type SessionManager } from '../sessions/index.js';
import { FORMAT_VERSION, IdSchema } from '../store/index.js';
import type { DraftService, DraftServiceEvents, DraftServiceOptions } from './contract.js';
import { DraftError, invalidInput } from './errors.js';
import { createDraftMcpServer } from './mcp-server.js';
import { AgentPool, WorkerSlots } from './pool.js';
import { ProjectCatalog, type ProjectLocation } from './projects.js';
import { loadRoles, type LoadedRoles } from './roles.js';
import { compileOutputSchema, type OutputValidator } from './structured-output.js';
import { createParleyTools, type ParleyTool, type ToolHandlers } from './tools.js';
import type {
  AgentInfo,
  DispatchResult,
  DraftSession,
  DraftStatus,
  DraftSummary,
  ProjectInfo,
  RoleInfo,
  SubmitResult,
  TaskInfo,
} from './types.js';
import { Workers } from './workers.js';

/** The output schema of `submit_prompt` without a draft (seed 000's "parsed AgentResult"). */
export const DEFAULT_DISPATCH_OUTPUT_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['done', 'partial', 'blocked', 'failed'], description: 'How far the task got.' },
    summary: { type: 'string', description: 'What was done and what was found, for the person who asked.' },
    details: { type: 'string', description: 'Anything longer: files changed, steps to reproduce, open questions.' },
  },
  required: ['status', 'summary'],
};

const DEFAULT_MAX_WORKERS = 2;
const DEFAULT_AWAIT_TIMEOUT_MS = 300_000;
/** Back-end failure codes that mean "this native session cannot be resumed". */
const RESUME_FAILURE_CODES = new Set(['RESUME_FAILED', 'NATIVE_RESUME_FAILED']);

const ChannelSchema = z.string().min(1).max(200);
const DraftParamsSchema = z.object({ channelId: ChannelSchema, role: IdSchema, project: IdSchema, task: IdSchema });
const ChannelParamsSchema = z.object({ channelId: ChannelSchema });
const SubmitParamsSchema = z.object({
  channelId: ChannelSchema,
  content: z.string().min(1),
  role: IdSchema.optional(),
  taskSlug: IdSchema.optional(),
});

interface RunningTurn {
  controller: AbortController;
  done: Promise<void>;
}

/** A draft in memory: its persisted DraftSession plus what a turn needs. */
interface ActiveDraft {
  session: DraftSession;
  project: ProjectLocation;
  role: RoleInfo;
  backend: AgentBackend;
  turn?: RunningTurn;
  /** draft.json writes, one at a time, in order. */
  writes: Promise<unknown>;
  /** closeDraft has begun: no more status pushes or turns. */
  closing?: boolean;
}

/** Opens the draft layer over a SessionManager and a project folder. */
export async function createDraftService(options: DraftServiceOptions): Promise<DraftService> {
  const backendFor = options.backendFor ?? (await registryBackends(options.projectRoot, options.dataDir ?? path.join(options.projectRoot, '.parley')));
  return new DraftServiceImpl({ ...options, backendFor });
}

/**
 * The default `backendFor`: the back-end registry resolved from the environment and the project's
 * `parley.config.json` (the scripted back end when nothing is configured). A role without `backend`
 * gets the configured default; one instance per back end and model. A configuration that cannot be
 * read does not stop the service: drafting then fails with the configuration's own error.
 */
async function registryBackends(projectRoot: string, dataDir: string): Promise<(name?: string, model?: string) => AgentBackend> {
  let config: ResolvedBackendConfig | undefined;
  let problem: unknown;
  try {
    config = await resolveBackendConfig({ projectDir: projectRoot, dataDir });
  } catch (error) {
    problem = error;
  }
  const instances = new Map<string, AgentBackend>();
  return (name, model) => {
    if (!config) throw problem instanceof Error ? problem : new Error(String(problem));
    const backend = name ?? config.backend;
    const chosenModel = model ?? (name === undefined ? config.model : undefined);
    const key = `${backend}\u0000${chosenModel ?? ''}`;
    let instance = instances.get(key);
    if (!instance) {
      instance = createBackend(backend, config, chosenModel ? { model: chosenModel } : {});
      instances.set(key, instance);
    }
    return instance;
  };
}

class DraftServiceImpl implements DraftService {
  private readonly manager: SessionManager;
  private readonly clock: () => number;
  private readonly catalog: ProjectCatalog;
  private readonly backendFor: (name?: string, model?: string) => AgentBackend;
  private readonly emitter = new TypedEmitter<DraftServiceEvents>((error) => {
    process.emitWarning(`A draft event handler threw: ${String(error)}`);
  });
  private readonly pool = new AgentPool();
  private readonly workers: Workers;
  private readonly drafts = new Map<string, ActiveDraft>();
  private readonly bySession = new Map<string, ActiveDraft>();
  /** Channels with a `draft` call in flight: a second one is refused, not raced. */
  private readonly claims = new Set<string>();
  /** Tasks with a `draft` call in flight (data folder + slug). */
  private readonly taskClaims = new Set<string>();
  /** Sessions of autonomous dispatches, by session id → channel. */
  private readonly dispatches = new Map<string, string>();
  private readonly unsubscribe: Array<() => void> = [];
  private readonly defaultAwaitTimeoutMs: number;
  private closed = false;

  constructor(options: DraftServiceOptions & { backendFor: (name?: string, model?: string) => AgentBackend }) {
    this.manager = options.manager;
    this.clock = options.clock ?? Date.now;
    this.catalog = new ProjectCatalog({
      projectRoot: options.projectRoot,
      dataDir: options.dataDir ?? path.join(options.projectRoot, '.parley'),
      clock: this.clock,
    });
    this.backendFor = options.backendFor;
    this.defaultAwaitTimeoutMs = options.defaultAwaitTimeoutMs ?? DEFAULT_AWAIT_TIMEOUT_MS;
    this.workers = new Workers({
      manager: this.manager,
      pool: this.pool,
      slots: new WorkerSlots(options.maxConcurrentWorkers ?? DEFAULT_MAX_WORKERS),
      clock: this.clock,
      onStatus: (agent) => {
        if (agent.channelId) this.emitter.emit('agent_status', { channelId: agent.channelId, agent });
        if (agent.endedAt !== undefined && agent.parentSessionId !== undefined) this.workerEnded(agent.parentSessionId);
      },
    });
    this.unsubscribe.push(
      this.manager.on('session:event', ({ sessionId, event }) => this.forward(sessionId, event)),
      this.manager.on('session:compaction-complete', ({ sessionId, trigger, tokensBefore }) => {
        const draft = this.bySession.get(sessionId);
        if (draft) this.emitter.emit('context_compacted', { channelId: draft.session.channelId, sessionId, preTokens: tokensBefore, trigger });
      }),
    );
  }

  on<K extends keyof DraftServiceEvents>(name: K, handler: (payload: DraftServiceEvents[K]) => void): () => void {
    return this.emitter.on(name, handler);
  }

  private iso(at = this.clock()): string {
    return new Date(at).toISOString();
  }

  private assertOpen(): void {
    if (this.closed) throw new DraftError('SERVICE_CLOSED', 'The draft service is closed; start the server again.', { fault: 'user' });
  }

  /** Every event stored in a draft's (or a dispatch's) session goes to its channel, in `seq` order. */
  private forward(sessionId: string, event: StreamEvent): void {
    const channelId = this.bySession.get(sessionId)?.session.channelId ?? this.dispatches.get(sessionId);
    if (channelId !== undefined) this.emitter.emit('channel_message', { channelId, sessionId, event });
  }

  // ---- projects, tasks, roles -------------------------------------------------------------------

  async listProjects(): Promise<ProjectInfo[]> {
    return (await this.catalog.list()).map(projectInfo);
  }

  async createProject(params: { name: string; path?: string; description?: string }): Promise<ProjectInfo> {
    this.assertOpen();
    return projectInfo(await this.catalog.create(params));
  }

  async listTasks(params: { project: string }): Promise<TaskInfo[]> {
    return this.catalog.listTasks(await this.catalog.resolve(params.project));
  }

  async createTask(params: { project: string; title: string; description?: string; slug?: string }): Promise<TaskInfo> {
    this.assertOpen();
    if (typeof params.title !== 'string' || params.title.trim() === '') {
      throw new DraftError('INVALID_INPUT', 'A task needs a title.', { fault: 'user' });
    }
    const project = await this.catalog.resolve(params.project);
    return this.catalog.createTask(project, {
      title: params.title,
      ...(params.description !== undefined ? { description: params.description } : {}),
      ...(params.slug !== undefined ? { slug: params.slug } : {}),
    });
  }

  async listRoles(params: { project?: string }): Promise<{ roles: RoleInfo[]; errors: Array<{ file: string; field?: string; message: string }> }> {
    const project = params.project === undefined ? await this.catalog.current() : await this.catalog.resolve(params.project);
    return loadRoles(this.catalog.rolesDir(project));
  }

  /** The role, or NOT_FOUND listing the roles, or INVALID_INPUT naming the malformed file and field. */
  private async resolveRole(project: ProjectLocation, name: string, loaded?: LoadedRoles): Promise<RoleInfo> {
    const { roles, errors } = loaded ?? (await loadRoles(this.catalog.rolesDir(project)));
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
      throw new DraftError('NOT_FOUND', `No role "${name}". Roles: ${roles.map((entry) => entry.name).join(', ')}.`, { fault: 'user', data: { role: name } });
    }
    return role;
  }

  private resolveBackend(backendName: string | undefined, model: string | undefined, role: string): AgentBackend {
    try {
      return this.backendFor(backendName, model);
    } catch (error) {
      throw new DraftError(
        'INVALID_INPUT',
        `Role "${role}" asks for back end "${backendName ?? '(default)'}"${model ? ` with model "${model}"` : ''}, which is not available: ${error instanceof Error ? error.message : String(error)}`,
        { fault: 'user', cause: error, data: { role, ...(backendName ? { backend: backendName } : {}) } },
      );
    }
  }

  // ---- drafts -----------------------------------------------------------------------------------

  async draft(params: { channelId: string; role: string; project: string; task: string }): Promise<{ sessionId: string; taskSlug: string; project: string }> {
    this.assertOpen();
    const parsed = DraftParamsSchema.safeParse(params);
    if (!parsed.success) throw invalidInput('draft', parsed.error.issues);
    const { channelId } = parsed.data;
    const existing = this.drafts.get(channelId);
    if (existing || this.claims.has(channelId)) {
      throw new DraftError(
        'DRAFT_ALREADY_ACTIVE',
        existing
          ? `Channel "${channelId}" already has a draft (${existing.session.role} on task "${existing.session.taskSlug}"); undraft it first.`
          : `Channel "${channelId}" is drafting an agent right now; wait for it, then undraft it first.`,
        { fault: 'user', data: { channelId, ...(existing ? { sessionId: existing.session.sessionId } : {}) } },
      );
    }
    this.claims.add(channelId);
    let taskClaim: string | undefined;
    try {
      const project = await this.catalog.resolve(parsed.data.project);
      const task = await this.catalog.getTask(project, parsed.data.task);
      // One draft per task: a concurrent draft of the same task from another channel waits for nothing, it is refused.
      const claim = `${project.dataDir}\u0000${task.slug}`;
      if (this.taskClaims.has(claim)) {
        throw new DraftError('DRAFT_ALREADY_ACTIVE', `Task "${task.slug}" is being drafted on another channel right now.`, {
          fault: 'user',
          data: { task: task.slug },
        });
      }
      this.taskClaims.add(claim);
      taskClaim = claim;
      const previous = await this.catalog.readDraft(project, task.slug);
      if (previous?.status === 'active') {
        throw new DraftError(
          'DRAFT_ALREADY_ACTIVE',
          `Task "${task.slug}" already has an active draft (${previous.role}) on channel "${previous.channelId}"; undraft it there first.`,
          { fault: 'user', data: { channelId: previous.channelId, sessionId: previous.sessionId, task: task.slug } },
        );
      }
      const role = await this.resolveRole(project, parsed.data.role);
      const backend = this.resolveBackend(role.backend, role.model, role.name);
      const description = backend.describe();
      const sessionId = randomUUID();
      await this.manager.createSession({
        sessionId,
        scope: { kind: 'draft', role: role.name, project: project.name, taskSlug: task.slug, channelId },
        agentType: role.name,
        backend: description.name,
        title: `${role.name}: ${task.title}`,
      });
      await this.writeAgentDescription(sessionId, role);
      if (previous) await this.catalog.archiveDraft(project, previous);
      const now = this.iso();
      const model = role.model ?? description.defaultModel;
      const window = description.models.find((entry) => entry.id === model);
      const session: DraftSession = {
        formatVersion: 1,
        sessionId,
        role: role.name,
        taskSlug: task.slug,
        taskDir: task.taskDir,
        channelId,
        startedAt: now,
        lastActivityAt: now,
        turnCount: 0,
        status: 'active',
        cumulativeCostUsd: 0,
        lastInputTokens: 0,
        lastOutputTokens: 0,
        contextWindow: window?.contextWindow ?? 0,
        maxOutputTokens: window?.maxOutputTokens ?? 0,
        project: project.name,
        backend: description.name,
        continuity: description.continuity,
        nativeStarted: false,
        costUnknown: false,
        ...(model ? { model } : {}),
      };
      await this.catalog.writeDraft(project, session);
      this.activate({ session, project, role, backend, writes: Promise.resolve() });
      return { sessionId, taskSlug: task.slug, project: project.name };
    } finally {
      this.claims.delete(channelId);
      if (taskClaim !== undefined) this.taskClaims.delete(taskClaim);
    }
  }

  /**
   * Seed 002's agent description, so managed request building opens with the role: the role file's
   * body is its "# Your Role" text as written (Markdown, not split into bullets).
   */
  private async writeAgentDescription(sessionId: string, role: RoleInfo): Promise<void> {
    const body = role.instructions.trim();
    await this.manager.store.writeAgentDescription({
      formatVersion: FORMAT_VERSION,
      sessionId,
      agentType: role.name,
      role: body === '' ? `You are the ${role.name} agent: ${role.description}` : body,
      instructions: [],
      allowedTools: role.allowedTools ?? [],
      createdAt: this.iso(),
      tokens: Math.ceil((role.description.length + role.instructions.length) / 4),
    });
  }

  /** Pool registration from draft to undraft. */
  private activate(draft: ActiveDraft): void {
    this.drafts.set(draft.session.channelId, draft);
    this.bySession.set(draft.session.sessionId, draft);
    const agent = this.draftAgentInfo(draft);
    this.pool.register(agent);
    this.emitter.emit('agent_status', { channelId: draft.session.channelId, agent });
  }

  private draftAgentInfo(draft: ActiveDraft): AgentInfo {
    const { session } = draft;
    return {
      agentId: session.sessionId,
      kind: 'draft',
      role: session.role,
      project: session.project,
      taskSlug: session.taskSlug,
      channelId: session.channelId,
      status: session.status === 'active' ? 'running' : 'completed',
      sessionId: session.sessionId,
      startedAt: session.startedAt,
      costUsd: session.cumulativeCostUsd,
      ...(session.closedAt ? { endedAt: session.closedAt } : {}),
    };
  }

  async undraft(params: { channelId: string }): Promise<DraftSummary> {
    const parsed = ChannelParamsSchema.safeParse(params);
    if (!parsed.success) throw invalidInput('undraft', parsed.error.issues);
    const draft = this.requireDraft(parsed.data.channelId);
    return this.closeDraft(draft, 'undraft');
  }

  /**
   * Seed 000's closeDraft: ends the running turn and the draft's workers, saves draft.json as
   * closed, releases the pool entry. The session stays on disk, readable.
   */
  private async closeDraft(draft: ActiveDraft, reason: 'undraft' | 'native_resume_failed'): Promise<DraftSummary> {
    const { session } = draft;
    // Leave the channel first so no new turn starts while this one winds down.
    draft.closing = true;
    this.drafts.delete(session.channelId);
    draft.turn?.controller.abort();
    await draft.turn?.done;
    await this.workers.killAll((agent) => agent.parentSessionId === session.sessionId);
    await this.refreshFromLog(draft);
    const closedAt = this.clock();
    draft.session = { ...session, ...draft.session, status: 'closed', closedAt: this.iso(closedAt), closeReason: reason };
    await this.persist(draft);
    this.bySession.delete(session.sessionId);
    this.pool.release(session.sessionId);
    this.workers.forget((agent) => agent.parentSessionId === session.sessionId);
    this.emitter.emit('agent_status', { channelId: session.channelId, agent: this.draftAgentInfo(draft) });
    return {
      sessionId: session.sessionId,
      taskSlug: session.taskSlug,
      turns: draft.session.turnCount,
      cost: draft.session.cumulativeCostUsd,
      durationMs: Math.max(0, closedAt - Date.parse(session.startedAt)),
    };
  }

  private requireDraft(channelId: string): ActiveDraft {
    const draft = this.drafts.get(channelId);
    if (!draft) {
      throw new DraftError('NO_ACTIVE_DRAFT', `Channel "${channelId}" has no active draft. Draft an agent first (/draft <role>).`, {
        fault: 'user',
        data: { channelId },
      });
    }
    return draft;
  }

  async getDraftStatus(params: { channelId: string }): Promise<{ active: boolean; session?: DraftStatus }> {
    const parsed = ChannelParamsSchema.safeParse(params);
    if (!parsed.success) throw invalidInput('get_draft_status', parsed.error.issues);
    const draft = this.drafts.get(parsed.data.channelId);
    if (!draft) return { active: false };
    return { active: true, session: this.status(draft) };
  }

  private status(draft: ActiveDraft): DraftStatus {
    const { session } = draft;
    return {
      sessionId: session.sessionId,
      role: session.role,
      taskSlug: session.taskSlug,
      taskDir: session.taskDir,
      channelId: session.channelId,
      startedAt: session.startedAt,
      lastActivityAt: session.lastActivityAt,
      turnCount: session.turnCount,
      status: session.status,
      cumulativeCostUsd: session.cumulativeCostUsd,
      lastInputTokens: session.lastInputTokens,
      lastOutputTokens: session.lastOutputTokens,
      contextWindow: session.contextWindow,
      maxOutputTokens: session.maxOutputTokens,
      project: session.project,
      backend: session.backend,
      costUnknown: session.costUnknown,
      contextPct: contextPct(session),
      turnRunning: draft.turn !== undefined,
      activeAgents: this.workers.list((agent) => agent.parentSessionId === session.sessionId && (agent.status === 'queued' || agent.status === 'running')).length,
      ...(session.model ? { model: session.model } : {}),
    };
  }

  // ---- turns ------------------------------------------------------------------------------------

  async submitPrompt(params: { channelId: string; content: string; role?: string; taskSlug?: string }): Promise<SubmitResult> {
    this.assertOpen();
    const parsed = SubmitParamsSchema.safeParse(params);
    if (!parsed.success) throw invalidInput('submit_prompt', parsed.error.issues);
    const draft = this.drafts.get(parsed.data.channelId);
    // Seed 000: an active draft owns routing; role and taskSlug are then ignored.
    if (draft) return this.resumeDraft(draft, parsed.data.content);
    if (parsed.data.role === undefined) {
      throw new DraftError(
        'NO_ACTIVE_DRAFT',
        `Channel "${parsed.data.channelId}" has no active draft. Draft an agent first (/draft <role>), or pass \`role\` to dispatch the prompt to a worker.`,
        { fault: 'user', data: { channelId: parsed.data.channelId } },
      );
    }
    return this.dispatchAutonomous(parsed.data.channelId, parsed.data.content, parsed.data.role, parsed.data.taskSlug);
  }

  /**
   * Seed 000's resumeDraft: one conversational turn. The user message is stored (acknowledged)
   * before this resolves; the turn then streams into the session log, every event forwarded as
   * `channel_message`. A second submit while a turn runs is refused with TURN_IN_PROGRESS: the
   * user sees the turn is busy and may cancel it, instead of a queued message landing later in a
   * conversation that has moved on.
   */
  private async resumeDraft(draft: ActiveDraft, content: string): Promise<SubmitResult> {
    if (draft.turn) {
      throw new DraftError('TURN_IN_PROGRESS', `A turn is still running on channel "${draft.session.channelId}"; wait for it or cancel it.`, {
        fault: 'user',
        data: { channelId: draft.session.channelId, sessionId: draft.session.sessionId },
      });
    }
    const { session, role, backend, project } = draft;
    const controller = new AbortController();
    let finished!: () => void;
    const turn: RunningTurn = { controller, done: new Promise((resolve) => (finished = resolve)) };
    draft.turn = turn;
    const sessionId = session.sessionId;
    let handle: Awaited<ReturnType<typeof runTurn>>;
    try {
      const profile: AgentProfile = {
        name: role.name,
        description: role.description,
        instructions: role.instructions,
        ...(role.allowedTools ? { allowedTools: role.allowedTools } : {}),
        ...(role.permissionMode ? { permissionMode: role.permissionMode } : {}),
        ...(role.model ? { model: role.model } : {}),
      };
      const liveWorkers = this.workers.hasLive((agent) => agent.parentSessionId === sessionId);
      handle = await runTurn(this.manager, sessionId, {
        backend,
        prompt: content,
        signal: controller.signal,
        tools: this.toolsFor(draft.session, role, project, true),
        profile,
        cwd: project.path,
        repairInterrupted: !liveWorkers,
        ...(role.model ? { model: role.model } : {}),
        ...(role.maxTurns ? { maxTurns: role.maxTurns } : {}),
      });
    } catch (error) {
      draft.turn = undefined;
      finished();
      throw error;
    }
    // runTurn stored the user message and has not pulled a turn event yet: the last user message in main is this one.
    const conversation = await this.manager.loadConversation(sessionId);
    const userBlock = findLast(conversation.blocks, (block) => block.type === 'user_message');
    if (session.continuity === 'native' && !session.nativeStarted) {
      draft.session = { ...draft.session, nativeStarted: true };
      void this.persist(draft);
    }
    void this.consume(draft, handle.events).finally(() => {
      if (draft.turn === turn) draft.turn = undefined;
      finished();
    });
    return { mode: 'draft', accepted: true, sessionId, seq: userBlock?.seq ?? conversation.lastSeq };
  }

  /** Drives the turn to its end, then saves the metrics and pushes `draft_status`. */
  private async consume(draft: ActiveDraft, events: AsyncIterable<StreamEvent>): Promise<void> {
    const { sessionId, channelId } = draft.session;
    let resumeFailure: string | undefined;
    try {
      for await (const event of events) {
        if (event.type !== 'block_complete' || event.conversationId !== MAIN_CONVERSATION || event.block.type !== 'system') continue;
        const block = event.block;
        if (block.subtype === 'compaction') {
          // The back end compacted its own context (Claude's compact_boundary).
          const { preTokens, trigger } = compactionFacts(block.data);
          this.emitter.emit('context_compacted', { channelId, sessionId, preTokens, trigger });
        } else if (block.subtype === 'error' && RESUME_FAILURE_CODES.has(dataCode(block.data) ?? '')) {
          resumeFailure = block.content;
        }
      }
    } catch (error) {
      process.emitWarning(`Draft turn on channel "${channelId}" ended with an error: ${String(error)}`);
    }
    await this.refreshFromLog(draft).catch(() => undefined);
    await this.persist(draft).catch((error: unknown) => process.emitWarning(`Could not save draft.json for ${sessionId}: ${String(error)}`));
    this.emitStatus(draft);
    if (resumeFailure !== undefined && this.drafts.get(channelId) === draft) {
      await this.autoUndraft(draft, resumeFailure);
    }
  }

  /**
   * The native session cannot be resumed (seed 000: "SDK session files corrupted/deleted"):
   * notify, undraft, keep the history readable. Continuing as a managed session instead would
   * silently change what the model sees mid-conversation; the user drafts again for a fresh one.
   */
  private async autoUndraft(draft: ActiveDraft, reason: string): Promise<void> {
    const { sessionId, channelId } = draft.session;
    const message = `The ${draft.session.backend} session could not be resumed, so the draft was closed. The conversation so far stays readable; draft the role again to start a fresh session. (${firstLine(reason)})`;
    const now = this.clock();
    await this.manager
      .appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          at: now,
          block: { id: randomUUID(), type: 'system', subtype: 'error', content: message, createdAt: now, completedAt: now, data: { code: 'NATIVE_RESUME_FAILED' } },
        },
      ])
      .catch(() => undefined);
    draft.turn = undefined;
    await this.closeDraft(draft, 'native_resume_failed');
    this.emitter.emit('draft_closed', { channelId, sessionId, reason: 'native_resume_failed', message });
  }

  /** Metrics from the session log (not process-local counters), so they are right across resume and restart. */
  private async refreshFromLog(draft: ActiveDraft): Promise<void> {
    const { sessionId } = draft.session;
    const metrics: SessionMetrics = (await this.manager.loadConversation(sessionId)).metrics;
    const record = await this.manager.getSession(sessionId);
    const lastActivity = record.lastActivity ?? record.updatedAt;
    draft.session = {
      ...draft.session,
      turnCount: metrics.turns,
      cumulativeCostUsd: metrics.costUsd,
      costUnknown: metrics.costUnknown,
      lastInputTokens: metrics.lastInputTokens,
      lastOutputTokens: metrics.lastOutputTokens,
      contextWindow: metrics.contextWindow ?? draft.session.contextWindow,
      maxOutputTokens: metrics.maxOutputTokens ?? draft.session.maxOutputTokens,
      lastActivityAt: this.iso(Math.max(lastActivity, Date.parse(draft.session.lastActivityAt))),
      ...(metrics.model ? { model: metrics.model } : {}),
      ...(record.native && record.native.backend === draft.session.backend ? { nativeSessionId: record.native.nativeSessionId } : {}),
    };
  }

  /**
   * A worker's cost is in the drafting session's log once it ends; between turns nothing else
   * would save it, so the draft's metrics are refreshed, saved and pushed now.
   */
  private workerEnded(parentSessionId: string): void {
    const draft = this.bySession.get(parentSessionId);
    if (!draft || draft.turn || draft.closing) return;
    void (async () => {
      await this.refreshFromLog(draft);
      await this.persist(draft);
      if (!draft.turn && !draft.closing) this.emitStatus(draft);
    })().catch(() => undefined);
  }

  private persist(draft: ActiveDraft): Promise<void> {
    const write = draft.writes.then(() => this.catalog.writeDraft(draft.project, draft.session));
    draft.writes = write.catch(() => undefined);
    return write;
  }

  private emitStatus(draft: ActiveDraft): void {
    const { session } = draft;
    this.emitter.emit('draft_status', {
      channelId: session.channelId,
      sessionId: session.sessionId,
      role: session.role,
      turnCount: session.turnCount,
      costUsd: session.cumulativeCostUsd,
      contextPct: contextPct(session),
      lastActivity: session.lastActivityAt,
    });
  }

  async cancel(params: { channelId: string }): Promise<{ cancelled: boolean }> {
    const parsed = ChannelParamsSchema.safeParse(params);
    if (!parsed.success) throw invalidInput('cancel', parsed.error.issues);
    const { channelId } = parsed.data;
    let cancelled = false;
    const draft = this.drafts.get(channelId);
    if (draft?.turn && !draft.turn.controller.signal.aborted) {
      draft.turn.controller.abort();
      cancelled = true;
    }
    // Without a draft, the channel's running autonomous dispatches are its "turn".
    for (const [sessionId, channel] of this.dispatches) {
      if (channel !== channelId) continue;
      const agent = this.workers.get(sessionId);
      if (agent && (agent.status === 'queued' || agent.status === 'running') && this.workers.kill(sessionId)) cancelled = true;
    }
    return { cancelled };
  }

  async settled(params: { channelId: string }): Promise<void> {
    await this.drafts.get(params.channelId)?.turn?.done;
  }

  // ---- workers ----------------------------------------------------------------------------------

  /** The tools of a drafting context, gated by the role's permissions. */
  private toolsFor(owner: { sessionId: string; channelId: string; project: string; taskSlug?: string }, role: RoleInfo, project: ProjectLocation, allowAgentTools: boolean): ParleyTool[] {
    const handlers: ToolHandlers = {
      listTasks: async (name) => this.catalog.listTasks(name === undefined ? project : await this.catalog.resolve(name)),
      listRoles: () => loadRoles(this.catalog.rolesDir(project)),
      listProjects: () => this.listProjects(),
      createProject: (input) => this.createProject(input),
      createTask: (input) =>
        this.createTask({
          project: input.project ?? project.name,
          title: input.title,
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.slug !== undefined ? { slug: input.slug } : {}),
        }),
      draftAgent: async (input) => {
        this.assertOpen();
        const workerRole = await this.resolveRole(project, input.role);
        const validator = input.outputSchema ? compileOutputSchema(input.outputSchema) : undefined;
        const backend = this.resolveBackend(workerRole.backend, workerRole.model, workerRole.name);
        const agentId = `${workerRole.name.slice(0, 40)}-${randomUUID().slice(0, 8)}`;
        await this.workers.dispatch({
          agentId,
          role: workerRole,
          prompt: input.prompt,
          backend,
          tools: this.toolsFor({ ...owner }, workerRole, project, false),
          target: { sessionId: owner.sessionId, conversationId: agentId },
          project: project.name,
          cwd: project.path,
          channelId: owner.channelId,
          parentSessionId: owner.sessionId,
          ...(validator ? { validator } : {}),
          ...(owner.taskSlug ? { taskSlug: owner.taskSlug } : {}),
        });
        return { agentId, status: this.workers.get(agentId)?.status ?? 'queued' };
      },
      awaitAgent: (input, signal) => {
        this.ownWorker(owner.sessionId, input.agentId);
        const timeoutMs = input.timeoutSeconds === undefined ? this.defaultAwaitTimeoutMs : input.timeoutSeconds * 1000;
        return this.workers.wait(input.agentId, { timeoutMs, ...(signal ? { signal } : {}) });
      },
      killAgent: (agentId) => {
        this.ownWorker(owner.sessionId, agentId);
        return Promise.resolve({ killed: this.workers.kill(agentId) });
      },
      listAgents: () => Promise.resolve(this.workers.list((agent) => agent.parentSessionId === owner.sessionId)),
    };
    return createParleyTools({ permissions: role.permissions, handlers, allowAgentTools });
  }

  /** A drafted agent reaches only its own workers. */
  private ownWorker(sessionId: string, agentId: string): void {
    const agent = this.workers.get(agentId);
    if (!agent || agent.parentSessionId !== sessionId) {
      throw new DraftError('NOT_FOUND', `No worker "${agentId}" of yours. list_agents shows the workers you started.`, { fault: 'model', data: { agentId } });
    }
  }

  /** Seed 000's task dispatch: a fresh session, structured output, the parsed result as the answer. */
  private async dispatchAutonomous(channelId: string, content: string, roleName: string, taskSlug: string | undefined): Promise<SubmitResult> {
    const project = await this.catalog.current();
    if (taskSlug !== undefined) await this.catalog.getTask(project, taskSlug);
    const role = await this.resolveRole(project, roleName);
    const backend = this.resolveBackend(role.backend, role.model, role.name);
    const validator: OutputValidator = compileOutputSchema(DEFAULT_DISPATCH_OUTPUT_SCHEMA);
    const sessionId = randomUUID();
    await this.manager.createSession({
      sessionId,
      scope: { kind: 'workflow', harness: 'dispatch', agent: role.name },
      agentType: role.name,
      backend: backend.describe().name,
      title: `dispatch ${role.name}: ${project.name}${taskSlug ? `/${taskSlug}` : ''}`,
    });
    this.dispatches.set(sessionId, channelId);
    const owner = { sessionId, channelId, project: project.name, ...(taskSlug ? { taskSlug } : {}) };
    try {
      await this.workers.dispatch({
        agentId: sessionId,
        role,
        prompt: content,
        backend,
        validator,
        tools: this.toolsFor(owner, role, project, true),
        target: { sessionId, conversationId: MAIN_CONVERSATION },
        project: project.name,
        cwd: project.path,
        channelId,
        ...(taskSlug ? { taskSlug } : {}),
      });
      const result: DispatchResult = await this.workers.wait(sessionId);
      // Workers the dispatched agent started end with it.
      await this.workers.killAll((agent) => agent.parentSessionId === sessionId);
      return { mode: 'dispatch', sessionId, result };
    } finally {
      this.workers.forget((agent) => agent.agentId === sessionId || agent.parentSessionId === sessionId);
      this.dispatches.delete(sessionId);
    }
  }

  async listAgents(params: { channelId?: string }): Promise<AgentInfo[]> {
    const channelId = params.channelId;
    const matches = (agent: AgentInfo): boolean => channelId === undefined || agent.channelId === channelId;
    const drafts = this.pool.list((agent) => agent.kind === 'draft' && matches(agent));
    return [...drafts, ...this.workers.list(matches)];
  }

  async killAgent(params: { agentId: string }): Promise<{ killed: boolean }> {
    if (typeof params.agentId !== 'string' || params.agentId === '') throw new DraftError('INVALID_INPUT', 'kill_agent needs an agentId.', { fault: 'user' });
    if (this.bySession.has(params.agentId)) {
      throw new DraftError('INVALID_INPUT', `"${params.agentId}" is a drafted agent, not a worker; end it with undraft.`, { fault: 'user', data: { agentId: params.agentId } });
    }
    return { killed: this.workers.kill(params.agentId) };
  }

  async createMcpServer(params: { channelId: string }): Promise<McpServer> {
    const draft = this.requireDraft(params.channelId);
    return createDraftMcpServer(this.toolsFor(draft.session, draft.role, draft.project, true));
  }

  // ---- recovery and shutdown --------------------------------------------------------------------

  /**
   * Seed 000's loadActiveDraft, for every project: each draft.json with status active becomes a
   * draft again, its cut turn (if any) closed as interrupted, its metrics recomputed from the log.
   * The next submit_prompt resumes the conversation (native back ends by their session id).
   */
  async recover(): Promise<{ recovered: number; failed: Array<{ sessionId: string; reason: string }> }> {
    this.assertOpen();
    const failed: Array<{ sessionId: string; reason: string }> = [];
    let recovered = 0;
    const { found, failed: unreadable } = await this.catalog.scanDrafts();
    for (const entry of unreadable) failed.push({ sessionId: entry.file, reason: entry.reason });
    const active = found
      .filter(({ draft }) => draft.status === 'active' && !this.bySession.has(draft.sessionId))
      .sort((a, b) => Date.parse(b.draft.lastActivityAt) - Date.parse(a.draft.lastActivityAt));
    const rolesByProject = new Map<string, LoadedRoles>();
    for (const { project, draft: session } of active) {
      try {
        if (this.drafts.has(session.channelId) || this.claims.has(session.channelId)) {
          // The newest draft of a channel wins; an older one is closed, its history kept.
          await this.catalog.writeDraft(project, { ...session, status: 'closed', closedAt: this.iso(), closeReason: 'recovery_failed' });
          throw new Error(`channel "${session.channelId}" already has a more recent draft`);
        }
        await this.manager.getSession(session.sessionId);
        let roles = rolesByProject.get(project.dataDir);
        if (!roles) {
          roles = await loadRoles(this.catalog.rolesDir(project));
          rolesByProject.set(project.dataDir, roles);
        }
        const role = await this.resolveRole(project, session.role, roles);
        const backend = this.resolveBackend(session.backend, session.model ?? role.model, role.name);
        await this.closeCutTurn(session.sessionId);
        const draft: ActiveDraft = { session, project, role, backend, writes: Promise.resolve() };
        await this.refreshFromLog(draft);
        // Saved only when the log says something draft.json does not (a turn cut by the crash).
        if (JSON.stringify(draft.session) !== JSON.stringify(session)) await this.persist(draft);
        this.activate(draft);
        recovered += 1;
      } catch (error) {
        failed.push({ sessionId: session.sessionId, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    return { recovered, failed };
  }

  /**
   * A turn cut by a crash: its open blocks are closed (runTurn's repair), and when no
   * `metadata_update` closed it — text may have streamed before the crash, so an answer block is
   * no proof — it is marked with an `interrupted` system block so the history shows what happened.
   */
  private async closeCutTurn(sessionId: string): Promise<void> {
    await closeInterruptedTurn(this.manager, sessionId);
    const conversation = await this.manager.loadConversation(sessionId);
    const lastUser = findLast(conversation.blocks, (block) => block.type === 'user_message');
    if (lastUser?.seq === undefined) return;
    const after = await this.manager.getEvents(sessionId, { afterSeq: lastUser.seq });
    const closed = after.some((event) => event.type === 'metadata_update' && event.conversationId === MAIN_CONVERSATION && event.metadata.turnComplete === true);
    if (closed) return;
    const now = this.clock();
    await this.manager.appendEvents(sessionId, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        at: now,
        block: {
          id: randomUUID(),
          type: 'system',
          subtype: 'interrupted',
          content: 'The previous turn was interrupted (Parley stopped before it finished). Its partial output is kept above.',
          createdAt: now,
          completedAt: now,
        },
      },
      { type: 'metadata_update', conversationId: MAIN_CONVERSATION, at: now, metadata: { turnComplete: true, stopReason: 'interrupted' } },
    ]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const drafts = [...this.drafts.values()];
    for (const draft of drafts) draft.turn?.controller.abort();
    await Promise.all(drafts.map((draft) => draft.turn?.done));
    await this.workers.killAll(() => true);
    // Drafts stay active on disk: `recover` picks them up at the next start.
    await Promise.all(drafts.map((draft) => draft.writes));
    for (const stop of this.unsubscribe.splice(0)) stop();
    this.drafts.clear();
    this.bySession.clear();
  }
}

function projectInfo(project: ProjectLocation): ProjectInfo {
  return {
    name: project.name,
    path: project.path,
    dataDir: project.dataDir,
    current: project.current,
    defaultRole: project.defaultRole,
    ...(project.description ? { description: project.description } : {}),
  };
}

function contextPct(session: DraftSession): number | null {
  if (session.contextWindow <= 0) return null;
  return Math.round((session.lastInputTokens / session.contextWindow) * 1000) / 10;
}

function compactionFacts(data: unknown): { preTokens: number; trigger: 'auto' | 'manual' } {
  const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const nested = (typeof record['compact_metadata'] === 'object' && record['compact_metadata'] !== null ? record['compact_metadata'] : {}) as Record<string, unknown>;
  const pre = record['preTokens'] ?? record['pre_tokens'] ?? record['tokensBefore'] ?? nested['pre_tokens'];
  const trigger = record['trigger'] ?? nested['trigger'];
  return { preTokens: typeof pre === 'number' && pre >= 0 ? pre : 0, trigger: trigger === 'manual' ? 'manual' : 'auto' };
}

function dataCode(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const code = (data as Record<string, unknown>)['code'];
  return typeof code === 'string' ? code : undefined;
}

function findLast(blocks: readonly ConversationBlock[], predicate: (block: ConversationBlock) => boolean): ConversationBlock | undefined {
  for (let index = blocks.length - 1; index >= 0; index--) if (predicate(blocks[index]!)) return blocks[index];
  return undefined;
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

