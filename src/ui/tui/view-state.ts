import {
  applyEvents,
  contextPercent,
  emptyConversation,
  MAIN_CONVERSATION,
  type ConversationBlock,
  type ConversationState,
  type StreamEvent,
  type ToolUseBlock,
} from '../../conversation/index.js';
import type { AgentInfo, ConnectionState, DraftStatus, GoalStatus, NotificationParams } from '../../protocol/index.js';

/**
 * The terminal UI's state and the one reducer that folds protocol traffic into it. Pure apart from
 * `printedKeys`, an append-only set shared between states (adding a key twice is harmless).
 *
 * History is split in two: `printed`, an append-only list rendered once into Ink's `<Static>`
 * (the terminal's scrollback), and `open`, the main-conversation blocks still in flight, which are
 * the only blocks that re-render. A block moves from `open` to `printed` when it completes.
 */

export type Tone = 'info' | 'success' | 'warning' | 'error' | 'dim' | 'accent';

export interface NoteLine {
  text: string;
  tone?: Tone;
  bold?: boolean;
}

export type HistoryItem =
  | { kind: 'banner'; key: string; lines: NoteLine[] }
  | { kind: 'note'; key: string; lines: NoteLine[] }
  | {
      kind: 'block';
      key: string;
      block: ConversationBlock;
      /** A worker's thread, for a `subagent` block. */
      thread?: readonly ConversationBlock[];
      /** Cost of the worker's thread so far (its turns' metadata). */
      threadCost?: number;
      /** For a `tool_result`, the call it answers (an edit shows as a diff, a command as a terminal block). */
      toolUse?: ToolUseBlock;
      /** Thinking and worker threads are printed collapsed unless details were on (Ctrl+O). */
      expanded: boolean;
    };

export interface DraftView {
  sessionId: string;
  role: string;
  project: string;
  taskSlug: string;
  backend: string;
  model?: string;
  turnCount: number;
  costUsd: number;
  costUnknown: boolean;
  /** Occupancy of the last request over the window, in percent; null while the window is unknown. */
  contextPct: number | null;
  contextWindow: number;
  lastInputTokens: number;
  startedAt: string;
  /** Where the session compacts, in percent of the window (managed: the budget's threshold). */
  compactionPct?: number;
  /** The draft's goal, running or the last that ended (the title bar shows it and its budget). */
  goal?: GoalStatus;
}

export interface Activity {
  id: string;
  label: string;
  startedAt: number;
}

export interface ViewState {
  connection: ConnectionState;
  everConnected: boolean;
  /** Why the last connection attempt failed, while not connected. */
  connectionError?: string;
  channelId?: string;
  projectRoot?: string;
  /** The server snapshots the project's files, so `/rewind` can restore them. */
  fileSnapshots?: boolean;
  /** Text for the input line to take, for editing (a rewound message); `serial` tells one from the next. */
  prefill?: { text: string; serial: number };
  /** The active project and task `/draft` uses. */
  project?: string;
  task?: string;
  draft?: DraftView;
  /** The draft session's conversation, rebuilt with `applyEvents`. */
  conversation?: ConversationState;
  /** History of the draft session is being fetched: live events wait in `pending`. */
  loading: boolean;
  pending: StreamEvent[];
  /** Ids of main-conversation blocks in flight, in the order they started. */
  open: string[];
  printed: HistoryItem[];
  printedKeys: Set<string>;
  agents: Record<string, AgentInfo>;
  /** Cost per worker thread (conversation id), from its turns' metadata. */
  threadCosts: Record<string, number>;
  /**
   * A turn of the draft is in flight since `startedAt`: from a message sent here, or read from the
   * log (a main user message after the last main `turnComplete`). It ends with a main
   * `turnComplete` after `afterSeq`. Status snapshots never start one: the log is the truth.
   */
  turn?: { startedAt: number; afterSeq: number };
  activities: Activity[];
  /** Details on (Ctrl+O): thinking and worker threads shown in full. */
  expanded: boolean;
  /** Names for Tab completion. */
  roles: string[];
  tasks: string[];
  projects: string[];
  notes: number;
}

