import {
  applyEvents,
  emptyConversation,
  foldInParts,
  type ConversationFold,
  type ConversationState,
  type StreamEvent,
} from '../../conversation/index.js';
import type {
  BackendInfo,
  CheckpointWire,
  ConnectionState,
  DraftStatus,
  GoalStatus,
  MethodResult,
  NotificationParams,
  ProjectInfo,
  RoleInfo,
  SessionInfo,
  SessionSearchHitInfo,
  TaskInfo,
} from '../../protocol/index.js';
import { emptyTrace, pathTo, traceEvents, type BranchEntry, type BranchTrace } from './history-model.js';
import type { HistoryPlace } from './history-pages.js';
import {
  emptySeries,
  foldSeries,
  mergeSessions,
  upsertSession,
  type SessionFilters,
  type UsageSeries,
} from './view-model.js';

/**
 * The page's state and the one reducer that folds protocol traffic and user actions into it.
 * Pure: the conversation is rebuilt with `applyEvents` from `conversation/`, exactly as the TUI
 * and the server rebuild it, so the page shows what they show.
 */

export type PreviewResult = MethodResult<'preview_request'>;

export interface CheckpointData {
  current: CheckpointWire | null;
  versions: CheckpointWire[];
}

/** The request preview pane: the exact request the next turn would send. */
export interface RequestPane {
  prompt: string;
  loading: boolean;
  result?: PreviewResult;
  error?: string;
}

export interface SessionView {
  sessionId: string;
  /** The log is being read; live events wait in `pending`. */
  loading: boolean;
  loadError?: string;
  conversation: ConversationState;
  series: UsageSeries;
  pending: StreamEvent[];
  /** The active branch read again (a rewind, a branch switch, an edit): what it shows stays until the new one is in, live events wait in `pending`. */
  reloading?: boolean;
  /** The active branch's seqs and the point before each user message (history-model.ts). */
  trace: BranchTrace;
  /**
   * Where the events folded into `conversation` lie in the log (history-pages.ts: the page holds
   * a few pages of it): whether older ones remain on the server, whether the newest held is the
   * tail (live events are folded only then), and the read on its way, if any. Absent until the log is read.
   */
  place?: HistoryPlace & { loading?: 'older' | 'newer' };
  /** The session's branches (`list_branches`), when it has more than one. */
  branches?: BranchEntry[];
  checkpoints?: CheckpointData;
  checkpointsError?: string;
  /** The status view's breakdown: `preview_request` with an empty prompt. */
  preview?: PreviewResult;
  previewError?: string;
  requestPane?: RequestPane;
  /**
   * A compaction of this session is running (the compaction indicator), from `compaction_started`
   * or, for a page that opened the session after it started, from `get_session`. `startedAt` is ms since
   * the epoch; `tokensBefore` is absent until the server has read the history.
   */
  compaction?: { trigger: 'auto' | 'manual'; tokensBefore?: number; startedAt: number };
  lastCompaction?:
    { ok: true; version: number; tokensBefore: number; tokensAfter: number } | { ok: false; message: string };
}

export type Tone = 'info' | 'success' | 'error';

export interface Notice {
  id: number;
  tone: Tone;
  text: string;
}

export type BusyKey =
  'submit' | 'draft' | 'undraft' | 'cancel' | 'compact' | 'clear' | 'archive' | 'task' | 'stop_goal';

export interface AppState {
  /** Whether the page has a token to connect with. */
  auth: 'missing' | 'present';
  connection: ConnectionState;
  everConnected: boolean;
  /** Why the first connection failed (refused token, server down), until one succeeds. */
  connectError?: string;
  channelId?: string;
  projectRoot?: string;
  /** The server snapshots the project's files (`server_info`), so a rewind can restore them. */
  fileSnapshots?: boolean;
  sessions: SessionInfo[];
  sessionsLoaded: boolean;
  /** The cursor of the next page of sessions; absent once every page is loaded. */
  sessionsCursor?: string;
  filters: SessionFilters;
  search: {
    query: string;
    running: boolean;
    matches?: ReadonlySet<string>;
    /** The matching messages, newest first (`search_sessions`). */
    hits?: readonly SessionSearchHitInfo[];
    error?: string;
  };
  selectedId?: string;
  view?: SessionView;
  /** This page's channel's active draft. */
  draft?: DraftStatus;
  /** The draft is running a turn (from `submit_prompt` until the turn's `draft_status`). */
  turnRunning: boolean;
  /** What the draft form offers; `task` is the one to preselect (a task just created). */
  catalog: { projects: ProjectInfo[]; tasks: TaskInfo[]; roles: RoleInfo[]; project?: string; task?: string };
  /** The back ends the server offers for the draft's next message (`list_backends`); empty until known. */
  backends: BackendInfo[];
  notices: Notice[];
  nextNoticeId: number;
  busy: Partial<Record<BusyKey, boolean>>;
}

