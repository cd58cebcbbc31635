import { firstDraftNotice, MAIN_CONVERSATION, type StreamEvent } from '../../conversation/index.js';
import {
  draftingOf,
  ProtocolClientError,
  RpcError,
  type MethodResult,
  type ProtocolClient,
  type SessionInfo,
} from '../../protocol/index.js';
import type { SessionFilters } from './view-model.js';
import { firstMessageTarget, foldWindow, type BusyKey, type Tone } from './state.js';
import { HISTORY_PAGING, HistoryWindow, type EventPageRequest, type HistoryPaging } from './history-pages.js';
import {
  HistoryController,
  type HistoryActions,
  type RewindOutcome,
  type RewindRequest,
} from './history-controller.js';
import type { Store } from './store.js';

/** Sessions read per page of the list: a screen's worth many times over, so scrolling rarely waits. */
const SESSION_PAGE = 200;

/** What the views may ask for. Every method reports its own failures as notices; none throws. */
export interface Actions extends Partial<HistoryActions> {
  /** `atSeq`: open the session at that event (a search hit's), not at its tail. */
  select(sessionId: string, options?: { atSeq?: number }): void;
  setFilter(key: keyof SessionFilters, value: string | undefined): void;
  search(query: string): void;
  /** Renames, tags or pins the selected session. */
  updateSession?(change: { title?: string; addTags?: string[]; removeTags?: string[]; pinned?: boolean }): void;
  /** Reads the next page of sessions, when there is one (the list scrolled near its end). */
  loadMoreSessions?(): void;
  /** Reads the page of the selected session's log before the oldest held (the reader scrolled to the top). */
  loadOlderEvents?(): void;
  /** Reads the page after the newest held, when the tail is not held (the reader scrolled back down). */
  loadNewerEvents?(): void;
  /** `backend`: move the draft's session to this back end with this message. */
  submitPrompt(content: string, backend?: string): Promise<boolean>;
  /** A message typed with no draft: drafts the project's default role (into a new task named after the message unless one is chosen), then sends it. */
  submitFirstMessage(content: string): Promise<boolean>;
  cancel(): void;
  /** Sets a goal on the draft (a model judge, `turns` turns at most); resolves to the server's refusal, if any. */
  setGoal(condition: string, turns: number): Promise<string | undefined>;
  /** Stops the draft's goal (the running turn is cancelled). */
  stopGoal(): void;
  /** A note from the user into a conversation between agents (both read it with the next message); resolves to the server's refusal, if any. */
  sayInConversation(conversationId: string, message: string): Promise<string | undefined>;
  createDraft(options: { role: string; project: string; task: string }): void;
  undraft(): void;
  chooseProject(project: string): void;
  createTask(project: string, title: string): Promise<boolean>;
  forceCompact(instructions: string): void;
  clearMessages(): void;
  archive(): void;
  previewRequest(prompt: string): void;
  closeRequestPane(): void;
  dismiss(id: number): void;
}

export interface ControllerOptions {
  client: ProtocolClient;
  store: Store;
  /** Milliseconds since the epoch (injectable for tests). */
  now?: () => number;
  /** Called with the channel the server gave this page, so a reload rejoins it (and its draft). */
  onChannel?: (channelId: string) => void;
  /** Delay before a typed search runs (default 250 ms). */
  searchDelayMs?: number;
  /**
   * Resolves once the page has painted what it has (the browser entry: after the next frame; by
   * default at once). An opened session's checkpoints and request breakdown are asked for then:
   * the server's work on them (the breakdown counts tokens) no longer competes for the machine
   * with the frame that shows the conversation.
   */
  afterPaint?: () => Promise<void>;
  /** How the selected session's log is paged (default `HISTORY_PAGING`). */
  paging?: HistoryPaging;
}

/** How long a success or info notice stays. */
const NOTICE_MS = 6_000;

/**
 * Wires the protocol client to the store: connects, follows every session (`subscribe`), loads
 * the selected session's log and keeps every view current from notifications. Reconnecting and
 * resuming after the last `seq` is the ProtocolClient's job; after a reconnect this refreshes
 * what notifications do not replay (the list, the draft, checkpoints).
 */