export type ViewAction =
  | { type: 'connection'; state: ConnectionState; error?: string }
  | { type: 'server'; channelId: string; projectRoot: string; fileSnapshots?: boolean }
  | { type: 'prefill'; text: string }
  | { type: 'select'; project?: string | null; task?: string | null }
  | { type: 'catalog'; roles?: string[]; tasks?: string[]; projects?: string[] }
  | { type: 'draft_loading'; status: DraftStatus }
  | { type: 'history_loaded'; sessionId: string; events: StreamEvent[]; historyLimit: number; now: number }
  | { type: 'draft_status'; status: DraftStatus }
  | { type: 'goal_status'; sessionId: string; goal: GoalStatus }
  | { type: 'draft_notification'; status: NotificationParams<'draft_status'> }
  | { type: 'compaction_point'; sessionId: string; compactionPct: number }
  | { type: 'draft_closed' }
  | { type: 'events'; sessionId: string; events: StreamEvent[]; now: number }
  | { type: 'agents'; agents: AgentInfo[] }
  | { type: 'agent'; agent: AgentInfo }
  | { type: 'note'; lines: NoteLine[] }
  | { type: 'banner'; lines: NoteLine[] }
  | { type: 'activity_start'; activity: Activity }
  | { type: 'activity_end'; id: string }
  | { type: 'turn_started'; at: number }
  | { type: 'turn_ended' }
  | { type: 'toggle_expanded' };

export function initialViewState(): ViewState {
  return {
    // The first thing the app does is connect: no "Disconnected" flash before it starts.
    connection: 'connecting',
    everConnected: false,
    loading: false,
    pending: [],
    open: [],
    printed: [],
    printedKeys: new Set(),
    agents: {},
    threadCosts: {},
    activities: [],
    expanded: false,
    roles: [],
    tasks: [],
    projects: [],
    notes: 0,
  };
}

export function reduceView(state: ViewState, action: ViewAction): ViewState {
  switch (action.type) {
    case 'connection': {
      const connected = action.state === 'connected';
      const next: ViewState = { ...state, connection: action.state, everConnected: state.everConnected || connected };
      if (connected || action.error === undefined) delete next.connectionError;
      if (action.error !== undefined && !connected) next.connectionError = action.error;
      return next;
    }
    case 'server':
      return {
        ...state,
        channelId: action.channelId,
        projectRoot: action.projectRoot,
        fileSnapshots: action.fileSnapshots === true,
      };
    case 'prefill':
      return { ...state, prefill: { text: action.text, serial: (state.prefill?.serial ?? 0) + 1 } };
    case 'select': {
      const next = { ...state };
      if (action.project === null) delete next.project;
      else if (action.project !== undefined) next.project = action.project;
      if (action.task === null) delete next.task;
      else if (action.task !== undefined) next.task = action.task;
      return next;
    }
    case 'catalog':
      return {
        ...state,
        ...(action.roles ? { roles: action.roles } : {}),
        ...(action.tasks ? { tasks: action.tasks } : {}),
        ...(action.projects ? { projects: action.projects } : {}),
      };
    case 'draft_loading': {
      const flushed = flushOpen(state);
      return {
        ...flushed,
        draft: draftView(action.status, state.draft?.sessionId === action.status.sessionId ? state.draft : undefined),
        conversation: emptyConversation(action.status.sessionId),
        loading: true,
        pending: [],
        open: [],
        project: action.status.project,
        task: action.status.taskSlug,
        threadCosts: {},
        turn: undefined,
      };
    }
    case 'history_loaded':
      return historyLoaded(state, action.sessionId, action.events, action.historyLimit, action.now);
    case 'draft_status':
      if (!state.draft || state.draft.sessionId !== action.status.sessionId) return state;
      return { ...state, draft: draftView(action.status, state.draft) };
    case 'goal_status':
      if (!state.draft || state.draft.sessionId !== action.sessionId) return state;
      return { ...state, draft: { ...state.draft, goal: action.goal } };
    case 'draft_notification': {
      const draft = state.draft;
      if (!draft || draft.sessionId !== action.status.sessionId) return state;
      return {
        ...state,
        draft: {
          ...draft,
          role: action.status.role,
          turnCount: action.status.turnCount,
          costUsd: action.status.costUsd,
          contextPct: action.status.contextPct,
        },
      };
    }
    case 'compaction_point':
      if (!state.draft || state.draft.sessionId !== action.sessionId) return state;
      return { ...state, draft: { ...state.draft, compactionPct: action.compactionPct } };
    case 'draft_closed': {
      const flushed = flushOpen(state);
      const next = { ...flushed, open: [], loading: false, pending: [] };
      delete next.draft;
      delete next.conversation;
      delete next.turn;
      return next;
    }
    case 'events':
      return applyLiveEvents(state, action.sessionId, action.events, action.now);
    case 'agents': {
      const agents: Record<string, AgentInfo> = {};
      for (const agent of action.agents) agents[agent.agentId] = agent;
      return { ...state, agents };
    }
    case 'agent':
      return { ...state, agents: { ...state.agents, [action.agent.agentId]: action.agent } };
    case 'note':
      return print(
        state,
        { kind: 'note', key: `note:${state.notes}`, lines: action.lines },
        { notes: state.notes + 1 },
      );
    case 'banner':
      return print(
        state,
        { kind: 'banner', key: `banner:${state.notes}`, lines: action.lines },
        { notes: state.notes + 1 },
      );
    case 'activity_start':
      return {
        ...state,
        activities: [...state.activities.filter((entry) => entry.id !== action.activity.id), action.activity],
      };
    case 'activity_end':
      return state.activities.some((entry) => entry.id === action.id)
        ? { ...state, activities: state.activities.filter((entry) => entry.id !== action.id) }
        : state;
    case 'turn_started':
      return { ...state, turn: { startedAt: action.at, afterSeq: state.conversation?.lastSeq ?? -1 } };
    case 'turn_ended': {
      if (!state.turn) return state;
      const next = { ...state };
      delete next.turn;
      return next;
    }
    case 'toggle_expanded':
      return { ...state, expanded: !state.expanded };
  }
}