export type AppAction =
  | { type: 'auth_missing' }
  | { type: 'connection'; state: ConnectionState; error?: string }
  | { type: 'server'; channelId: string; projectRoot: string; fileSnapshots?: boolean }
  | { type: 'sessions_loaded'; sessions: SessionInfo[]; nextCursor?: string }
  /** The next page of the list, read as the list scrolls towards its end. */
  | { type: 'sessions_page'; sessions: SessionInfo[]; nextCursor?: string }
  | { type: 'session_updated'; session: SessionInfo }
  | { type: 'filter'; key: keyof SessionFilters; value: string | undefined }
  | { type: 'search_started'; query: string }
  | { type: 'search_done'; query: string; sessionIds: string[]; hits?: readonly SessionSearchHitInfo[] }
  | { type: 'search_failed'; query: string; error: string }
  | { type: 'search_cleared' }
  | { type: 'select'; sessionId: string | undefined }
  /** The session's log; `folded`, when given, is those events already folded from an empty view (see `foldHistory`). */
  | { type: 'history_loaded'; sessionId: string; events: StreamEvent[]; folded?: FoldedHistory; place?: HistoryPlace }
  /** The pages held changed (an older or newer page read, a far one dropped): `folded` is all they hold. */
  | { type: 'history_window'; sessionId: string; folded: FoldedHistory; place: HistoryPlace }
  /** A page before or after those held is being read (`undefined`: the read is over). */
  | { type: 'history_paging'; sessionId: string; loading: 'older' | 'newer' | undefined }
  | { type: 'history_failed'; sessionId: string; error: string }
  /** The active branch changed on the server: its history is read again (`history_loaded` follows). */
  | { type: 'history_reload'; sessionId: string }
  | { type: 'branches'; sessionId: string; branches: BranchEntry[] | undefined }
  | { type: 'events'; sessionId: string; events: StreamEvent[] }
  | { type: 'checkpoints'; sessionId: string; data: CheckpointData }
  | { type: 'checkpoints_failed'; sessionId: string; error: string }
  | { type: 'preview'; sessionId: string; result: PreviewResult }
  | { type: 'preview_failed'; sessionId: string; error: string }
  | { type: 'request_pane'; sessionId: string; pane: RequestPane | undefined }
  | { type: 'compaction_started'; payload: NotificationParams<'compaction_started'>; at: number }
  | { type: 'compaction_completed'; payload: NotificationParams<'compaction_completed'> }
  | { type: 'compaction_failed'; payload: NotificationParams<'compaction_failed'> }
  /** What `get_session` said of the session's compaction: the one running, or none (it ended while the page was not listening). */
  | { type: 'compaction_status'; sessionId: string; compaction: MethodResult<'get_session'>['compaction'] }
  | { type: 'draft'; status: DraftStatus | undefined }
  | { type: 'goal_status'; sessionId: string; goal: GoalStatus }
  | { type: 'draft_notification'; status: NotificationParams<'draft_status'> }
  | { type: 'turn_started' }
  | { type: 'turn_ended' }
  | {
      type: 'catalog';
      projects?: ProjectInfo[];
      tasks?: TaskInfo[];
      roles?: RoleInfo[];
      project?: string;
      task?: string;
    }
  | { type: 'backends'; backends: BackendInfo[] }
  | { type: 'notice'; tone: Tone; text: string }
  | { type: 'dismiss'; id: number }
  | { type: 'busy'; key: BusyKey; value: boolean };

/** Notices kept on screen at most; older ones go first. */
const MAX_NOTICES = 4;

export function initialState(auth: AppState['auth'] = 'present'): AppState {
  return {
    auth,
    connection: 'disconnected',
    everConnected: false,
    sessions: [],
    sessionsLoaded: false,
    filters: {},
    search: { query: '', running: false },
    turnRunning: false,
    catalog: { projects: [], tasks: [], roles: [] },
    backends: [],
    notices: [],
    nextNoticeId: 1,
    busy: {},
  };
}

/** A session's history folded so far: its conversation and its usage series. */
export interface FoldedHistory {
  conversation: ConversationState;
  series: UsageSeries;
  /** Traced from the same events; absent: traced from them when the history is loaded. */
  trace?: BranchTrace;
}

