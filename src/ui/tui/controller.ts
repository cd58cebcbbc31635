import { firstDraftNotice, type StreamEvent } from '../../conversation/index.js';
import {
  draftingOf,
  isRpcError,
  RpcErrorCode,
  type ConnectionState,
  type DraftStatus,
  type GoalStatus,
  type MethodResult,
  type ProtocolClient,
} from '../../protocol/index.js';
import { backendCommand } from './backend-command.js';
import { sayInConversation } from './conversation-notes.js';
import { COMMANDS, helpNote, parseInput, suggestCommand } from './commands.js';
import { agentsReport, contextReport, rolesReport, sessionsReport } from './reports.js';
import { RunQuestions } from './run-questions.js';
import { formatCost, formatDuration, oneLine, plural } from './format.js';
import { initialViewState, reduceView, type NoteLine, type ViewAction, type ViewState } from './view-state.js';

export interface ControllerOptions {
  client: ProtocolClient;
  /** `/quit` and Ctrl+C. */
  onExit: () => void;
  clock?: () => number;
  /** Finished blocks printed when a draft's history loads (older ones are summarized in one line). */
  historyLimit?: number;
  /** Waits between failed first connections (default 1 s doubling to 10 s). */
  retryDelayMs?: (attempt: number) => number;
}

const EVENTS_PAGE = 5_000;
const DEFAULT_HISTORY_LIMIT = 400;

/**
 * Everything the terminal UI does over the protocol: it listens to the client, folds what it hears
 * into the view state with `reduceView`, runs the slash commands and sends messages. It holds the
 * state itself (a small external store `useParley` subscribes to), so a command that dispatches
 * and then reads sees its own change. It never touches files or the server directly: the TUI only
 * consumes the protocol.
 */
export class TuiController {
  private readonly client: ProtocolClient;
  private current: ViewState;
  private readonly listeners = new Set<() => void>();
  private readonly clock: () => number;
  private readonly historyLimit: number;
  private readonly retryDelay: (attempt: number) => number;
  private readonly unsubscribe: Array<() => void> = [];
  private readonly batches = new Map<string, StreamEvent[]>();
  private flushScheduled = false;
  private stopped = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** The draft session whose history is loading or loaded, so a refresh does not load it twice. */
  private loadedSession: string | undefined;
  /** The session followed for its compaction notices (the draft's). */
  private followed: string | undefined;
  /** Compaction notices of the draft's session so far: tells whether one overtook a status answer. */
  private compactionNotices = 0;
  /** This terminal's /compact is in flight. */
  private compacting = false;
  private refreshing: Promise<void> | undefined;
  /** The questions runs of the project wait on (durable runs), shown above the title bar. */
  readonly runs: RunQuestions;
  /** `/backend <name>`: the back end the next message moves the draft to (sent with that `submit_prompt`). */
  private nextBackend: string | undefined;

  constructor(private readonly options: ControllerOptions) {
    this.client = options.client;
    this.runs = new RunQuestions(options.client);
    this.current = initialViewState();
    this.clock = options.clock ?? Date.now;
    this.historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    this.retryDelay = options.retryDelayMs ?? ((attempt) => Math.min(10_000, 1_000 * 2 ** attempt));
  }

  /** The current view state. */
  readonly getState = (): ViewState => this.current;

  /** Calls `listener` after every change of the view state; returns the unsubscribe function. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Folds an action into the view state (the one reducer) and tells the subscribers. */
  dispatch(action: ViewAction): void {
    const next = reduceView(this.current, action);
    if (next === this.current) return;
    this.current = next;
    for (const listener of [...this.listeners]) listener();
  }

  private state(): ViewState {
    return this.current;
  }