function draftView(status: DraftStatus, previous: DraftView | undefined): DraftView {
  return {
    sessionId: status.sessionId,
    role: status.role,
    project: status.project,
    taskSlug: status.taskSlug,
    backend: status.backend,
    ...(status.model !== undefined ? { model: status.model } : {}),
    turnCount: status.turnCount,
    costUsd: status.cumulativeCostUsd,
    costUnknown: status.costUnknown,
    contextPct: status.contextPct,
    contextWindow: status.contextWindow,
    lastInputTokens: status.lastInputTokens,
    startedAt: status.startedAt,
    ...(previous?.compactionPct !== undefined ? { compactionPct: previous.compactionPct } : {}),
    ...(status.goal ? { goal: status.goal } : previous?.goal ? { goal: previous.goal } : {}),
  };
}

function print(state: ViewState, item: HistoryItem, extra: Partial<ViewState> = {}): ViewState {
  if (state.printedKeys.has(item.key)) return { ...state, ...extra };
  state.printedKeys.add(item.key);
  return { ...state, ...extra, printed: [...state.printed, item] };
}

function blockKey(sessionId: string, conversationId: string, blockId: string): string {
  return `block:${sessionId}:${conversationId}:${blockId}`;
}

function findBlock(blocks: readonly ConversationBlock[], id: string): ConversationBlock | undefined {
  for (let index = blocks.length - 1; index >= 0; index--) if (blocks[index]!.id === id) return blocks[index];
  return undefined;
}

/** Finds the call a tool result answers; the default looks back from the end, where live results sit. */
type ToolUseLookup = (toolUseId: string) => ToolUseBlock | undefined;

function lookBack(conversation: ConversationState): ToolUseLookup {
  return (toolUseId) => {
    const blocks = conversation.blocks;
    for (let index = blocks.length - 1; index >= 0; index--) {
      const block = blocks[index]!;
      if (block.type === 'tool_use' && block.toolUseId === toolUseId) return block;
    }
    return undefined;
  };
}

/** One pass over a loaded history: a long one has thousands of results, each looked up once. */
function toolUseIndex(conversation: ConversationState): ToolUseLookup {
  const calls = new Map<string, ToolUseBlock>();
  for (const block of conversation.blocks) if (block.type === 'tool_use') calls.set(block.toolUseId, block);
  return (toolUseId) => calls.get(toolUseId);
}