/**
 * Folds more of a session's history, oldest first, into what is folded so far (start from
 * `emptyView`'s). The controller folds each page of the log as it arrives, while later pages are
 * still on their way, instead of all 12,000 events of a long session once the last page is in.
 */
export function foldHistory(history: FoldedHistory, events: StreamEvent[]): Required<FoldedHistory> {
  return {
    conversation: applyEvents(history.conversation, events),
    series: foldSeries(history.series, events),
    trace: traceEvents(history.trace ?? emptyTrace(), events),
  };
}

/**
 * A history folded page by page as its pages arrive: `add` each page, oldest first, then `finish`
 * once. The same as `foldHistory` of each page in turn, at the cost of one fold of the whole log
 * (`foldInParts`: the conversation's working copy and id index are kept from page to page).
 */
export class HistoryFold {
  private readonly conversation: ConversationFold;
  private series: UsageSeries;
  private trace: BranchTrace;

  constructor(from: FoldedHistory) {
    this.conversation = foldInParts(from.conversation);
    this.series = from.series;
    this.trace = from.trace ?? emptyTrace();
  }

  add(events: StreamEvent[]): void {
    this.conversation.add(events);
    this.series = foldSeries(this.series, events);
    this.trace = traceEvents(this.trace, events);
  }

  /** What was added, folded; the fold takes no more pages after it. */
  finish(): FoldedHistory {
    return { conversation: this.conversation.finish(), series: this.series, trace: this.trace };
  }
}

/**
 * The events the page holds (consecutive on the active branch, oldest first) folded from an empty
 * view. When they do not start at the branch's start, the trace starts at the first of them: the
 * seqs before it are the session's path up to it (`pathTo`, from the record's segments, when the
 * list has the record), and the first event's own user message has no known point before it.
 */
export function foldWindow(
  sessionId: string,
  events: readonly StreamEvent[],
  place: HistoryPlace,
  session?: SessionInfo,
): Required<FoldedHistory> {
  const empty = emptyView(sessionId);
  const first = events[0];
  let trace = emptyTrace();
  if (!place.atStart && first !== undefined)
    trace = {
      runs: session ? pathTo(session, first.seq) : [{ first: first.seq, last: first.seq }],
      pointsBefore: new Map(),
      lastSeq: first.seq,
    };
  const fold = new HistoryFold({ conversation: empty.conversation, series: empty.series, trace });
  fold.add(events as StreamEvent[]);
  const folded = fold.finish();
  return { conversation: folded.conversation, series: folded.series, trace: folded.trace ?? trace };
}

export function emptyView(sessionId: string): SessionView {
  return {
    sessionId,
    loading: true,
    conversation: emptyConversation(sessionId),
    series: emptySeries(),
    pending: [],
    trace: emptyTrace(),
  };
}