export class Controller implements Actions {
  private readonly client: ProtocolClient;
  private readonly store: Store;
  private readonly now: () => number;
  private selection = 0;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private searchRun = 0;
  private loadingPage = false;
  private previewTimer: ReturnType<typeof setTimeout> | undefined;
  /** Compaction notices received so far: tells whether one arrived while `get_session` was on its way. */
  private compactionNotices = 0;
  /** A first message on its way (drafting, then sending): a second one is not drafted again. */
  private firstMessage: Promise<boolean> | undefined;
  private readonly history: HistoryController;
  /** The selected session's log as far as the page holds it, and which selection it belongs to. */
  private window: { run: number; sessionId: string; pages: HistoryWindow } | undefined;

  constructor(private readonly options: ControllerOptions) {
    this.client = options.client;
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.history = new HistoryController({
      client: this.client,
      store: this.store,
      notice: (tone, text) => this.notice(tone, text),
      select: (sessionId) => this.select(sessionId),
      reloadCheckpoints: (sessionId) => this.loadCheckpoints(sessionId),
      showDraft: (sessionId) => this.showDraft(sessionId),
    });
  }

  /** Connects and loads the page's data; a first connection that fails is reported in the state, not thrown. */
  async start(): Promise<void> {
    this.listen();
    try {
      await this.client.connect();
    } catch (error) {
      this.store.dispatch({ type: 'connection', state: 'disconnected', error: messageOf(error) });
      return;
    }
    await this.refresh(true);
  }

  private listen(): void {
    const { client, store } = this;
    let wasReconnecting = false;
    client.onStateChange((state) => {
      store.dispatch({ type: 'connection', state });
      if (state === 'reconnecting') wasReconnecting = true;
      if (state === 'connected' && wasReconnecting) {
        wasReconnecting = false;
        // Events were replayed from the last seq by the client; the rest is read again.
        void this.refresh(false);
      }
    });
    client.on('session_updated', (update) => {
      store.dispatch({ type: 'session_updated', session: update.session });
      if (
        update.sessionId === store.state.selectedId &&
        (update.action === 'cleared' || update.action === 'settings_changed' || update.action === 'archived')
      ) {
        this.schedulePreview();
      }
    });
    const batch: Array<{ sessionId: string; event: StreamEvent }> = [];
    let flushing = false;
    client.on('session_event', (message) => {
      // Deltas come in bursts: fold a burst into one state change (one render).
      batch.push(message);
      if (flushing) return;
      flushing = true;
      queueMicrotask(() => {
        flushing = false;
        const selected = store.state.selectedId;
        const events = batch
          .splice(0)
          .filter((entry) => entry.sessionId === selected)
          .map((entry) => entry.event);
        if (selected === undefined || events.length === 0) return;
        const held = this.window?.sessionId === selected ? this.window : undefined;
        // A page dropped to make room for these: what is held is folded again, not added to.
        if (held?.pages.addLive(events) === true) this.showWindow(held);
        else store.dispatch({ type: 'events', sessionId: selected, events });
        if (
          events.some(
            (event) =>
              event.type === 'metadata_update' &&
              event.conversationId === MAIN_CONVERSATION &&
              event.metadata.turnComplete,
          )
        ) {
          this.schedulePreview();
          // The first turn after a rewind starts a branch of its own: the branches' ids and tips moved.
          if (store.state.view?.branches !== undefined) void this.history.loadBranches(undefined, selected);
        }
      });
    });
    client.on('compaction_started', (payload) => {
      this.compactionNotices += 1;
      store.dispatch({ type: 'compaction_started', payload, at: this.now() });
    });
    client.on('compaction_completed', (payload) => {
      this.compactionNotices += 1;
      store.dispatch({ type: 'compaction_completed', payload });
      if (payload.sessionId === store.state.selectedId) {
        void this.loadCheckpoints(payload.sessionId);
        this.schedulePreview();
      }
    });
    client.on('compaction_failed', (payload) => {
      this.compactionNotices += 1;
      store.dispatch({ type: 'compaction_failed', payload });
    });
    client.on('draft_status', (status) => {
      store.dispatch({ type: 'draft_notification', status });
      if (status.sessionId === store.state.selectedId) this.schedulePreview();
    });
    // A rewind, a branch switch or an edit: the events shown past the point are another branch, so the view is read again.
    client.on('history_changed', ({ sessionId, session }) => {
      store.dispatch({ type: 'session_updated', session });
      if (sessionId !== store.state.selectedId) return;
      store.dispatch({ type: 'history_reload', sessionId });
      void this.loadSession(sessionId);
    });
    client.on('goal_status', ({ sessionId, goal }) => store.dispatch({ type: 'goal_status', sessionId, goal }));
    client.on('draft_closed', (closed) => {
      store.dispatch({ type: 'draft', status: undefined });
      this.notice('error', closed.message);
    });
    client.on('context_compacted', (compacted) => {
      this.notice(
        'info',
        `The draft's context was compacted (${compacted.trigger}, ${Math.round(compacted.preTokens).toLocaleString('en-US')} tokens before).`,
      );
    });
  }

