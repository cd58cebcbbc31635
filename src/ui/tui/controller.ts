import { firstDraftNotice, type StreamEvent } from '../../conversation/index.js';
import {
  draftingOf,
  isRpcError,
  RpcErrorCode,
  type ConnectionState,
  type DraftStatus,
  type ProtocolClient,
} from '../../protocol/index.js';
import { backendCommand } from './backend-command.js';
import { projectCommand, rolesCommand, taskCommand } from './catalog-commands.js';
import { messageOf, noArguments } from './command-context.js';
import { sayInConversation } from './conversation-notes.js';
import { COMMANDS, helpNote, parseInput, suggestCommand } from './commands.js';
import {
  agentsCommand,
  compactCommand,
  COMPACTING,
  contextCommand,
  draftCommand,
  undraftCommand,
  type DraftCommandContext,
} from './draft-commands.js';
import { Dialogs } from './dialogs.js';
import {
  branchesCommand,
  checkpointsCommand,
  forkCommand,
  restoreCheckpointCommand,
  rewindCommand,
} from './history-commands.js';
import { RunQuestions } from './run-questions.js';
import { fileSessionCommand, goalCommand, searchCommand, sessionsCommand } from './session-commands.js';
import { formatCost, formatDuration, plural } from './format.js';
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
  /** The last `history_changed` handled (session, reason, seq) since the last event: the same change comes twice. */
  private lastHistoryChange: string | undefined;
  /** This terminal's /compact is in flight. */
  private compacting = false;
  private refreshing: Promise<void> | undefined;
  /** The questions runs of the project wait on (durable runs), shown above the title bar. */
  readonly runs: RunQuestions;
  /** The list a command asks with (the rewind picker, a branch, a checkpoint): it has the keys while open. */
  readonly dialogs = new Dialogs();
  /** What the command modules are given (command-context.ts). */
  private readonly commands: DraftCommandContext;
  /** `/backend <name>`: the back end the next message moves the draft to (sent with that `submit_prompt`). */
  private nextBackend: string | undefined;

  constructor(private readonly options: ControllerOptions) {
    this.client = options.client;
    this.runs = new RunQuestions(options.client);
    this.current = initialViewState();
    this.clock = options.clock ?? Date.now;
    this.historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    this.retryDelay = options.retryDelayMs ?? ((attempt) => Math.min(10_000, 1_000 * 2 ** attempt));
    this.commands = {
      client: this.client,
      dialogs: this.dialogs,
      state: () => this.state(),
      dispatch: (action) => this.dispatch(action),
      clock: () => this.clock(),
      note: (lines) => this.note(lines),
      error: (text) => this.error(text),
      refreshCatalog: () => this.refreshCatalog(),
      compacting: (running) => {
        this.compacting = running;
      },
      continueIn: (sessionId, backend) => this.continueIn(sessionId, backend),
      loadDraft: (status) => this.loadDraft(status),
      closeDraftLocally: () => this.closeDraftLocally(),
    };
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
      client.on('history_changed', ({ sessionId, reason, seq }) => {
        if (this.state().draft?.sessionId !== sessionId) return;
        // It comes once to the channel and once more to the session's followers, which this terminal is.
        const change = `${sessionId}\u0000${reason}\u0000${seq}`;
        if (change === this.lastHistoryChange) return;
        this.lastHistoryChange = change;
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
    this.dialogs.cancel();
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
    this.dispatch({
      type: 'server',
      channelId: info.channelId,
      projectRoot: info.projectRoot,
      ...(info.fileSnapshots !== undefined ? { fileSnapshots: info.fileSnapshots } : {}),
    });
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
    this.dispatch({ type: 'activity_start', activity: { id: 'compact', label: COMPACTING, startedAt } });
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
    // A question about the draft (which message to rewind to) has nothing left to answer.
    this.dialogs.cancel();
    this.unfollow();
    this.dispatch({ type: 'draft_closed' });
  }

  private queueEvent(sessionId: string, event: StreamEvent): void {
    // Something was appended since: the next history change, even to the same point, is a new one.
    this.lastHistoryChange = undefined;
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

  /** Esc Esc on an empty prompt: the rewind picker, as `/rewind` (nothing while a turn runs: Esc interrupts it). */
  async openRewind(): Promise<void> {
    if (this.state().turn || this.dialogs.getState().open) return;
    await this.runCommand('rewind', '').catch((error: unknown) => this.error(messageOf(error)));
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
        return draftCommand(this.commands, args);
      case 'undraft':
        return undraftCommand(this.commands, args);
      case 'context':
        return contextCommand(this.commands, args);
      case 'project':
        return projectCommand(this.commands, args);
      case 'task':
        return taskCommand(this.commands, args);
      case 'roles':
        return rolesCommand(this.commands, args);
      case 'sessions':
        return sessionsCommand(this.commands, args);
      case 'rename':
      case 'tag':
      case 'pin':
        return fileSessionCommand(this.commands, name, args);
      case 'search':
        return searchCommand(this.commands, args);
      case 'rewind':
        return rewindCommand(this.commands, args);
      case 'branches':
        return branchesCommand(this.commands, args);
      case 'checkpoints':
        return checkpointsCommand(this.commands, args);
      case 'restore-checkpoint':
        return restoreCheckpointCommand(this.commands, args);
      case 'fork':
        return forkCommand(this.commands, args);
      case 'compact':
        return compactCommand(this.commands, args);
      case 'agents':
        return agentsCommand(this.commands, args);
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
        return goalCommand(this.commands, args);
      case 'say':
        return this.note(await sayInConversation(this.client, this.state().conversation?.blocks ?? [], args));
      default:
        this.error(`/${name} is not available.`);
    }
  }

  private noArguments(command: string, args: string): boolean {
    return noArguments(this.commands, command, args);
  }

  /** `/fork`'s last step: the channel's draft goes on in `sessionId` (see CommandContext.continueIn). */
  private async continueIn(sessionId: string, backend: string | undefined): Promise<boolean> {
    const draft = this.state().draft;
    if (!draft) return false;
    try {
      await this.client.request('undraft');
    } catch (error) {
      this.error(`The fork is session ${sessionId}, but the draft could not move to it: ${messageOf(error)}`);
      return false;
    }
    this.closeDraftLocally();
    try {
      await this.client.request('draft', {
        role: draft.role,
        project: draft.project,
        task: draft.taskSlug,
        session: sessionId,
      });
    } catch (error) {
      this.error(
        `The fork is session ${sessionId}, but drafting ${draft.role} on it failed: ${messageOf(error)} /draft ${draft.role} starts a new draft.`,
      );
      return false;
    }
    this.nextBackend = backend;
    await this.loadChannelDraft();
    return true;
  }

  private note(lines: NoteLine[]): void {
    this.dispatch({ type: 'note', lines });
  }

  private error(text: string): void {
    this.note([{ text: `✗ ${text}`, tone: 'error' }]);
  }
}