export function reduce(state: AppState, action: AppAction): AppState {
  switch (action.type) {
    case 'auth_missing':
      return { ...state, auth: 'missing', connection: 'disconnected' };
    case 'connection': {
      const connected = action.state === 'connected';
      const next: AppState = { ...state, connection: action.state, everConnected: state.everConnected || connected };
      if (connected) delete next.connectError;
      else if (action.error !== undefined) next.connectError = action.error;
      return next;
    }
    case 'server': {
      const next: AppState = { ...state, channelId: action.channelId, projectRoot: action.projectRoot };
      if (action.fileSnapshots !== undefined) next.fileSnapshots = action.fileSnapshots;
      return next;
    }
    case 'sessions_loaded': {
      // Sessions the list learned from live updates while the page was reading stay in.
      let sessions = action.sessions;
      for (const session of state.sessions)
        if (!sessions.some((entry) => entry.sessionId === session.sessionId))
          sessions = upsertSession(sessions, session);
      const next: AppState = { ...state, sessions, sessionsLoaded: true };
      if (action.nextCursor !== undefined) next.sessionsCursor = action.nextCursor;
      else delete next.sessionsCursor;
      return next;
    }
    case 'sessions_page': {
      const next: AppState = { ...state, sessions: mergeSessions(state.sessions, action.sessions) };
      if (action.nextCursor !== undefined) next.sessionsCursor = action.nextCursor;
      else delete next.sessionsCursor;
      return next;
    }
    case 'session_updated':
      return { ...state, sessions: upsertSession(state.sessions, action.session) };
    case 'filter': {
      const filters = { ...state.filters };
      if (action.value === undefined || action.value === '') delete filters[action.key];
      else filters[action.key] = action.value;
      return { ...state, filters };
    }
    case 'search_started':
      return { ...state, search: { ...withoutError(state.search), query: action.query, running: true } };
    case 'search_done':
      if (action.query !== state.search.query) return state;
      return {
        ...state,
        search: {
          query: action.query,
          running: false,
          matches: new Set(action.sessionIds),
          ...(action.hits !== undefined ? { hits: action.hits } : {}),
        },
      };
    case 'search_failed':
      if (action.query !== state.search.query) return state;
      return { ...state, search: { query: action.query, running: false, error: action.error } };
    case 'search_cleared':
      return { ...state, search: { query: '', running: false } };
    case 'select': {
      if (action.sessionId === state.selectedId) return state;
      const next: AppState = { ...state };
      if (action.sessionId === undefined) {
        delete next.selectedId;
        delete next.view;
      } else {
        next.selectedId = action.sessionId;
        next.view = emptyView(action.sessionId);
      }
      return next;
    }
    case 'history_loaded':
      return updateView(state, action.sessionId, (view) => {
        // History first, then what arrived live meanwhile: applyEvents skips what is already in.
        // A reload starts from nothing: what the view held may be another branch.
        const from = view.reloading ? emptyView(view.sessionId) : view;
        const history = action.folded ?? foldHistory(from, action.events);
        const traced = history.trace ?? traceEvents(from.trace, action.events);
        // Paged (`place`): the live events that came meanwhile are in the window already (or past it).
        const { conversation, series, trace } = foldHistory(
          { ...history, trace: traced },
          action.place ? [] : view.pending,
        );
        const next: SessionView = { ...view, loading: false, pending: [], conversation, series, trace };
        if (action.place) next.place = { ...action.place };
        else delete next.place;
        delete next.loadError;
        delete next.reloading;
        return next;
      });
    case 'history_window':
      return updateView(state, action.sessionId, (view) => {
        if (view.loading || view.reloading) return view;
        const { conversation, series, trace } = action.folded;
        return { ...view, conversation, series, trace: trace ?? view.trace, place: { ...action.place } };
      });
    case 'history_paging':
      return updateView(state, action.sessionId, (view) => {
        if (!view.place) return view;
        const place: NonNullable<SessionView['place']> = { atStart: view.place.atStart, atTail: view.place.atTail };
        if (action.loading !== undefined) place.loading = action.loading;
        return { ...view, place };
      });
    case 'history_reload':
      return updateView(state, action.sessionId, (view) => (view.loading ? view : { ...view, reloading: true }));
    case 'branches':
      return updateView(state, action.sessionId, (view) => {
        const next: SessionView = { ...view };
        if (action.branches === undefined) delete next.branches;
        else next.branches = action.branches;
        return next;
      });
    case 'history_failed':
      return updateView(state, action.sessionId, (view) => ({ ...view, loading: false, loadError: action.error }));
    case 'events':
      return updateView(state, action.sessionId, (view) =>
        view.loading || view.reloading
          ? { ...view, pending: [...view.pending, ...action.events] }
          : view.place?.atTail === false
            ? // The pages held end before the tail: these are read again with the page they are in.
              view
            : {
                ...view,
                conversation: applyEvents(view.conversation, action.events),
                series: foldSeries(view.series, action.events),
                trace: traceEvents(view.trace, action.events),
              },
      );
    case 'checkpoints':
      return updateView(state, action.sessionId, (view) => {
        const next: SessionView = { ...view, checkpoints: action.data };
        delete next.checkpointsError;
        return next;
      });
    case 'checkpoints_failed':
      return updateView(state, action.sessionId, (view) => ({ ...view, checkpointsError: action.error }));
    case 'preview':
      return updateView(state, action.sessionId, (view) => {
        const next: SessionView = { ...view, preview: action.result };
        delete next.previewError;
        return next;
      });
    case 'preview_failed':
      return updateView(state, action.sessionId, (view) => {
        const next: SessionView = { ...view, previewError: action.error };
        delete next.preview;
        return next;
      });
    case 'request_pane':
      return updateView(state, action.sessionId, (view) => {
        const next: SessionView = { ...view };
        if (action.pane === undefined) delete next.requestPane;
        else next.requestPane = action.pane;
        return next;
      });
    case 'compaction_started':
      return updateView(state, action.payload.sessionId, (view) => ({
        ...view,
        compaction: {
          trigger: action.payload.trigger,
          tokensBefore: action.payload.tokensBefore,
          startedAt: action.at,
        },
      }));
    case 'compaction_status':
      return updateView(state, action.sessionId, (view) => {
        const running = action.compaction;
        const startedAt = running ? Date.parse(running.startedAt) : Number.NaN;
        const next: SessionView = { ...view };
        if (running && !Number.isNaN(startedAt)) {
          next.compaction = {
            trigger: running.trigger,
            startedAt,
            ...(running.tokensBefore !== undefined ? { tokensBefore: running.tokensBefore } : {}),
          };
        } else if (!running) delete next.compaction;
        return next;
      });
    case 'compaction_completed':
      return updateView(state, action.payload.sessionId, (view) => {
        const next: SessionView = {
          ...view,
          lastCompaction: {
            ok: true,
            version: action.payload.version,
            tokensBefore: action.payload.tokensBefore,
            tokensAfter: action.payload.tokensAfter,
          },
        };
        delete next.compaction;
        return next;
      });
    case 'compaction_failed':
      return updateView(state, action.payload.sessionId, (view) => {
        const next: SessionView = { ...view, lastCompaction: { ok: false, message: action.payload.message } };
        delete next.compaction;
        return next;
      });
    case 'backends':
      return { ...state, backends: action.backends };
    case 'goal_status':
      if (!state.draft || state.draft.sessionId !== action.sessionId) return state;
      return { ...state, draft: { ...state.draft, goal: action.goal } };
    case 'draft': {
      const next: AppState = { ...state, turnRunning: action.status?.turnRunning ?? false };
      if (action.status && action.status.status === 'active') next.draft = action.status;
      else delete next.draft;
      return next;
    }
    case 'draft_notification': {
      // Pushed after each turn: the turn is over.
      const draft = state.draft;
      if (!draft || draft.sessionId !== action.status.sessionId) return state;
      return {
        ...state,
        turnRunning: false,
        draft: {
          ...draft,
          turnCount: action.status.turnCount,
          cumulativeCostUsd: action.status.costUsd,
          contextPct: action.status.contextPct,
          lastActivityAt: action.status.lastActivity,
          turnRunning: false,
        },
      };
    }
    case 'turn_started':
      return { ...state, turnRunning: true };
    case 'turn_ended':
      return { ...state, turnRunning: false };
    case 'catalog': {
      const catalog = { ...state.catalog };
      if (action.projects) catalog.projects = action.projects;
      if (action.tasks) catalog.tasks = action.tasks;
      if (action.roles) catalog.roles = action.roles;
      if (action.project !== undefined) catalog.project = action.project;
      if (action.task !== undefined) catalog.task = action.task;
      return { ...state, catalog };
    }
    case 'notice': {
      const notices = [...state.notices, { id: state.nextNoticeId, tone: action.tone, text: action.text }].slice(
        -MAX_NOTICES,
      );
      return { ...state, notices, nextNoticeId: state.nextNoticeId + 1 };
    }
    case 'dismiss':
      return { ...state, notices: state.notices.filter((notice) => notice.id !== action.id) };
    case 'busy':
      return { ...state, busy: { ...state.busy, [action.key]: action.value } };
  }
}