  /** Server info, the subscription, the list, the draft; on the first connection also the draft form's catalog. */
  private async refresh(first: boolean): Promise<void> {
    const { client, store } = this;
    try {
      // Asked for at once, not one after another: the list comes one round trip after connecting, not
      // three. The server takes a connection's frames in the order they arrive, and a subscription to
      // every session is in place as soon as its frame is taken (its handler does not wait on
      // anything), so it is in place before the list is read: no update falls between them.
      const [info, , sessions, draft] = await Promise.all([
        client.request('server_info'),
        first ? client.subscribe() : Promise.resolve(undefined),
        client.request('list_sessions', { limit: SESSION_PAGE }),
        client.request('get_draft_status'),
      ]);
      store.dispatch({
        type: 'server',
        channelId: info.channelId,
        projectRoot: info.projectRoot,
        ...(info.fileSnapshots !== undefined ? { fileSnapshots: info.fileSnapshots } : {}),
      });
      this.options.onChannel?.(info.channelId);
      store.dispatch({
        type: 'sessions_loaded',
        sessions: sessions.sessions,
        ...(sessions.nextCursor !== undefined ? { nextCursor: sessions.nextCursor } : {}),
      });
      store.dispatch({ type: 'draft', status: draft.active ? draft.session : undefined });
      const selected = store.state.selectedId;
      if (selected !== undefined) {
        // A compaction may have started or ended while the link was down: its notices are not replayed.
        if (!first) await Promise.all([this.loadCheckpoints(selected), this.loadCompaction(selected)]);
        this.schedulePreview(0);
      }
      if (first) await Promise.all([this.loadCatalog(), this.loadBackends()]);
    } catch (error) {
      this.notify(error);
    }
  }

  private async loadCatalog(): Promise<void> {
    const [projects, roles] = await Promise.all([
      this.client.request('list_projects'),
      this.client.request('list_roles', {}),
    ]);
    const project =
      this.store.state.draft?.project ??
      projects.projects.find((entry) => entry.current)?.name ??
      projects.projects[0]?.name;
    this.store.dispatch({
      type: 'catalog',
      projects: projects.projects,
      roles: roles.roles,
      ...(project !== undefined ? { project } : {}),
    });
    if (project !== undefined) await this.loadTasks(project);
  }

  /** The back ends for the picker; a server without `list_backends` (older) leaves it hidden. */
  private async loadBackends(): Promise<void> {
    const result = await this.client.request('list_backends').catch(() => undefined);
    if (result) this.store.dispatch({ type: 'backends', backends: result.backends });
  }

  /** Bumped by every task-list request: an answer to an older one (overtaken by a newer list) is dropped. */
  private taskListGeneration = 0;

  private async loadTasks(project: string): Promise<void> {
    const generation = ++this.taskListGeneration;
    const tasks = await this.client.request('list_tasks', { project });
    if (generation !== this.taskListGeneration) return;
    if (this.store.state.catalog.project === project) this.store.dispatch({ type: 'catalog', tasks: tasks.tasks });
  }

  // ---- actions -------------------------------------------------------------------------------------

  select(sessionId: string, options: { atSeq?: number } = {}): void {
    const { atSeq } = options;
    if (sessionId === this.store.state.selectedId) {
      // Already open: read again around the event only when the page does not hold it.
      const held = this.window?.sessionId === sessionId ? this.window.pages : undefined;
      if (atSeq === undefined || held === undefined || held.holds(atSeq)) return;
      this.store.dispatch({ type: 'history_reload', sessionId });
      void this.loadSession(sessionId, atSeq);
      return;
    }
    this.store.dispatch({ type: 'select', sessionId });
    void this.loadSession(sessionId, atSeq);
  }

