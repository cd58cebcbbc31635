import { randomUUID } from 'node:crypto';
import type { AgentBackend } from '../../src/backends/index.js';
import { DraftError, type AgentInfo, type DraftService, type DraftServiceEvents, type DraftServiceOptions, type TaskInfo } from '../../src/draft/index.js';
import { runTurn, TypedEmitter } from '../../src/sessions/index.js';

/**
 * A DraftService for the server's protocol tests while src/draft lands: real sessions and real
 * turns (SessionManager + runTurn + the scripted back end), in-memory drafts and tasks. It follows
 * DRAFT-SERVICE-CONTRACT.md, so the server is tested against the contract, not against this file.
 */
export function fakeDraftService(backend: AgentBackend): (options: DraftServiceOptions) => Promise<DraftService> {
  return (options) => Promise.resolve(new FakeDraftService(options, backend));
}

interface FakeDraft {
  sessionId: string;
  role: string;
  project: string;
  taskSlug: string;
  channelId: string;
  startedAt: string;
  lastActivity: string;
  turnCount: number;
  running?: { controller: AbortController; done: Promise<void> };
}

const ROLES = ['product-analyst', 'dev', 'qa'];

class FakeDraftService implements DraftService {
  private readonly emitter = new TypedEmitter<DraftServiceEvents>();
  private readonly drafts = new Map<string, FakeDraft>();
  private readonly channelOfSession = new Map<string, string>();
  private readonly tasks = new Map<string, TaskInfo>();
  private readonly project: string;
  private readonly off: () => void;

  constructor(
    private readonly options: DraftServiceOptions,
    private readonly backend: AgentBackend,
  ) {
    this.project = 'demo';
    const now = new Date().toISOString();
    this.tasks.set('first-task', { project: 'demo', slug: 'first-task', title: 'First task', description: '', state: 'open', taskDir: `${options.dataDir}/tasks/first-task`, createdAt: now, updatedAt: now });
    this.off = options.manager.on('session:event', ({ sessionId, event }) => {
      const channelId = this.channelOfSession.get(sessionId);
      if (channelId) this.emitter.emit('channel_message', { channelId, sessionId, event });
    });
  }

  on<K extends keyof DraftServiceEvents>(name: K, handler: (payload: DraftServiceEvents[K]) => void): () => void {
    return this.emitter.on(name, handler);
  }

  listProjects() {
    return Promise.resolve([{ name: this.project, path: this.options.projectRoot, dataDir: this.options.dataDir ?? '', current: true }]);
  }
  createProject(params: { name: string; path?: string; description?: string }) {
    return Promise.resolve({ name: params.name, path: params.path ?? `/projects/${params.name}`, dataDir: `/projects/${params.name}/.parley`, current: false, ...(params.description ? { description: params.description } : {}) });
  }
  listTasks(params: { project: string }) {
    this.requireProject(params.project);
    return Promise.resolve([...this.tasks.values()]);
  }
  createTask(params: { project: string; title: string; description?: string; slug?: string }) {
    this.requireProject(params.project);
    const slug = params.slug ?? params.title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    const now = new Date().toISOString();
    const task: TaskInfo = { project: params.project, slug, title: params.title, description: params.description ?? '', state: 'open', taskDir: `/tasks/${slug}`, createdAt: now, updatedAt: now };
    this.tasks.set(slug, task);
    return Promise.resolve(task);
  }
  listRoles() {
    return Promise.resolve({
      roles: ROLES.map((name) => ({ name, description: name, permissions: name === 'product-analyst' ? ['agent-draft' as const, 'projects-list' as const, 'projects-create' as const] : [], instructions: '', source: 'builtin' })),
      errors: [{ file: 'roles/broken.md', field: 'permissions.0', message: 'Invalid option' }],
    });
  }

  async draft(params: { channelId: string; role: string; project: string; task: string }) {
    if (this.drafts.has(params.channelId)) throw new DraftError('DRAFT_ALREADY_ACTIVE', `Channel ${params.channelId} already has a draft; undraft first.`, { fault: 'user' });
    if (!ROLES.includes(params.role)) throw new DraftError('NOT_FOUND', `No role "${params.role}".`, { fault: 'user' });
    this.requireProject(params.project);
    if (!this.tasks.has(params.task)) throw new DraftError('NOT_FOUND', `No task "${params.task}".`, { fault: 'user' });
    const session = await this.options.manager.createSession({
      scope: { kind: 'draft', role: params.role, project: params.project, taskSlug: params.task, channelId: params.channelId },
      agentType: params.role,
      backend: this.backend.describe().name,
    });
    const now = new Date().toISOString();
    this.drafts.set(params.channelId, { sessionId: session.sessionId, role: params.role, project: params.project, taskSlug: params.task, channelId: params.channelId, startedAt: now, lastActivity: now, turnCount: 0 });
    this.channelOfSession.set(session.sessionId, params.channelId);
    return { sessionId: session.sessionId, taskSlug: params.task, project: params.project };
  }

  async undraft(params: { channelId: string }) {
    const draft = this.requireDraft(params.channelId);
    await draft.running?.done;
    this.drafts.delete(params.channelId);
    this.channelOfSession.delete(draft.sessionId);
    return { sessionId: draft.sessionId, taskSlug: draft.taskSlug, turns: draft.turnCount, cost: 0, durationMs: Date.now() - Date.parse(draft.startedAt) };
  }