function blockItem(
  state: ViewState,
  conversation: ConversationState,
  block: ConversationBlock,
  threadCosts: Record<string, number>,
  findToolUse: ToolUseLookup = lookBack(conversation),
): HistoryItem {
  const item: HistoryItem = {
    kind: 'block',
    key: blockKey(conversation.sessionId, MAIN_CONVERSATION, block.id),
    block,
    expanded: state.expanded,
  };
  if (block.type === 'tool_result') {
    const toolUse = findToolUse(block.toolUseId);
    if (toolUse) item.toolUse = toolUse;
  }
  if (block.type === 'subagent') {
    const thread = conversation.subagents.find((entry) => entry.id === block.subagentId);
    if (thread) item.thread = thread.blocks;
    const cost = threadCosts[block.subagentId];
    if (cost !== undefined) item.threadCost = cost;
  }
  return item;
}

/** Prints what is still in flight as it stands (a draft that closes mid-turn keeps what was shown). */
function flushOpen(state: ViewState): ViewState {
  const conversation = state.conversation;
  if (!conversation || state.open.length === 0) return state;
  let next = state;
  for (const id of state.open) {
    const block = findBlock(conversation.blocks, id);
    if (block) next = print(next, blockItem(next, conversation, block, state.threadCosts));
  }
  return { ...next, open: [] };
}

function isUserMessage(event: StreamEvent): boolean {
  return (
    (event.type === 'block_start' || event.type === 'block_complete') &&
    event.conversationId === MAIN_CONVERSATION &&
    event.block.type === 'user_message'
  );
}

function isTurnEnd(event: StreamEvent): boolean {
  return (
    event.type === 'metadata_update' &&
    event.conversationId === MAIN_CONVERSATION &&
    event.metadata.turnComplete === true
  );
}

function historyLoaded(
  state: ViewState,
  sessionId: string,
  events: StreamEvent[],
  historyLimit: number,
  now: number,
): ViewState {
  if (!state.conversation || state.conversation.sessionId !== sessionId) return state;
  const all = [...events, ...state.pending].sort((a, b) => a.seq - b.seq);
  const conversation = applyEvents(state.conversation, all);
  const threadCosts: Record<string, number> = { ...state.threadCosts };
  let lastUser = -1;
  let lastEnd = -1;
  for (const event of all) {
    if (isUserMessage(event)) lastUser = Math.max(lastUser, event.seq);
    if (isTurnEnd(event)) lastEnd = Math.max(lastEnd, event.seq);
    if (
      event.type === 'metadata_update' &&
      event.conversationId !== MAIN_CONVERSATION &&
      event.metadata.costUsd !== undefined
    ) {
      threadCosts[event.conversationId] = (threadCosts[event.conversationId] ?? 0) + event.metadata.costUsd;
    }
  }
  const finished = conversation.blocks.filter((block) => block.completedAt !== undefined);
  const open = conversation.blocks.filter((block) => block.completedAt === undefined).map((block) => block.id);
  let next: ViewState = { ...state, conversation, loading: false, pending: [], open, threadCosts };
  // A turn runs when the log's last user message has no turn end after it (e.g. one sent from another terminal).
  if (lastUser > lastEnd) next.turn = state.turn ?? { startedAt: now, afterSeq: lastUser - 1 };
  else if (state.turn && lastEnd > state.turn.afterSeq) delete next.turn;
  const omitted = Math.max(0, finished.length - historyLimit);
  if (omitted > 0) {
    next = print(next, {
      kind: 'note',
      key: `omitted:${sessionId}`,
      lines: [
        {
          text: `… ${omitted.toLocaleString('en-US')} earlier blocks of this conversation are not shown (parley sessions show ${sessionId}).`,
          tone: 'dim',
        },
      ],
    });
  }
  const findToolUse = toolUseIndex(conversation);
  for (const block of finished.slice(omitted))
    next = print(next, blockItem(next, conversation, block, threadCosts, findToolUse));
  return withMetrics(next);
}

