import { randomUUID } from 'node:crypto';
import {
  RequestError,
  type AgentContext,
  type ClientCapabilities,
  type ListSessionsResponse,
  type LoadSessionResponse,
  type McpServer,
  type NewSessionResponse,
  type PromptResponse,
  type SessionConfigOption,
  type SessionUpdate,
  type StopReason,
} from '@agentclientprotocol/sdk';
import { isParleyError, MAIN_CONVERSATION, taskTitleFromMessage, type StreamEvent } from '../conversation/index.js';
import type { AgentBackend, AgentProfile, ToolDefinition } from '../backends/index.js';
import type { ParleyTool, RoleInfo } from '../draft/index.js';
import { continueOnBackend, runTurnWithFallback } from '../sessions/index.js';
import type { SessionRecord } from '../store/index.js';
import { ApprovalBroker, nativeApprover, ProjectWorkspace, WORKSPACE_PERMISSIONS } from '../workspace/index.js';
import {
  askingFirst,
  clientFilesOf,
  createPermissionBridge,
  type AcpPermissionBridge,
  type ClientFiles,
} from './client-bridge.js';
import { editorFilesOf } from './editor-files.js';
import { connectEditorTools, type EditorTools } from './editor-mcp.js';
import { promptText, PromptContentError } from './prompt-content.js';
import { roleTools } from './role-tools.js';
import { BACKEND_OPTION, configOptionsOf, DEFAULT_MODEL_VALUE, MODEL_OPTION, modesOf } from './session-options.js';
import {
  LiveUpdates,
  replayUpdates,
  sessionInfoUpdateOf,
  stopReasonOf,
  usageUpdateOf,
  type ClientUpdates,
} from './session-updates.js';
import { toolKindOf } from './tool-calls.js';
import type { Workspace, Workspaces } from './workspaces.js';

/**
 * The sessions an editor has open over this connection. Each is a Parley session in a workspace
 * (a data folder): its role (the ACP mode), back end and model (config options), the editor's MCP
 * tools, and at most one running turn. Everything said about a session comes from its log: the
 * live updates are the log's events as they become durable, the replay is the stored
 * conversation. The only state kept here is what the editor chose for the connection.
 */

interface RunningTurn {
  controller: AbortController;
  done: Promise<void>;
}

interface AcpSession {
  sessionId: string;
  cwd: string;
  workspace: Workspace;
  role: string;
  backend: string;
  model?: string;
  editorTools: EditorTools;
  permissions: AcpPermissionBridge;
  /**
   * The workspace tools' approvals, asked through `permissions.approve`; one for the session, so
   * "allow always" holds for the rest of it. Made with the session's first workspace tools.
   */
  approvals?: ApprovalBroker;
  /** The editor's files when it offers `fs/*`: the workspace file tools read and write through them. */
  files?: ClientFiles;
  live: LiveUpdates;
  turn?: RunningTurn;
  /** The highest `seq` whose updates were sent, and who waits for a higher one. */
  sentSeq: number;
  seqWaiters: Array<{ seq: number; resolve: () => void }>;
}

export interface AcpSessionsOptions {
  workspaces: Workspaces;
  /** The connection's way to the editor: updates, permission requests. */
  client: () => AgentContext;
  log(message: string): void;
  version: string;
  /** Default wait of a worker's `await_agent` (default 300 s). */
  defaultAwaitTimeoutMs?: number;
}

const PAGE_SIZE = 50;
/** Longest session title an editor lists. */
const SESSION_TITLE_MAX = 80;

export class AcpSessions {
  private readonly sessions = new Map<string, AcpSession>();
  private readonly subscribed = new Set<Workspace>();
  /** The project folders the workspace tools work in, by `cwd` and data folder (each opened once: its sandbox probe runs once). */
  private readonly projectFolders = new Map<string, Promise<ProjectWorkspace>>();
  /** session/update notifications leave in the order they were made. */
  private outbox: Promise<void> = Promise.resolve();
  clientCapabilities: ClientCapabilities | undefined;

  constructor(private readonly options: AcpSessionsOptions) {}