  /** Listens to the client and connects (retrying until the first connection is up; the client reconnects after that). */
  start(): void {
    const client = this.client;
    this.unsubscribe.push(
      client.onStateChange((state) => this.connectionChanged(state)),
      client.on('channel_message', (message) => this.queueEvent(message.sessionId, message.event)),
      client.on('draft_status', (status) =>
        this.draftStatusPushed(status.sessionId, () => this.dispatch({ type: 'draft_notification', status })),
      ),
      client.on('context_compacted', () => this.dispatch({ type: 'activity_end', id: 'compact' })),
      // The draft's session is followed for these (see followCompaction): a compaction started anywhere shows here.
      client.on('compaction_started', ({ sessionId }) => {
        if (sessionId !== this.state().draft?.sessionId) return;
        this.compactionNotices += 1;
        if (!this.state().activities.some((activity) => activity.id === 'compact'))
          this.startCompactionActivity(this.clock());
      }),
      client.on('compaction_completed', ({ sessionId }) => this.compactionEnded(sessionId)),
      client.on('compaction_failed', ({ sessionId }) => this.compactionEnded(sessionId)),
      client.on('goal_status', ({ sessionId, goal }) => this.dispatch({ type: 'goal_status', sessionId, goal })),
      client.on('agent_status', ({ agent }) => {
        this.dispatch({ type: 'agent', agent });
        const draft = this.state().draft;
        // Another terminal on this channel undrafted it.
        if (
          agent.kind === 'draft' &&
          draft?.sessionId === agent.sessionId &&
          agent.status !== 'running' &&
          agent.endedAt !== undefined
        )
          this.closeDraftLocally();
      }),
      // A rewind, a branch switch or an edit: what is shown past the point is another branch, so the draft is read again.
      client.on('history_changed', ({ sessionId, reason }) => {
        if (this.state().draft?.sessionId !== sessionId) return;
        this.note([
          {
            text: `The conversation's history changed (${reason.replace('_', ' ')}); showing its active branch.`,
            tone: 'dim',
          },
        ]);
        void this.client
          .request('get_draft_status')
          .then((status) => (status.session ? this.loadDraft(status.session) : undefined))
          .catch((error: unknown) => this.error(error instanceof Error ? error.message : String(error)));
      }),
      client.on('draft_closed', (closed) => {
        if (this.state().draft?.sessionId !== closed.sessionId) return;
        this.note([{ text: `The draft was closed by Parley: ${closed.message}`, tone: 'warning' }]);
        this.closeDraftLocally();
      }),
    );
    this.runs.start();
    if (client.state !== 'disconnected') this.dispatch({ type: 'connection', state: client.state });
    this.connect(0);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    for (const off of this.unsubscribe.splice(0)) off();
    this.runs.stop();
  }

  private connect(attempt: number): void {
    if (this.stopped) return;
    this.dispatch({
      type: 'activity_start',
      activity: { id: 'connect', label: attempt === 0 ? 'Connecting' : 'Connecting again', startedAt: this.clock() },
    });
    this.client.connect().then(
      () => undefined,
      (error: unknown) => {
        if (this.stopped) return;
        const delay = this.retryDelay(attempt);
        this.dispatch({
          type: 'connection',
          state: 'disconnected',
          error: `${messageOf(error)} Retrying in ${formatDuration(delay)}.`,
        });
        this.dispatch({ type: 'activity_end', id: 'connect' });
        this.retryTimer = setTimeout(() => this.connect(attempt + 1), delay);
      },
    );
  }

  private connectionChanged(state: ConnectionState): void {
    this.dispatch({ type: 'connection', state });
    if (state === 'reconnecting')
      this.dispatch({
        type: 'activity_start',
        activity: { id: 'connect', label: 'Reconnecting', startedAt: this.clock() },
      });
    if (state !== 'connected') return;
    this.dispatch({ type: 'activity_end', id: 'connect' });
    this.refresh().catch((error: unknown) => this.error(`Could not read the server's state: ${messageOf(error)}`));
    this.runs.refresh().catch((error: unknown) => this.error(`Could not read the workflow runs: ${messageOf(error)}`));
  }