function withoutError<T extends { error?: string }>(value: T): T {
  const copy = { ...value };
  delete copy.error;
  return copy;
}

/** Changes the view when it is still the selected session's; anything for another session is stale and dropped. */
function updateView(state: AppState, sessionId: string, change: (view: SessionView) => SessionView): AppState {
  if (!state.view || state.view.sessionId !== sessionId) return state;
  return { ...state, view: change(state.view) };
}

/** The selected session's record from the list. */
export function selectedSession(state: AppState): SessionInfo | undefined {
  return state.selectedId === undefined
    ? undefined
    : state.sessions.find((session) => session.sessionId === state.selectedId);
}

/** True when the selected session is this page's draft: the prompt box can submit to it. */
export function canPrompt(state: AppState): boolean {
  return state.draft !== undefined && state.draft.sessionId === state.selectedId;
}

/** Where a first message typed with no draft goes: the chosen project's default role, into the task just made in the draft form, or a new one. */
export interface FirstMessageTarget {
  project: string;
  role: string;
  /** The task to draft into; without one, a task named after the message is created. */
  task?: string;
}

/**
 * Whether the page offers a first message, and where it goes: connected, a project chosen, and no
 * draft on this page's channel. The role is the server's (`ProjectInfo.defaultRole`), so every
 * client drafts the same one.
 */
export function firstMessageTarget(state: AppState): FirstMessageTarget | undefined {
  if (state.connection !== 'connected' || state.draft !== undefined) return undefined;
  const project = state.catalog.projects.find((entry) => entry.name === state.catalog.project);
  if (!project) return undefined;
  const task =
    state.catalog.task !== undefined && state.catalog.tasks.some((entry) => entry.slug === state.catalog.task)
      ? state.catalog.task
      : undefined;
  return { project: project.name, role: project.defaultRole, ...(task !== undefined ? { task } : {}) };
}