  /**
   * Opens the session at its tail: one read of its last page (`HistoryWindow.openTail`), folded
   * and shown; older pages are read as the reader scrolls up (`loadOlderEvents`). With `atSeq`, it
   * opens at that event instead (`HistoryWindow.openAt`).
   */
  private async loadSession(sessionId: string, atSeq?: number): Promise<void> {
    const run = ++this.selection;
    // A compaction that started before the page was listening is known only from get_session.
    void this.loadCompaction(sessionId);
    const pages = new HistoryWindow(
      (request: EventPageRequest) => this.client.request('get_events', { sessionId, ...request }),
      this.options.paging ?? HISTORY_PAGING,
    );
    // Live events from here on go to this window (it keeps the ones that come while the tail is read).
    this.window = { run, sessionId, pages };
    try {
      await (atSeq === undefined ? pages.openTail() : pages.openAt(atSeq));
      if (run !== this.selection) return;
    } catch (error) {
      if (run === this.selection) this.store.dispatch({ type: 'history_failed', sessionId, error: messageOf(error) });
      return;
    }
    const { place } = pages;
    const folded = foldWindow(sessionId, pages.events(), place, selectedSessionOf(this.store.state, sessionId));
    this.store.dispatch({ type: 'history_loaded', sessionId, events: [], folded, place });
    const view = this.store.state.view;
    // From here a reconnect replays this session from what the page has, even if no live event came yet.
    if (view?.sessionId === sessionId) this.client.resumeFrom('session_event', sessionId, view.conversation.lastSeq);
    await (this.options.afterPaint?.() ?? Promise.resolve());
    if (run !== this.selection) return;
    await Promise.all([
      this.loadCheckpoints(sessionId),
      this.loadPreview(sessionId),
      this.history.loadBranches(selectedSessionOf(this.store.state, sessionId), sessionId),
    ]);
  }

  /** What the window holds, folded again, in the view. */
  private showWindow(held: NonNullable<Controller['window']>): void {
    const { sessionId, pages } = held;
    const { place } = pages;
    const folded = foldWindow(sessionId, pages.events(), place, selectedSessionOf(this.store.state, sessionId));
    this.store.dispatch({ type: 'history_window', sessionId, folded, place });
  }

  loadOlderEvents(): void {
    void this.page('older');
  }

  loadNewerEvents(): void {
    void this.page('newer');
  }

  /** Reads one page before or after those held, and shows what the window holds then. */
  private async page(direction: 'older' | 'newer'): Promise<void> {
    const held = this.window;
    if (!held || held.run !== this.selection || held.pages.busy) return;
    const { place } = held.pages;
    if (direction === 'older' ? place.atStart : place.atTail) return;
    const { sessionId } = held;
    this.store.dispatch({ type: 'history_paging', sessionId, loading: direction });
    try {
      const changed = await (direction === 'older' ? held.pages.loadOlder() : held.pages.loadNewer());
      if (held !== this.window || held.run !== this.selection) return;
      if (changed || direction === 'older') this.showWindow(held);
    } catch (error) {
      if (held === this.window) this.notice('error', `Could not read more of the conversation: ${messageOf(error)}`);
    } finally {
      if (held === this.window) this.store.dispatch({ type: 'history_paging', sessionId, loading: undefined });
    }
  }

  /** The session's running compaction from `get_session`; an answer overtaken by a compaction notice is dropped (the notice is newer). */
  private async loadCompaction(sessionId: string): Promise<void> {
    const notices = this.compactionNotices;
    try {
      const { compaction } = await this.client.request('get_session', { sessionId });
      if (notices === this.compactionNotices) this.store.dispatch({ type: 'compaction_status', sessionId, compaction });
    } catch {
      // The history load reports an unreadable session; the indicator just stays as the notices left it.
    }
  }

  private async loadCheckpoints(sessionId: string): Promise<void> {
    try {
      const data = await this.client.request('get_checkpoint', { sessionId });
      this.store.dispatch({ type: 'checkpoints', sessionId, data });
    } catch (error) {
      this.store.dispatch({ type: 'checkpoints_failed', sessionId, error: messageOf(error) });
    }
  }