  getDraftStatus(params: { channelId: string }) {
    const draft = this.drafts.get(params.channelId);
    if (!draft) return Promise.resolve({ active: false });
    return Promise.resolve({
      active: true,
      session: {
        sessionId: draft.sessionId, role: draft.role, project: draft.project, taskSlug: draft.taskSlug, channelId: draft.channelId, backend: this.backend.describe().name,
        status: 'active' as const, turnCount: draft.turnCount, costUsd: 0, costUnknown: false, lastInputTokens: 0, lastOutputTokens: 0, contextWindow: 200_000, maxOutputTokens: 8_192,
        contextPct: 0, startedAt: draft.startedAt, lastActivity: draft.lastActivity, turnRunning: draft.running !== undefined, activeAgents: 0,
      },
    });
  }

  async submitPrompt(params: { channelId: string; content: string; role?: string; taskSlug?: string }) {
    const draft = this.drafts.get(params.channelId);
    if (!draft) return this.dispatch(params);
    if (draft.running) throw new DraftError('TURN_IN_PROGRESS', 'A turn is running; wait for it or cancel it.', { fault: 'user' });
    const controller = new AbortController();
    const handle = await runTurn(this.options.manager, draft.sessionId, { backend: this.backend, prompt: params.content, signal: controller.signal });
    const seq = await this.options.manager.store.lastSeq(draft.sessionId);
    const done = (async () => {
      for await (const _event of handle.events) {
        // Events reach the channel through the session:event listener.
      }
      draft.turnCount += 1;
      draft.lastActivity = new Date().toISOString();
      draft.running = undefined;
      this.emitter.emit('draft_status', { channelId: draft.channelId, sessionId: draft.sessionId, role: draft.role, turnCount: draft.turnCount, costUsd: 0, contextPct: 0, lastActivity: draft.lastActivity });
    })();
    draft.running = { controller, done };
    return { mode: 'draft' as const, accepted: true as const, sessionId: draft.sessionId, seq };
  }

  cancel(params: { channelId: string }) {
    const draft = this.requireDraft(params.channelId);
    if (!draft.running) return Promise.resolve({ cancelled: false });
    draft.running.controller.abort();
    return draft.running.done.then(() => ({ cancelled: true }));
  }

  listAgents(params: { channelId?: string }): Promise<AgentInfo[]> {
    const agents = [...this.drafts.values()]
      .filter((draft) => params.channelId === undefined || draft.channelId === params.channelId)
      .map((draft): AgentInfo => ({ agentId: draft.sessionId, kind: 'draft', role: draft.role, project: draft.project, taskSlug: draft.taskSlug, channelId: draft.channelId, status: draft.running ? 'running' : 'queued', sessionId: draft.sessionId, startedAt: draft.startedAt, costUsd: 0 }));
    return Promise.resolve(agents);
  }

  killAgent(params: { agentId: string }) {
    return Promise.reject(new DraftError('NOT_FOUND', `No worker agent "${params.agentId}".`, { fault: 'user' }));
  }

  async settled(params: { channelId: string }): Promise<void> {
    await this.drafts.get(params.channelId)?.running?.done;
  }

  createMcpServer(): Promise<never> {
    return Promise.reject(new DraftError('UNSUPPORTED', 'The fake draft service has no MCP server.'));
  }

  recover() {
    return Promise.resolve({ recovered: 0, failed: [] });
  }

  async close() {
    this.off();
    for (const draft of this.drafts.values()) draft.running?.controller.abort();
    await Promise.all([...this.drafts.values()].map((draft) => draft.running?.done));
  }

  private async dispatch(params: { channelId: string; content: string; role?: string }) {
    if (!params.role) throw new DraftError('NO_ACTIVE_DRAFT', 'No active draft on this channel and no `role` to dispatch to.', { fault: 'user' });
    const started = Date.now();
    const session = await this.options.manager.createSession({ scope: { kind: 'draft', role: params.role }, agentType: params.role });
    const handle = await runTurn(this.options.manager, session.sessionId, { backend: this.backend, prompt: params.content });
    let summary = '';
    for await (const event of handle.events) if (event.type === 'block_complete' && event.block.type === 'assistant_text') summary = event.block.content;
    const agentId = randomUUID();
    return {
      mode: 'dispatch' as const,
      sessionId: session.sessionId,
      result: {
        agentId, role: params.role, status: 'completed' as const, timedOut: false, summary, usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        costUsd: 0, costUnknown: false, durationMs: Date.now() - started, attempts: 1, sessionId: session.sessionId, conversationId: 'main',
      },
    };
  }

  private requireProject(project: string): void {
    if (project !== this.project) throw new DraftError('NOT_FOUND', `No project "${project}".`, { fault: 'user' });
  }

  private requireDraft(channelId: string): FakeDraft {
    const draft = this.drafts.get(channelId);
    if (!draft) throw new DraftError('NO_ACTIVE_DRAFT', `Channel ${channelId} has no active draft; draft first.`, { fault: 'user' });
    return draft;
  }
}