function applyLiveEvents(state: ViewState, sessionId: string, events: StreamEvent[], now: number): ViewState {
  const before = state.conversation;
  if (!before || before.sessionId !== sessionId) return state;
  if (state.loading) return { ...state, pending: [...state.pending, ...events] };
  const conversation = applyEvents(before, events);
  if (conversation === before) return state;
  let open = state.open;
  let threadCosts = state.threadCosts;
  let turn = state.turn;
  const completed: string[] = [];
  let lastSeq = before.lastSeq;
  for (const event of events) {
    // Only the events applyEvents took (it skips what is already in).
    if (event.seq <= lastSeq || event.sessionId !== sessionId) continue;
    lastSeq = event.seq;
    if (isUserMessage(event) && !turn) turn = { startedAt: now, afterSeq: event.seq - 1 };
    switch (event.type) {
      case 'block_start':
        if (event.conversationId !== MAIN_CONVERSATION) break;
        if (event.block.completedAt !== undefined) completed.push(event.block.id);
        else if (!open.includes(event.block.id)) open = [...open, event.block.id];
        break;
      case 'block_complete':
        if (event.conversationId === MAIN_CONVERSATION) completed.push(event.block.id);
        break;
      case 'metadata_update':
        if (event.conversationId !== MAIN_CONVERSATION) {
          if (event.metadata.costUsd !== undefined)
            threadCosts = {
              ...threadCosts,
              [event.conversationId]: (threadCosts[event.conversationId] ?? 0) + event.metadata.costUsd,
            };
        } else if (event.metadata.turnComplete && turn && event.seq > turn.afterSeq) {
          turn = undefined;
        }
        break;
      default:
        break;
    }
  }
  let next: ViewState = { ...state, conversation, threadCosts };
  if (turn) next.turn = turn;
  else delete next.turn;
  if (completed.length > 0) {
    const done = new Set(completed);
    open = open.filter((id) => !done.has(id));
    for (const id of completed) {
      const block = findBlock(conversation.blocks, id);
      if (block) next = print(next, blockItem(next, conversation, block, threadCosts));
    }
  }
  next.open = open;
  return conversation.metrics === before.metrics ? next : withMetrics(next);
}

/** The title bar follows the log between `draft_status` pushes: same numbers, from the same events. */
function withMetrics(state: ViewState): ViewState {
  const draft = state.draft;
  const metrics = state.conversation?.metrics;
  if (!draft || !metrics || state.conversation?.sessionId !== draft.sessionId) return state;
  const pct = contextPercent(metrics);
  return {
    ...state,
    draft: {
      ...draft,
      turnCount: Math.max(draft.turnCount, metrics.turns),
      costUsd: Math.max(draft.costUsd, metrics.costUsd),
      costUnknown: draft.costUnknown || metrics.costUnknown,
      ...(pct !== undefined && metrics.lastInputTokens > 0
        ? { contextPct: pct, lastInputTokens: metrics.lastInputTokens }
        : {}),
      ...(metrics.contextWindow !== undefined ? { contextWindow: metrics.contextWindow } : {}),
    },
  };
}

/** Workers of this channel that are queued or running. */
export function activeWorkers(state: ViewState): AgentInfo[] {
  return Object.values(state.agents).filter(
    (agent) => agent.kind === 'worker' && (agent.status === 'queued' || agent.status === 'running'),
  );
}

export type ContextLevel = 'normal' | 'warning' | 'critical';

/**
 * How close the context is to compaction: `warning` (yellow) past 80% of the way to the
 * compaction point, `critical` (red) from 95% of it. Without a known point (native back ends
 * compact on their own near the window), the window itself is the point.
 */
export function contextLevel(pct: number | null, compactionPct: number | undefined): ContextLevel {
  if (pct === null) return 'normal';
  const point = compactionPct ?? 100;
  if (pct >= point * 0.95) return 'critical';
  if (pct >= point * 0.8) return 'warning';
  return 'normal';
}

/** Blocks in flight, looked up in the conversation (they sit near its end). */
export function openBlocks(state: ViewState): ConversationBlock[] {
  const conversation = state.conversation;
  if (!conversation) return [];
  const found: ConversationBlock[] = [];
  for (const id of state.open) {
    const block = findBlock(conversation.blocks, id);
    if (block) found.push(block);
  }
  return found;
}

/** The thread of a worker (subagent) in the draft's conversation. */
export function threadOf(state: ViewState, subagentId: string): readonly ConversationBlock[] {
  return state.conversation?.subagents.find((entry) => entry.id === subagentId)?.blocks ?? [];
}