  async newSession(params: { cwd: string; mcpServers: McpServer[] }): Promise<NewSessionResponse> {
    const workspace = await this.workspaceOf(params.cwd);
    const sessionId = randomUUID();
    const { roles } = await workspace.catalog.loadRoles(workspace.project);
    const role = roles.some((entry) => entry.name === workspace.project.defaultRole)
      ? workspace.project.defaultRole
      : (roles[0]?.name ?? 'dev');
    const backend = workspace.backends.defaultBackend;
    // The session exists from here on, for every process on this data folder (listed, loadable);
    // the first prompt names it.
    await workspace.manager.createSession({
      sessionId,
      scope: { kind: 'draft', role, project: workspace.project.name },
      agentType: role,
      backend,
    });
    const session = await this.open(sessionId, params.cwd, workspace, params.mcpServers, { role, backend });
    return { sessionId, modes: modesOf(roles, session.role), configOptions: this.configOptions(session) };
  }

  async loadSession(params: { sessionId: string; cwd: string; mcpServers: McpServer[] }): Promise<LoadSessionResponse> {
    const workspace = await this.workspaceOf(params.cwd);
    const record = await this.record(workspace, params.sessionId);
    const { roles, role, backend } = await this.choicesOf(workspace, record);
    const earlier = this.sessions.get(params.sessionId);
    if (earlier?.turn)
      throw RequestError.invalidRequest(
        { sessionId: params.sessionId },
        `Session ${params.sessionId} is running a turn here; cancel it before loading it again.`,
      );
    if (earlier) await this.forget(earlier);
    const session = await this.open(params.sessionId, params.cwd, workspace, params.mcpServers, { role, backend });
    const conversation = await workspace.manager.loadConversation(params.sessionId);
    session.sentSeq = conversation.lastSeq;
    for (const update of replayUpdates(conversation, params.cwd, this.clientUpdates())) this.send(session, update);
    this.send(
      session,
      sessionInfoUpdateOf({
        ...(record.title ? { title: record.title } : {}),
        updatedAt: record.updatedAt,
        metrics: conversation.metrics,
      }),
    );
    // The replay reaches the editor before the answer to session/load.
    await this.outbox;
    return { modes: modesOf(roles, session.role), configOptions: this.configOptions(session) };
  }

  /**
   * `session/fork`: a new Parley session whose history is the source's whole history
   * (`forkSession`, which records `forkedFrom`), opened on this connection as `session/new` opens
   * one; the source is not changed. The editor already shows the source's history, so nothing
   * is replayed. The fork keeps the source's role and back end; on a native back end its first
   * prompt resumes from a transcript written from the fork's history.
   */
  async forkSession(params: { sessionId: string; cwd: string; mcpServers?: McpServer[] }): Promise<NewSessionResponse> {
    const workspace = await this.workspaceOf(params.cwd);
    const source = await this.record(workspace, params.sessionId);
    const { roles, role, backend } = await this.choicesOf(workspace, source);
    const fork = await workspace.manager.forkSession(source.sessionId);
    const session = await this.open(fork.sessionId, params.cwd, workspace, params.mcpServers ?? [], { role, backend });
    session.sentSeq = (await workspace.manager.loadConversation(fork.sessionId)).lastSeq;
    return {
      sessionId: fork.sessionId,
      modes: modesOf(roles, session.role),
      configOptions: this.configOptions(session),
    };
  }

  async listSessions(params: {
    cwd?: string | null | undefined;
    cursor?: string | null | undefined;
  }): Promise<ListSessionsResponse> {
    // Listing never creates a data folder: a folder without one has no sessions.
    const cwd = params.cwd ?? ((await this.options.workspaces.opened()).length === 0 ? process.cwd() : undefined);
    const workspaces =
      cwd === undefined
        ? await this.options.workspaces.opened()
        : (await this.options.workspaces.holdsSessions(cwd))
          ? [await this.workspaceOf(cwd)]
          : [];
    const records: Array<{ record: SessionRecord; cwd: string }> = [];
    for (const workspace of workspaces) {
      for (const record of await workspace.manager.listSessions()) {
        if (record.status !== 'archived') records.push({ record, cwd: workspace.projectRoot });
      }
    }
    records.sort((left, right) => right.record.updatedAt - left.record.updatedAt);
    const offset = params.cursor ? Number.parseInt(params.cursor, 10) : 0;
    if (!Number.isInteger(offset) || offset < 0)
      throw RequestError.invalidParams(
        { cursor: params.cursor },
        'The cursor is not one this agent gave; list again without it.',
      );
    const page = records.slice(offset, offset + PAGE_SIZE);
    return {
      sessions: page.map(({ record, cwd }) => ({
        sessionId: record.sessionId,
        cwd,
        ...(record.title ? { title: record.title } : {}),
        updatedAt: new Date(record.updatedAt).toISOString(),
        _meta: {
          parley: {
            kind: record.scope.kind,
            backend: record.type,
            agentType: record.agentType,
            ...(record.readOnly ? { readOnly: true } : {}),
          },
        },
      })),
      ...(offset + PAGE_SIZE < records.length ? { nextCursor: String(offset + PAGE_SIZE) } : {}),
    };
  }