  private async loadPreview(sessionId: string): Promise<void> {
    try {
      const result = await this.client.request('preview_request', { sessionId });
      this.store.dispatch({ type: 'preview', sessionId, result });
    } catch (error) {
      this.store.dispatch({ type: 'preview_failed', sessionId, error: messageOf(error) });
    }
  }

  /** Turns end in a burst of notifications: read the breakdown again once, shortly after. */
  private schedulePreview(delayMs = 150): void {
    clearTimeout(this.previewTimer);
    this.previewTimer = setTimeout(() => {
      const selected = this.store.state.selectedId;
      if (selected !== undefined) void this.loadPreview(selected);
    }, delayMs);
  }

  setFilter(key: keyof SessionFilters, value: string | undefined): void {
    this.store.dispatch({ type: 'filter', key, value });
  }

  search(query: string): void {
    clearTimeout(this.searchTimer);
    const trimmed = query.trim();
    if (trimmed === '') {
      this.searchRun += 1;
      this.store.dispatch({ type: 'search_cleared' });
      return;
    }
    this.store.dispatch({ type: 'search_started', query: trimmed });
    this.searchTimer = setTimeout(() => {
      const run = ++this.searchRun;
      void this.searchMessages(trimmed).then(
        (result) => {
          if (run === this.searchRun)
            this.store.dispatch({
              type: 'search_done',
              query: trimmed,
              sessionIds: [...new Set(result.hits.map((hit) => hit.sessionId))],
              hits: result.hits,
            });
        },
        (error: unknown) => {
          if (run === this.searchRun)
            this.store.dispatch({ type: 'search_failed', query: trimmed, error: messageOf(error) });
        },
      );
    }, this.options.searchDelayMs ?? 250);
  }

  /** The index's hits; their sessions not loaded yet (further down the list) are read, so each hit has its row. */
  private async searchMessages(query: string): Promise<MethodResult<'search_sessions'>> {
    const result = await this.client.request('search_sessions', { query: query.slice(0, 1_000), limit: 50 });
    const known = new Set(this.store.state.sessions.map((session) => session.sessionId));
    const missing = [...new Set(result.hits.map((hit) => hit.sessionId))].filter((sessionId) => !known.has(sessionId));
    const sessions = await Promise.all(
      missing.map((sessionId) =>
        this.client.request('get_session', { sessionId }).then(
          (found) => found.session,
          () => undefined,
        ),
      ),
    );
    const page = sessions.filter((session): session is SessionInfo => session !== undefined);
    if (page.length > 0)
      this.store.dispatch({
        type: 'sessions_page',
        sessions: page,
        ...(this.store.state.sessionsCursor !== undefined ? { nextCursor: this.store.state.sessionsCursor } : {}),
      });
    return result;
  }

  loadMoreSessions(): void {
    const cursor = this.store.state.sessionsCursor;
    if (cursor === undefined || this.loadingPage) return;
    this.loadingPage = true;
    this.client.request('list_sessions', { limit: SESSION_PAGE, cursor }).then(
      (page) => {
        this.loadingPage = false;
        this.store.dispatch({
          type: 'sessions_page',
          sessions: page.sessions,
          ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
        });
      },
      (error: unknown) => {
        this.loadingPage = false;
        this.notify(error);
      },
    );
  }

  async submitPrompt(content: string, backend?: string): Promise<boolean> {
    if (content.trim() === '') return false;
    this.store.dispatch({ type: 'turn_started' });
    const ok = await this.busy('submit', () =>
      this.client.request(
        'submit_prompt',
        { content, ...(backend !== undefined ? { backend } : {}) },
        { timeoutMs: 0 },
      ),
    );
    if (!ok) this.store.dispatch({ type: 'turn_ended' });
    return ok;
  }

  submitFirstMessage(content: string): Promise<boolean> {
    if (content.trim() === '' || this.firstMessage) return Promise.resolve(false);
    this.firstMessage = this.draftAndSend(content).finally(() => {
      this.firstMessage = undefined;
    });
    return this.firstMessage;
  }