  /** After every (re)connection: the channel, projects, the draft and its history, agents, names for completion. */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    const client = this.client;
    const info = await client.request('server_info');
    this.dispatch({ type: 'server', channelId: info.channelId, projectRoot: info.projectRoot });
    const [projects, status, agents] = await Promise.all([
      client.request('list_projects'),
      client.request('get_draft_status'),
      client.request('list_agents'),
    ]);
    const names = projects.projects.map((project) => project.name);
    const chosen = this.state().project;
    if (chosen === undefined || !names.includes(chosen)) {
      const current = projects.projects.find((project) => project.current) ?? projects.projects[0];
      this.dispatch({
        type: 'select',
        project: current?.name ?? null,
        ...(chosen !== undefined ? { task: null } : {}),
      });
    }
    this.dispatch({ type: 'catalog', projects: names });
    this.dispatch({ type: 'agents', agents: agents.agents });
    const draft = this.state().draft;
    if (status.active && status.session) {
      if (this.loadedSession === status.session.sessionId) {
        this.dispatch({ type: 'draft_status', status: status.session });
        // A compaction may have started or ended while the link was down: its notices are not replayed.
        await this.followCompaction(status.session.sessionId);
      } else await this.loadDraft(status.session);
    } else if (draft) {
      this.note([{ text: `The ${draft.role} draft was closed while this terminal was away.`, tone: 'warning' }]);
      this.closeDraftLocally();
    }
    await this.refreshCatalog();
  }

  private async refreshCatalog(): Promise<void> {
    const project = this.state().project;
    const [roles, tasks] = await Promise.all([
      this.client.request('list_roles', project !== undefined ? { project } : {}),
      project !== undefined ? this.client.request('list_tasks', { project }) : Promise.resolve(undefined),
    ]);
    this.dispatch({
      type: 'catalog',
      roles: roles.roles.map((role) => role.name),
      ...(tasks ? { tasks: tasks.tasks.map((task) => task.slug) } : {}),
    });
  }

  /** Rebuilds the draft's conversation from its log, then follows it live (the client resumes from its last `seq`). */
  private async loadDraft(status: DraftStatus): Promise<void> {
    this.loadedSession = status.sessionId;
    this.dispatch({ type: 'draft_loading', status });
    const events: StreamEvent[] = [];
    let afterSeq = -1;
    for (;;) {
      const page = await this.client.request('get_events', {
        sessionId: status.sessionId,
        afterSeq,
        limit: EVENTS_PAGE,
      });
      events.push(...page.events);
      const last = page.events.at(-1);
      if (!page.hasMore || !last) break;
      afterSeq = last.seq;
    }
    // Flush live events first: they land in `pending` and are merged, in `seq` order, with the history.
    this.flush();
    this.dispatch({
      type: 'history_loaded',
      sessionId: status.sessionId,
      events,
      historyLimit: this.historyLimit,
      now: this.clock(),
    });
    this.client.resumeFrom('channel_message', status.sessionId, events.at(-1)?.seq ?? -1, status.channelId);
    await Promise.all([this.loadCompactionPoint(status), this.followCompaction(status.sessionId)]);
  }

  /**
   * Follows the draft's session for its `compaction_*` notices (the client renews this after a
   * reconnect), then reads whether a compaction is running now: one that started before this terminal
   * connected shows the same spinner as `/compact`, timed from the server's start.
   */
  private async followCompaction(sessionId: string): Promise<void> {
    if (this.followed !== undefined && this.followed !== sessionId) this.unfollow();
    const notices = this.compactionNotices;
    try {
      if (this.followed !== sessionId) {
        // Notices only: the draft's events already come as `channel_message`.
        await this.client.subscribe([sessionId], { events: false });
        this.followed = sessionId;
      }
      const status = await this.client.request('get_compaction_status', { sessionId });
      // A notice that came meanwhile is newer than this answer; a /compact of this terminal ends its own spinner.
      if (notices !== this.compactionNotices || this.state().draft?.sessionId !== sessionId || this.compacting) return;
      const startedAt = status.running && status.startedAt !== undefined ? Date.parse(status.startedAt) : Number.NaN;
      if (status.running) this.startCompactionActivity(Number.isNaN(startedAt) ? this.clock() : startedAt);
      else this.dispatch({ type: 'activity_end', id: 'compact' });
    } catch {
      // An older server without get_compaction_status: the spinner shows only for this terminal's /compact.
    }
  }

  private unfollow(): void {
    const sessionId = this.followed;
    this.followed = undefined;
    if (sessionId !== undefined) this.client.unsubscribe([sessionId]).catch(() => undefined);
  }

  private startCompactionActivity(startedAt: number): void {
    this.dispatch({ type: 'activity_start', activity: { id: 'compact', label: 'Compacting the context', startedAt } });
  }

  private compactionEnded(sessionId: string): void {
    if (sessionId !== this.state().draft?.sessionId) return;
    this.compactionNotices += 1;
    // This terminal's /compact ends its spinner itself, with its result.
    if (!this.compacting) this.dispatch({ type: 'activity_end', id: 'compact' });
  }

  /** Where a managed session compacts, as a percent of the window, for the title bar's colour. */
  private async loadCompactionPoint(status: DraftStatus): Promise<void> {
    if (status.contextWindow <= 0) return;
    try {
      const preview = await this.client.request('preview_request', { sessionId: status.sessionId });
      if (preview.threshold !== undefined)
        this.dispatch({
          type: 'compaction_point',
          sessionId: status.sessionId,
          compactionPct: (preview.threshold / status.contextWindow) * 100,
        });
    } catch {
      // Native back ends compact on their own: the window is the point (see contextLevel).
    }
  }

  private draftStatusPushed(sessionId: string, apply: () => void): void {
    if (this.state().draft?.sessionId === sessionId) {
      apply();
      return;
    }
    // A draft this terminal has not seen (drafted from another terminal on the same channel).
    this.refresh().catch((error: unknown) => this.error(messageOf(error)));
  }

  private closeDraftLocally(): void {
    this.loadedSession = undefined;
    this.unfollow();
    this.dispatch({ type: 'draft_closed' });
  }

  private queueEvent(sessionId: string, event: StreamEvent): void {
    const batch = this.batches.get(sessionId);
    if (batch) batch.push(event);
    else this.batches.set(sessionId, [event]);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // A replay after a reconnect delivers thousands of events in one go: one render for all of them.
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.batches.size === 0) return;
    const batches = [...this.batches];
    this.batches.clear();
    for (const [sessionId, events] of batches) this.dispatch({ type: 'events', sessionId, events, now: this.clock() });
  }

  // ---- input -----------------------------------------------------------------------------------

  /** A line from the prompt: a slash command or a message for the draft. */
  async submit(line: string): Promise<void> {
    const parsed = parseInput(line);
    // Right after connecting, the active project and the draft are still being read: wait for them.
    if (parsed.kind !== 'empty' && this.refreshing) await this.refreshing.catch(() => undefined);
    switch (parsed.kind) {
      case 'empty':
        return;
      case 'unknown': {
        const suggestion = suggestCommand(parsed.name);
        this.error(
          `Unknown command /${parsed.name}.${suggestion ? ` Did you mean /${suggestion}?` : ''} Commands: ${COMMANDS.map((command) => `/${command.name}`).join(' ')} (/help explains them).`,
        );
        return;
      }
      case 'message':
        return this.sendMessage(parsed.text);
      case 'command':
        try {
          await this.runCommand(parsed.name, parsed.args);
        } catch (error) {
          this.error(messageOf(error));
        }
        return;
    }
  }

  /** Esc: interrupts the running turn. */
  async interrupt(): Promise<void> {
    if (!this.state().turn) return;
    try {
      const result = await this.client.request('cancel');
      if (!result.cancelled) this.dispatch({ type: 'turn_ended' });
    } catch (error) {
      this.error(`Could not interrupt the turn: ${messageOf(error)}`);
    }
  }

  private async sendMessage(text: string): Promise<void> {
    const state = this.state();
    if (state.turn) {
      this.error('The agent is still answering. Wait for it, or press Esc to interrupt it.');
      return;
    }
    if (!state.draft) return this.sendFirstMessage(text);
    this.dispatch({ type: 'turn_started', at: this.clock() });
    try {
      const backend = this.nextBackend;
      this.nextBackend = undefined;
      await this.client.request(
        'submit_prompt',
        { content: text, ...(backend !== undefined ? { backend } : {}) },
        { timeoutMs: 0 },
      );
    } catch (error) {
      this.dispatch({ type: 'turn_ended' });
      if (isRpcError(error, RpcErrorCode.NO_ACTIVE_DRAFT)) {
        this.error('The server has no draft on this channel any more. Draft again with /draft <role>.');
        this.closeDraftLocally();
        return;
      }
      this.error(messageOf(error));
    }
  }

  /**
   * A message with no draft starts one in the same call (`submit_prompt { draft }`): the server
   * drafts the project's default role into the selected task, or into a new task named after the
   * message, and one line says so. Its errors are the server's, with the command that helps here.
   * Messages typed meanwhile meet the turn this one starts, so they draft nothing.
   */
  private async sendFirstMessage(text: string): Promise<void> {
    const { project, task } = this.state();
    if (project === undefined) {
      this.error(
        'No active project, so there is nowhere to draft an agent for your message. Choose one with /project <name> (/project lists them), then send it again.',
      );
      return;
    }
    this.dispatch({ type: 'turn_started', at: this.clock() });
    this.dispatch({
      type: 'activity_start',
      activity: { id: 'draft', label: 'Drafting an agent for your message', startedAt: this.clock() },
    });
    try {
      const answer = await this.client.request(
        'submit_prompt',
        { content: text, draft: { project, ...(task !== undefined ? { task } : {}) } },
        { timeoutMs: 0 },
      );
      if (answer.mode === 'draft' && answer.drafted) {
        const { drafted } = answer;
        if (drafted.createdTask) this.taskCreated(drafted.taskSlug);
        this.note([
          {
            text: firstDraftNotice({ ...drafted, undraft: '/undraft' }),
            tone: 'success',
          },
        ]);
      }
      await this.loadChannelDraft();
    } catch (error) {
      this.dispatch({ type: 'turn_ended' });
      const drafting = draftingOf(error);
      if (drafting?.createdTask && drafting.taskSlug !== undefined) this.taskCreated(drafting.taskSlug);
      // Drafted, but the message was refused: the draft is there to show.
      if (drafting?.step === 'submit') await this.loadChannelDraft().catch(() => undefined);
      const help =
        drafting?.step === 'project'
          ? ' Choose a project with /project <name> (/project lists them), then send it again.'
          : drafting?.step === 'task' || drafting?.step === 'draft'
            ? ' Draft a role with /draft <role> (/roles lists them), then send it again.'
            : '';
      this.error(`${messageOf(error)}${help}`);
    } finally {
      this.dispatch({ type: 'activity_end', id: 'draft' });
    }
  }

  /** The task a first message made is the active one (a /draft after a failure goes there). */
  private taskCreated(task: string): void {
    this.dispatch({ type: 'select', task });
    this.dispatch({ type: 'catalog', tasks: [...this.state().tasks.filter((slug) => slug !== task), task] });
  }

  /** Loads the channel's draft unless it is loaded (a refresh after its `draft_status` may have done it). */
  private async loadChannelDraft(): Promise<void> {
    const status = await this.client.request('get_draft_status');
    if (status.session && this.loadedSession !== status.session.sessionId) await this.loadDraft(status.session);
  }

  private async runCommand(name: string, args: string): Promise<void> {
    switch (name) {
      case 'help':
        return this.note(helpNote());
      case 'quit':
        this.options.onExit();
        return;
      case 'draft':
        return this.draft(args);
      case 'undraft':
        return this.undraft(args);
      case 'context':
        return this.context(args);
      case 'project':
        return this.project(args);
      case 'task':
        return this.task(args);
      case 'roles':
        return this.roles(args);
      case 'sessions':
        return this.sessions(args);
      case 'rename':
      case 'tag':
      case 'pin':
        return this.fileSession(name, args);
      case 'search':
        return this.searchMessages(args);
      case 'compact':
        return this.compact(args);
      case 'agents':
        return this.agents(args);
      case 'runs':
        return this.note(await this.runs.report(this.clock()));
      case 'answer':
        return this.note(await this.runs.answer(args));
      case 'backend': {
        // backend-command.ts: the back end the next message moves the draft to.
        const { lines, next } = backendCommand(this.state().draft, args, this.nextBackend);
        this.nextBackend = next;
        return this.note(lines);
      }
      case 'goal':
        return this.goal(args);
      case 'say':
        return this.note(await sayInConversation(this.client, this.state().conversation?.blocks ?? [], args));
      default:
        this.error(`/${name} is not available.`);
    }
  }

  private noArguments(command: string, args: string): boolean {
    if (args === '') return true;
    this.error(`/${command} takes no arguments (got "${oneLine(args, 40)}"). Usage: /${command}`);
    return false;
  }

  private async draft(args: string): Promise<void> {
    const state = this.state();
    const roles = state.roles.length > 0 ? ` Roles: ${state.roles.join(', ')}.` : ' See /roles.';
    if (args === '' || /\s/.test(args)) {
      this.error(`/draft needs one role: /draft <role>.${roles}`);
      return;
    }
    if (state.draft) {
      this.error(`${state.draft.role} is already drafted on task ${state.draft.taskSlug}. /undraft it first.`);
      return;
    }
    if (state.project === undefined) {
      this.error('No active project. List them with /project and choose one with /project <name>.');
      return;
    }
    if (state.task === undefined) {
      this.error(
        `No active task in project ${state.project}. Create one with /task new <title>, or choose one with /task select <slug> (/task lists them).`,
      );
      return;
    }
    this.dispatch({
      type: 'activity_start',
      activity: { id: 'draft', label: `Drafting ${args}`, startedAt: this.clock() },
    });
    try {
      const drafted = await this.client.request('draft', { role: args, project: state.project, task: state.task });
      const status = await this.client.request('get_draft_status');
      this.note([
        {
          text: `Drafted ${args} on task ${drafted.taskSlug} (project ${drafted.project}). Type a message to talk to it.`,
          tone: 'success',
        },
      ]);
      if (status.session) await this.loadDraft(status.session);
    } catch (error) {
      if (isRpcError(error, RpcErrorCode.DRAFT_ALREADY_ACTIVE))
        this.error(`${error.message} (/undraft closes this channel's draft.)`);
      else this.error(messageOf(error));
    } finally {
      this.dispatch({ type: 'activity_end', id: 'draft' });
    }
  }

  private async undraft(args: string): Promise<void> {
    if (!this.noArguments('undraft', args)) return;
    const role = this.state().draft?.role;
    try {
      const summary = await this.client.request('undraft');
      const duration = summary.durationMs !== undefined ? `, ${formatDuration(summary.durationMs)}` : '';
      this.note([
        {
          text: `Undrafted ${role ?? 'the agent'} (task ${summary.taskSlug}): ${plural(summary.turns, 'turn')}, ${formatCost(summary.cost)}${duration}.`,
          tone: 'success',
        },
      ]);
      this.closeDraftLocally();
    } catch (error) {
      if (isRpcError(error, RpcErrorCode.NO_ACTIVE_DRAFT)) {
        this.error('No agent is drafted on this channel. Draft one with /draft <role>.');
        if (this.state().draft) this.closeDraftLocally();
        return;
      }
      throw error;
    }
  }

  private async context(args: string): Promise<void> {
    if (!this.noArguments('context', args)) return;
    const status = await this.client.request('get_draft_status');
    if (!status.session) {
      this.error('No agent is drafted, so there is no context to show. Draft one with /draft <role>.');
      return;
    }
    const session = status.session;
    this.dispatch({ type: 'draft_status', status: session });
    let preview: MethodResult<'preview_request'> | undefined;
    try {
      preview = await this.client.request('preview_request', { sessionId: session.sessionId });
    } catch {
      preview = undefined;
    }
    this.note(contextReport(session, preview));
  }

  private async project(args: string): Promise<void> {
    const { projects } = await this.client.request('list_projects');
    this.dispatch({ type: 'catalog', projects: projects.map((project) => project.name) });
    if (args === '') {
      const active = this.state().project;
      const width = Math.max(...projects.map((project) => project.name.length), 4);
      this.note([
        { text: 'Projects', bold: true },
        ...projects.map((project) => ({
          text: `${project.name === active ? '›' : ' '} ${project.name.padEnd(width)}  ${project.path}${project.current ? '  (this folder)' : ''}`,
          ...(project.name === active ? { tone: 'accent' as const } : {}),
        })),
        { text: 'Choose one with /project <name>.', tone: 'dim' },
      ]);
      return;
    }
    if (/\s/.test(args)) {
      this.error(
        `/project takes one name: /project <name>. Projects: ${projects.map((project) => project.name).join(', ')}.`,
      );
      return;
    }
    const found = projects.find((project) => project.name === args);
    if (!found) {
      this.error(`No project "${args}". Projects: ${projects.map((project) => project.name).join(', ')}.`);
      return;
    }
    const changed = this.state().project !== found.name;
    this.dispatch({ type: 'select', project: found.name, ...(changed ? { task: null } : {}) });
    this.note([
      {
        text: `Active project: ${found.name} (${found.path}).${changed ? ' Choose a task with /task select <slug> or create one with /task new <title>.' : ''}`,
        tone: 'success',
      },
    ]);
    await this.refreshCatalog();
  }

  private async task(args: string): Promise<void> {
    const project = this.state().project;
    if (project === undefined) {
      this.error('No active project. Choose one with /project <name> (/project lists them).');
      return;
    }
    const [verb = '', ...rest] = args.split(/\s+/);
    const value = args.slice(verb.length).trim();
    if (verb === '') return this.listTasks(project);
    if (verb === 'new') {
      if (value === '') {
        this.error('/task new needs a title: /task new <title>.');
        return;
      }
      const { task } = await this.client.request('create_task', { project, title: value });
      this.dispatch({ type: 'select', task: task.slug });
      this.dispatch({
        type: 'catalog',
        tasks: [...this.state().tasks.filter((slug) => slug !== task.slug), task.slug],
      });
      this.note([
        {
          text: `Created task ${task.slug} ("${task.title}") in project ${project}; it is the active task. /draft <role> to start on it.`,
          tone: 'success',
        },
      ]);
      return;
    }
    if (verb === 'select') {
      if (value === '' || rest.length !== 1) {
        this.error('/task select takes one task slug: /task select <slug> (/task lists them).');
        return;
      }
      const { tasks } = await this.client.request('list_tasks', { project });
      this.dispatch({ type: 'catalog', tasks: tasks.map((task) => task.slug) });
      const found = tasks.find((task) => task.slug === value);
      if (!found) {
        this.error(
          `No task "${value}" in project ${project}.${tasks.length > 0 ? ` Tasks: ${tasks.map((task) => task.slug).join(', ')}.` : ' Create one with /task new <title>.'}`,
        );
        return;
      }
      this.dispatch({ type: 'select', task: found.slug });
      this.note([{ text: `Active task: ${found.slug} ("${found.title}", ${found.state}).`, tone: 'success' }]);
      return;
    }
    this.error(`Unknown /task action "${verb}". Expected /task, /task new <title> or /task select <slug>.`);
  }

  private async listTasks(project: string): Promise<void> {
    const { tasks } = await this.client.request('list_tasks', { project });
    this.dispatch({ type: 'catalog', tasks: tasks.map((task) => task.slug) });
    if (tasks.length === 0) {
      this.note([{ text: `No tasks in project ${project} yet. Create one with /task new <title>.` }]);
      return;
    }
    const active = this.state().task;
    const width = Math.max(...tasks.map((task) => task.slug.length));
    this.note([
      { text: `Tasks of ${project}`, bold: true },
      ...tasks.map((task) => ({
        text: `${task.slug === active ? '›' : ' '} ${task.slug.padEnd(width)}  ${oneLine(task.title, 50)}  [${task.state}]${task.activeDraft ? `  drafted: ${task.activeDraft.role}` : ''}`,
        ...(task.slug === active ? { tone: 'accent' as const } : {}),
      })),
      { text: 'Choose one with /task select <slug>.', tone: 'dim' },
    ]);
  }

  private async roles(args: string): Promise<void> {
    if (!this.noArguments('roles', args)) return;
    const project = this.state().project;
    const { roles, errors } = await this.client.request('list_roles', project !== undefined ? { project } : {});
    this.dispatch({ type: 'catalog', roles: roles.map((role) => role.name) });
    this.note(rolesReport(roles, errors));
  }

  private async sessions(args: string): Promise<void> {
    if (!this.noArguments('sessions', args)) return;
    const { sessions } = await this.client.request('list_sessions', { limit: 15 });
    if (sessions.length === 0) {
      this.note([{ text: 'No sessions yet.' }]);
      return;
    }
    this.note(sessionsReport(sessions, this.state().draft?.sessionId, this.clock()));
  }

  /** `/rename`, `/tag`, `/pin`: what the draft's session is called and filed under. */
  private async fileSession(name: 'rename' | 'tag' | 'pin', args: string): Promise<void> {
    const draft = this.state().draft;
    if (!draft) {
      this.error(`No agent is drafted: /${name} changes the drafted session. Draft one with /draft <role>.`);
      return;
    }
    const words = args.split(/\s+/).filter(Boolean);
    if (name !== 'pin' && words.length === 0) {
      this.error(name === 'rename' ? 'Give the new title: /rename <title>.' : 'Give one or more tags: /tag <tags…>.');
      return;
    }
    const change =
      name === 'rename'
        ? { title: args.trim() }
        : name === 'pin'
          ? { pinned: words[0] !== 'off' }
          : {
              addTags: words.filter((word) => !word.startsWith('-')),
              removeTags: words.filter((word) => word.startsWith('-')).map((word) => word.slice(1)),
            };
    const { session } = await this.client.request('update_session', { sessionId: draft.sessionId, ...change });
    const tags = session.tags?.length ? `  #${session.tags.join(' #')}` : '';
    this.note([{ text: `${session.title ?? session.sessionId}${session.pinned ? '  [pinned]' : ''}${tags}` }]);
  }

  private async searchMessages(args: string): Promise<void> {
    if (args.trim() === '') {
      this.error('Give the words to look for: /search <words>.');
      return;
    }
    const { hits, terms } = await this.client.request('search_sessions', { query: args.slice(0, 1_000), limit: 10 });
    if (hits.length === 0) {
      this.note([{ text: terms.length === 0 ? 'No words to search for.' : 'No message holds those words.' }]);
      return;
    }
    this.note(hits.map((hit) => ({ text: `${hit.title ?? hit.sessionId} (seq ${hit.seq}): ${hit.snippet}` })));
  }

  private async compact(args: string): Promise<void> {
    const draft = this.state().draft;
    if (!draft) {
      this.error('No agent is drafted, so there is nothing to compact. Draft one with /draft <role>.');
      return;
    }
    const started = this.clock();
    this.compacting = true;
    this.startCompactionActivity(started);
    try {
      const result = await this.client.request(
        'force_compact',
        { sessionId: draft.sessionId, ...(args !== '' ? { instructions: args } : {}) },
        { timeoutMs: 0 },
      );
      const checkpoint = result.checkpoint;
      this.note([
        {
          text: `Compacted in ${formatDuration(this.clock() - started)}${checkpoint ? `: checkpoint v${checkpoint.version}${checkpoint.summarizer?.kind === 'structural' ? ' (built structurally, no model)' : ''} covers the conversation through seq ${checkpoint.covers.throughSeq} (${plural(checkpoint.covers.messageCount, 'message')}); nothing was deleted` : ''}.`,
          tone: 'success',
        },
      ]);
    } catch (error) {
      if (isRpcError(error) && error.reason === 'COMPACTION_NO_SUMMARIZER') {
        this.error(
          'Cannot compact: this server has no model to write the summary with (the scripted back end cannot summarize). Configure a model back end (parley backends shows how), then /compact again.',
        );
      } else if (isRpcError(error, RpcErrorCode.UNSUPPORTED)) this.error(`Cannot compact now: ${error.message}`);
      else this.error(`Compaction failed: ${messageOf(error)}`);
    } finally {
      this.compacting = false;
      this.dispatch({ type: 'activity_end', id: 'compact' });
    }
  }

  /** `/goal`: show the draft's goal, set one (a model judge, the default budget), or stop it. */
  private async goal(args: string): Promise<void> {
    if (!this.state().draft) {
      this.error('/goal needs a draft: /draft <role> first.');
      return;
    }
    let goal: GoalStatus | undefined;
    if (args === '') goal = (await this.client.request('get_goal', {})).goal;
    else if (args === 'stop') goal = (await this.client.request('stop_goal', {})).goal;
    else goal = (await this.client.request('set_goal', { condition: args, budget: { turns: 10 } })).goal;
    if (!goal) {
      this.note([{ text: 'No goal. Set one with /goal <condition>.' }]);
      return;
    }
    const sessionId = this.state().draft?.sessionId;
    if (sessionId) this.dispatch({ type: 'goal_status', sessionId, goal });
    const last = goal.judgements.at(-1);
    this.note([
      { text: `Goal: ${goal.condition}` },
      {
        text: goal.ended
          ? `Ended (${goal.ended.reason}): ${goal.ended.message}`
          : `Running: ${goal.used.turns} of ${goal.budget.turns} turns used.${last ? ` Still missing: ${oneLine(last.missing, 120)}` : ''}`,
      },
    ]);
  }

  private async agents(args: string): Promise<void> {
    if (!this.noArguments('agents', args)) return;
    const { agents } = await this.client.request('list_agents');
    this.dispatch({ type: 'agents', agents });
    this.note(agentsReport(agents, this.state(), this.clock()));
  }

  private note(lines: NoteLine[]): void {
    this.dispatch({ type: 'note', lines });
  }

  private error(text: string): void {
    this.note([{ text: `✗ ${text}`, tone: 'error' }]);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