  async setMode(params: { sessionId: string; modeId: string }): Promise<void> {
    const session = this.require(params.sessionId);
    const { roles } = await session.workspace.catalog.loadRoles(session.workspace.project);
    if (!roles.some((role) => role.name === params.modeId)) {
      throw RequestError.invalidParams(
        { modeId: params.modeId },
        `No mode "${params.modeId}". Modes (roles): ${roles.map((role) => role.name).join(', ')}.`,
      );
    }
    session.role = params.modeId;
    // Not prompted yet: the session is still being set up, and a load elsewhere should see its role.
    const record = await session.workspace.manager.getSession(session.sessionId);
    if (record.title === undefined)
      await session.workspace.manager.relabelSession(session.sessionId, { role: params.modeId });
  }

  async setConfigOption(params: {
    sessionId: string;
    configId: string;
    value: string | boolean;
  }): Promise<{ configOptions: SessionConfigOption[] }> {
    const session = this.require(params.sessionId);
    const value = String(params.value);
    if (params.configId === BACKEND_OPTION) {
      if (!session.workspace.backends.backendNames.includes(value)) {
        throw RequestError.invalidParams(
          { value },
          `No back end "${value}". Back ends: ${session.workspace.backends.backendNames.join(', ')}.`,
        );
      }
      session.backend = value;
      delete session.model;
    } else if (params.configId === MODEL_OPTION) {
      if (value === DEFAULT_MODEL_VALUE) delete session.model;
      else session.model = value;
    } else {
      throw RequestError.invalidParams(
        { configId: params.configId },
        `No config option "${params.configId}"; the options are ${BACKEND_OPTION} and ${MODEL_OPTION}.`,
      );
    }
    return { configOptions: this.configOptions(session) };
  }

  /** One turn, streamed as session updates; resolves with the stop reason once every update is out. */
  async prompt(
    params: { sessionId: string; prompt: Parameters<typeof promptText>[0] },
    requestSignal: AbortSignal,
  ): Promise<PromptResponse> {
    const session = this.require(params.sessionId);
    if (session.turn) {
      throw RequestError.invalidRequest(
        { sessionId: session.sessionId, code: 'TURN_IN_PROGRESS' },
        `A turn is already running on session ${session.sessionId}; wait for it or send session/cancel.`,
      );
    }
    let text: string;
    try {
      text = promptText(params.prompt);
    } catch (error) {
      if (error instanceof PromptContentError) throw RequestError.invalidParams({ field: 'prompt' }, error.message);
      throw error;
    }
    const controller = new AbortController();
    let finished!: () => void;
    session.turn = { controller, done: new Promise((resolve) => (finished = resolve)) };
    const onRequestAbort = (): void => controller.abort();
    requestSignal.addEventListener('abort', onRequestAbort, { once: true });
    try {
      return await this.runPrompt(session, text, controller);
    } finally {
      requestSignal.removeEventListener('abort', onRequestAbort);
      session.turn = undefined;
      finished();
    }
  }

  cancel(sessionId: string): void {
    this.sessions.get(sessionId)?.turn?.controller.abort();
  }

  /** The connection closed: running turns end (marked aborted, partial output kept), then everything is released. */
  async close(): Promise<void> {
    for (const session of this.sessions.values()) session.turn?.controller.abort();
    await Promise.all([...this.sessions.values()].map((session) => session.turn?.done));
    await Promise.all([...this.sessions.values()].map((session) => session.editorTools.close()));
    this.sessions.clear();
  }

  // ---- the turn ----------------------------------------------------------------------------