  /**
   * The one-step start: one `submit_prompt { draft }`, in which the server drafts the project's
   * default role into the chosen task (or a new one named after the message) and starts the turn;
   * then the draft's session is selected. The errors are the server's, naming the failed step.
   */
  private async draftAndSend(content: string): Promise<boolean> {
    const { store, client } = this;
    const draft = store.state.draft;
    if (draft) {
      // Drafted meanwhile (another window on this channel): the message goes to that draft.
      this.select(draft.sessionId);
      return this.submitPrompt(content);
    }
    const target = firstMessageTarget(store.state);
    if (!target) {
      this.notice('error', 'Choose a project in the draft form first; your message was not sent.');
      return false;
    }
    const { project, task } = target;
    store.dispatch({ type: 'busy', key: 'draft', value: true });
    store.dispatch({ type: 'turn_started' });
    try {
      const answer = await client.request(
        'submit_prompt',
        { content, draft: { project, ...(task !== undefined ? { task } : {}) } },
        { timeoutMs: 0 },
      );
      const drafted = answer.mode === 'draft' ? answer.drafted : undefined;
      if (drafted?.createdTask) await this.showTask(project, drafted.taskSlug);
      await this.showDraft(answer.sessionId);
      if (drafted) this.notice('success', firstDraftNotice({ ...drafted, undraft: 'Undraft' }));
      return true;
    } catch (error) {
      store.dispatch({ type: 'turn_ended' });
      const drafting = draftingOf(error);
      // A task made for the message stays, chosen, so the next try drafts into it.
      if (drafting?.createdTask && drafting.taskSlug !== undefined)
        await this.showTask(project, drafting.taskSlug).catch(() => undefined);
      // Drafted, but the message was refused: the draft is there to show.
      if (drafting?.step === 'submit' && drafting.sessionId !== undefined)
        await this.showDraft(drafting.sessionId).catch(() => undefined);
      this.notice('error', messageOf(error));
      return false;
    } finally {
      store.dispatch({ type: 'busy', key: 'draft', value: false });
    }
  }

  /** The project's tasks again, with `task` chosen (a slower list asked for before must not hide it). */
  private async showTask(project: string, task: string): Promise<void> {
    const generation = ++this.taskListGeneration;
    const tasks = await this.client.request('list_tasks', { project });
    if (generation === this.taskListGeneration && this.store.state.catalog.project === project)
      this.store.dispatch({ type: 'catalog', tasks: tasks.tasks, task });
  }

  /** The channel's draft as the server has it, its session selected. */
  private async showDraft(sessionId: string): Promise<void> {
    const [status, session] = await Promise.all([
      this.client.request('get_draft_status'),
      this.client.request('get_session', { sessionId }),
    ]);
    this.store.dispatch({ type: 'session_updated', session: session.session });
    this.store.dispatch({ type: 'draft', status: status.active ? status.session : undefined });
    this.select(sessionId);
  }

  cancel(): void {
    void this.busy('cancel', () => this.client.request('cancel'));
  }

  async setGoal(condition: string, turns: number): Promise<string | undefined> {
    try {
      await this.client.request('set_goal', { condition, budget: { turns } });
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  stopGoal(): void {
    void this.busy('stop_goal', () => this.client.request('stop_goal', {}));
  }

  async sayInConversation(conversationId: string, message: string): Promise<string | undefined> {
    try {
      await this.client.request('say_in_conversation', { conversationId, message });
      return undefined;
    } catch (error) {
      return messageOf(error);
    }
  }

  createDraft(options: { role: string; project: string; task: string }): void {
    void this.busy('draft', async () => {
      const drafted = await this.client.request('draft', options);
      await this.showDraft(drafted.sessionId);
    });
  }

  undraft(): void {
    void this.busy('undraft', async () => {
      const summary = await this.client.request('undraft');
      this.store.dispatch({ type: 'draft', status: undefined });
      this.notice('info', `Undrafted ${summary.taskSlug}: ${summary.turns} turn(s), $${summary.cost.toFixed(4)}.`);
    });
  }

  createTask(project: string, title: string): Promise<boolean> {
    return this.busy('task', async () => {
      const created = await this.client.request('create_task', { project, title: title.trim() });
      await this.showTask(project, created.task.slug);
    });
  }

  chooseProject(project: string): void {
    this.store.dispatch({ type: 'catalog', project, tasks: [] });
    this.loadTasks(project).catch((error: unknown) => this.notify(error));
  }

  forceCompact(instructions: string): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId === undefined) return;
    const trimmed = instructions.trim();
    void this.busy('compact', async () => {
      // A summary can take a while on a real model: no request timeout.
      const result = await this.client.request(
        'force_compact',
        { sessionId, ...(trimmed ? { instructions: trimmed } : {}) },
        { timeoutMs: 0 },
      );
      if (result.checkpoint) this.notice('success', `Compacted into checkpoint v${result.checkpoint.version}.`);
      await this.loadCheckpoints(sessionId);
      this.schedulePreview(0);
    });
  }