  private async runPrompt(session: AcpSession, text: string, controller: AbortController): Promise<PromptResponse> {
    const { workspace } = session;
    const backend = this.backendOf(session);
    await this.ensureStored(session, backend, text);
    const role = await this.roleOf(session);
    const profile: AgentProfile = {
      name: role.name,
      description: role.description,
      instructions: role.instructions,
      ...(role.allowedTools ? { allowedTools: role.allowedTools } : {}),
      ...(role.permissionMode ? { permissionMode: role.permissionMode } : {}),
    };
    const model = session.model ?? role.model;
    const handle = await runTurnWithFallback(workspace.manager, session.sessionId, {
      backend,
      prompt: text,
      signal: controller.signal,
      tools: await this.toolsOf(session, role, backend),
      profile,
      cwd: session.cwd,
      repairInterrupted: !workspace.workers.list(
        (agent) =>
          agent.parentSessionId === session.sessionId && (agent.status === 'queued' || agent.status === 'running'),
      ).length,
      // A native back end that can wait (Codex) asks in the editor, as the workspace tools do.
      askApproval: nativeApprover(this.approvalsOf(session, session.cwd), {
        sessionId: session.sessionId,
        root: session.cwd,
      }),
      ...(model ? { model } : {}),
      ...(role.maxTurns ? { maxTurns: role.maxTurns } : {}),
    });
    let lastSeq = -1;
    let parleyStopReason: string | undefined;
    for await (const event of handle.events) {
      lastSeq = Math.max(lastSeq, event.seq);
      if (event.type === 'metadata_update' && event.conversationId === MAIN_CONVERSATION && event.metadata.turnComplete)
        parleyStopReason = event.metadata.stopReason;
    }
    await this.sentThrough(session, lastSeq);
    const [record, conversation] = await Promise.all([
      workspace.manager.getSession(session.sessionId),
      workspace.manager.loadConversation(session.sessionId),
    ]);
    const usage = usageUpdateOf(conversation.metrics);
    if (usage) this.send(session, usage);
    this.send(
      session,
      sessionInfoUpdateOf({
        ...(record.title ? { title: record.title } : {}),
        updatedAt: record.updatedAt,
        metrics: conversation.metrics,
      }),
    );
    await this.outbox;
    const stopReason: StopReason = stopReasonOf(parleyStopReason, controller.signal.aborted);
    return { stopReason };
  }

  /**
   * The Parley session behind an ACP one, ready for a turn on `backend`. One `session/new` made and
   * nobody prompted yet (it has no title) takes the connection's choices and is titled by the prompt;
   * any other is continued on the back end.
   */
  private async ensureStored(session: AcpSession, backend: AgentBackend, text: string): Promise<void> {
    const { manager } = session.workspace;
    const description = backend.describe();
    const record = await manager.getSession(session.sessionId);
    if (record.title === undefined && record.stats.totalMessages === 0) {
      // Named as a first message names its task in the terminal and the browser (submit_prompt { draft }).
      const title = taskTitleFromMessage(text, SESSION_TITLE_MAX);
      await manager.relabelSession(session.sessionId, { role: session.role, ...(title ? { title } : {}) });
      if (record.type !== description.name) await manager.moveToBackend(session.sessionId, description.name);
      return;
    }
    // Any session (Parley's own, imported, or started on another back end) continues on the chosen
    // back end: natively where it has sessions (Parley writes the CLI's own transcript), else managed.
    await continueOnBackend(manager, session.sessionId, backend, { cwd: session.workspace.project.path });
  }