  clearMessages(): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId === undefined) return;
    void this.busy('clear', async () => {
      const result = await this.client.request('clear_messages', { sessionId });
      this.store.dispatch({ type: 'session_updated', session: result.session });
      this.notice(
        'success',
        'Messages cleared: the next request starts from the checkpoint; the history stays readable.',
      );
      this.schedulePreview(0);
    });
  }

  archive(): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId === undefined) return;
    void this.busy('archive', async () => {
      const result = await this.client.request('archive_session', { sessionId });
      this.store.dispatch({ type: 'session_updated', session: result.session });
      this.notice('success', 'Session archived: it stays readable and takes no new messages.');
    });
  }

  updateSession(change: { title?: string; addTags?: string[]; removeTags?: string[]; pinned?: boolean }): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId === undefined) return;
    this.client.request('update_session', { sessionId, ...change }).then(
      (result) => this.store.dispatch({ type: 'session_updated', session: result.session }),
      (error: unknown) => this.notify(error),
    );
  }

  previewRequest(prompt: string): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId === undefined) return;
    this.store.dispatch({ type: 'request_pane', sessionId, pane: { prompt, loading: true } });
    this.client.request('preview_request', { sessionId, prompt }).then(
      (result) => this.store.dispatch({ type: 'request_pane', sessionId, pane: { prompt, loading: false, result } }),
      (error: unknown) =>
        this.store.dispatch({
          type: 'request_pane',
          sessionId,
          pane: { prompt, loading: false, error: messageOf(error) },
        }),
    );
  }

  closeRequestPane(): void {
    const sessionId = this.store.state.selectedId;
    if (sessionId !== undefined) this.store.dispatch({ type: 'request_pane', sessionId, pane: undefined });
  }

  dismiss(id: number): void {
    this.store.dispatch({ type: 'dismiss', id });
  }

  // ---- the history tree (history-controller.ts) ----

  switchBranch(branch: string): Promise<boolean> {
    return this.history.switchBranch(branch);
  }

  rewind(request: RewindRequest): Promise<RewindOutcome> {
    return this.history.rewind(request);
  }

  editMessage(blockId: string, content: string): Promise<string | undefined> {
    return this.history.editMessage(blockId, content);
  }

  forkSession(at: number | string, backend?: string): Promise<string | undefined> {
    return this.history.forkSession(at, backend);
  }

  continueHere(): Promise<boolean> {
    return this.history.continueHere();
  }

  restoreCheckpoint(version: number): Promise<boolean> {
    return this.history.restoreCheckpoint(version);
  }

  /** Runs an action with its button marked busy; a failure becomes a notice. Resolves true on success. */
  private async busy(key: BusyKey, work: () => Promise<unknown>): Promise<boolean> {
    this.store.dispatch({ type: 'busy', key, value: true });
    try {
      await work();
      return true;
    } catch (error) {
      this.notify(error);
      return false;
    } finally {
      this.store.dispatch({ type: 'busy', key, value: false });
    }
  }

  private notify(error: unknown): void {
    this.notice('error', messageOf(error));
  }

  /** Shows a notice; good news goes away by itself, errors stay until dismissed. */
  private notice(tone: Tone, text: string): void {
    const id = this.store.state.nextNoticeId;
    this.store.dispatch({ type: 'notice', tone, text });
    if (tone !== 'error') setTimeout(() => this.store.dispatch({ type: 'dismiss', id }), NOTICE_MS);
  }
}

function selectedSessionOf(state: { sessions: SessionInfo[] }, sessionId: string): SessionInfo | undefined {
  return state.sessions.find((session) => session.sessionId === sessionId);
}

/** A failure as a user reads it: the server's message (it names the value and what to do). */
export function messageOf(error: unknown): string {
  if (error instanceof RpcError || error instanceof ProtocolClientError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}