  private backendOf(session: AcpSession): AgentBackend {
    try {
      return session.workspace.backends.backendFor(session.backend, session.model);
    } catch (error) {
      throw RequestError.invalidParams(
        { backend: session.backend },
        `The back end "${session.backend}" cannot be used: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  private async roleOf(session: AcpSession): Promise<RoleInfo> {
    const { roles, errors } = await session.workspace.catalog.loadRoles(session.workspace.project);
    const role = roles.find((entry) => entry.name === session.role);
    if (role) return role;
    const broken = errors.find((error) => error.file.endsWith(`/${session.role}.md`));
    throw RequestError.invalidParams(
      { role: session.role },
      broken
        ? `The role file ${broken.file} cannot be read: ${broken.message}`
        : `The role "${session.role}" is gone; choose another mode.`,
    );
  }

  /**
   * The role's Parley tools (those its permissions gate ask the editor first), the workspace tools
   * its permissions grant on a managed back end (approvals asked in the editor, files through the
   * editor when it offers them), and the editor's MCP tools. Workers run on the session's back end
   * unless their role names one.
   */
  private async toolsOf(session: AcpSession, role: RoleInfo, backend: AgentBackend): Promise<ToolDefinition[]> {
    const { workspace } = session;
    const parleyTools = roleTools({
      sessionId: session.sessionId,
      role,
      project: workspace.project,
      catalog: workspace.catalog,
      workers: workspace.workers,
      backendFor: (name, model) =>
        workspace.backends.backendFor(name ?? session.backend, name === undefined ? (model ?? session.model) : model),
      defaultAwaitTimeoutMs: this.options.defaultAwaitTimeoutMs ?? 300_000,
    }) as ParleyTool[];
    const gated = parleyTools.map((tool) =>
      tool.permission === undefined
        ? tool
        : askingFirst(tool, session.permissions, (input) => ({
            toolCallId: `permission-${randomUUID()}`,
            title: `${tool.name} (needs ${tool.permission})`,
            kind: toolKindOf(tool.name),
            rawInput: input,
          })),
    );
    return [...gated, ...(await this.workspaceToolsOf(session, role, backend)), ...session.editorTools.tools];
  }

  /**
   * read_file, edit_file, run_command and the rest, as a drafted agent gets them: granted by the
   * role's files-read, files-write and shell, under its permission mode, confined to the session's
   * `cwd`. A native back end (Claude Code, the Gemini CLI) brings its own tools and prompts instead.
   */
  private async workspaceToolsOf(
    session: AcpSession,
    role: RoleInfo,
    backend: AgentBackend,
  ): Promise<ToolDefinition[]> {
    if (backend.describe().continuity !== 'managed') return [];
    if (!role.permissions.some((permission) => (WORKSPACE_PERMISSIONS as readonly string[]).includes(permission)))
      return [];
    const folder = await this.projectFolderOf(session);
    return folder.tools({
      sessionId: session.sessionId,
      permissions: role.permissions,
      mode: role.permissionMode ?? 'default',
      broker: this.approvalsOf(session, folder.paths.root),
      network: role.network ?? false,
      ...(session.files ? { files: editorFilesOf(session.files) } : {}),
    });
  }

  /** The session's one broker: the workspace tools' and a native back end's requests, asked in the editor. */
  private approvalsOf(session: AcpSession, root: string): ApprovalBroker {
    session.approvals ??= new ApprovalBroker({
      approver: (request, { signal }) => session.permissions.approve(request, root, signal),
    });
    return session.approvals;
  }

  private async projectFolderOf(session: AcpSession): Promise<ProjectWorkspace> {
    const key = `${session.cwd}\0${session.workspace.dataDir}`;
    let folder = this.projectFolders.get(key);
    if (!folder) {
      folder = ProjectWorkspace.open({ root: session.cwd, dataDir: session.workspace.dataDir });
      this.projectFolders.set(key, folder);
      folder.catch(() => this.projectFolders.delete(key));
    }
    try {
      return await folder;
    } catch (error) {
      throw RequestError.internalError(
        { cwd: session.cwd },
        `Parley could not open ${session.cwd} for its file tools: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  // ---- updates -------------------------------------------------------------------------------

  private send(session: AcpSession, update: SessionUpdate): void {
    const client = this.options.client();
    this.outbox = this.outbox
      .then(() => client.notify('session/update', { sessionId: session.sessionId, update }))
      .catch((error: unknown) =>
        this.options.log(`session/update for ${session.sessionId} not sent: ${String(error)}`),
      );
  }

  /** Every stored event of an open session becomes its updates, in `seq` order. */
  private onEvent(workspace: Workspace, sessionId: string, event: StreamEvent): void {
    const session = this.sessions.get(sessionId);
    if (!session || session.workspace !== workspace || event.seq <= session.sentSeq) return;
    for (const update of session.live.map(event)) this.send(session, update);
    session.sentSeq = event.seq;
    const ready = session.seqWaiters.filter((waiter) => waiter.seq <= event.seq);
    session.seqWaiters = session.seqWaiters.filter((waiter) => waiter.seq > event.seq);
    for (const waiter of ready) waiter.resolve();
  }

  private sentThrough(session: AcpSession, seq: number): Promise<void> {
    if (seq <= session.sentSeq) return Promise.resolve();
    return new Promise((resolve) => session.seqWaiters.push({ seq, resolve }));
  }

  // ---- bookkeeping ---------------------------------------------------------------------------

  private async workspaceOf(cwd: string): Promise<Workspace> {
    if (!cwd.startsWith('/')) throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path, not "${cwd}".`);
    let workspace: Workspace;
    try {
      workspace = await this.options.workspaces.forCwd(cwd);
    } catch (error) {
      throw RequestError.internalError(
        { cwd, ...(isParleyError(error) ? { code: error.code } : {}) },
        `Parley could not open the data folder for ${cwd}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!this.subscribed.has(workspace)) {
      this.subscribed.add(workspace);
      workspace.manager.on('session:event', ({ sessionId, event }) => this.onEvent(workspace, sessionId, event));
    }
    return workspace;
  }

  /** The role (ACP mode) and back end a stored session opens with: its own, when this workspace has them. */
  private async choicesOf(
    workspace: Workspace,
    record: SessionRecord,
  ): Promise<{ roles: RoleInfo[]; role: string; backend: string }> {
    const { roles } = await workspace.catalog.loadRoles(workspace.project);
    const named = record.scope.kind === 'draft' ? record.scope.role : record.agentType;
    const role = roles.some((entry) => entry.name === named) ? named : workspace.project.defaultRole;
    const backend = workspace.backends.backendNames.includes(record.type)
      ? record.type
      : workspace.backends.defaultBackend;
    return { roles, role, backend };
  }

  private async record(workspace: Workspace, sessionId: string): Promise<SessionRecord> {
    try {
      return await workspace.manager.getSession(sessionId);
    } catch (error) {
      if (isParleyError(error, 'SESSION_NOT_FOUND') || isParleyError(error, 'INVALID_ID'))
        throw RequestError.resourceNotFound(sessionId);
      throw error;
    }
  }

  private require(sessionId: string): AcpSession {
    const session = this.sessions.get(sessionId);
    if (!session) throw RequestError.resourceNotFound(sessionId);
    return session;
  }

  private async open(
    sessionId: string,
    cwd: string,
    workspace: Workspace,
    mcpServers: McpServer[],
    choices: { role: string; backend: string },
  ): Promise<AcpSession> {
    const editorTools = await connectEditorTools(mcpServers, {
      cwd,
      clientName: 'parley',
      clientVersion: this.options.version,
    });
    for (const problem of editorTools.problems) this.options.log(problem);
    const files = clientFilesOf(this.options.client(), sessionId, this.clientCapabilities);
    const session: AcpSession = {
      sessionId,
      cwd,
      workspace,
      role: choices.role,
      backend: choices.backend,
      editorTools,
      permissions: createPermissionBridge(this.options.client(), sessionId, {
        announce: async (toolCall) => {
          for (const update of session.live.announce(toolCall)) this.send(session, update);
          // The tool call reaches the editor before the question about it.
          await this.outbox;
        },
        update: (update) => this.send(session, { sessionUpdate: 'tool_call_update', ...update }),
      }),
      ...(files ? { files } : {}),
      live: new LiveUpdates(cwd, this.clientUpdates()),
      sentSeq: -1,
      seqWaiters: [],
    };
    this.sessions.set(sessionId, session);
    return session;
  }

  /** What the client said at initialize it takes beyond the baseline updates. */
  private clientUpdates(): ClientUpdates {
    return { compaction: this.clientCapabilities?.session?.compaction != null };
  }

  private async forget(session: AcpSession): Promise<void> {
    this.sessions.delete(session.sessionId);
    await session.editorTools.close();
  }

  private configOptions(session: AcpSession): SessionConfigOption[] {
    let description;
    try {
      description = this.backendOf(session).describe();
    } catch {
      description = { name: session.backend, continuity: 'managed' as const, models: [] };
    }
    return configOptionsOf(session.workspace.backends.backendNames, description, {
      backend: session.backend,
      ...(session.model ? { model: session.model } : {}),
    });
  }
}
