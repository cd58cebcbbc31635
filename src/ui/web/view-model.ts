import {
  contextPercent,
  MAIN_CONVERSATION,
  type ConversationBlock,
  type ConversationState,
  type SessionMetrics,
  type StreamEvent,
  type SubagentThread,
  type ToolResultBlock,
} from '../../conversation/index.js';
import { RPC_PATH, type CheckpointWire, type SessionInfo } from '../../protocol/index.js';
import { formatCount, formatTime, plural } from './format.js';

/** What the page shows, derived from protocol data by pure functions (unit-tested without a browser). */

// ---- sessions ------------------------------------------------------------------------------------

export const FILTER_KEYS = ['kind', 'feature', 'task', 'state', 'agentType', 'status', 'backend'] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];
export type SessionFilters = Partial<Record<FilterKey, string>>;

export const FILTER_LABELS: Record<FilterKey, string> = {
  kind: 'Kind',
  feature: 'Feature',
  task: 'Task',
  state: 'State',
  agentType: 'Agent',
  status: 'Status',
  backend: 'Back end',
};

/**
 * A session's value for a filter. A draft's feature is its project and its task its task slug, so
 * one filter finds a task's drafts and its per-state task sessions alike.
 */
export function filterValue(session: SessionInfo, key: FilterKey): string | undefined {
  const scope = session.scope;
  switch (key) {
    case 'kind':
      return scope.kind;
    case 'feature':
      return scope.kind === 'feature' || scope.kind === 'task'
        ? scope.featureId
        : scope.kind === 'draft'
          ? scope.project
          : undefined;
    case 'task':
      return scope.kind === 'task' ? scope.taskId : scope.kind === 'draft' ? scope.taskSlug : undefined;
    case 'state':
      return scope.kind === 'task' ? scope.taskState : undefined;
    case 'agentType':
      return session.agentType;
    case 'status':
      return session.status;
    case 'backend':
      return session.type;
  }
}

/** The distinct values a filter can take over these sessions, sorted. */
export function filterOptions(sessions: readonly SessionInfo[], key: FilterKey): string[] {
  const values = new Set<string>();
  for (const session of sessions) {
    const value = filterValue(session, key);
    if (value !== undefined && value !== '') values.add(value);
  }
  return [...values].sort((a, b) => a.localeCompare(b));
}

/** Sessions that pass every set filter and, when a search ran, are among its matches; order kept. */
export function filterSessions(
  sessions: readonly SessionInfo[],
  filters: SessionFilters,
  matches?: ReadonlySet<string>,
): SessionInfo[] {
  const active = FILTER_KEYS.filter((key) => filters[key] !== undefined && filters[key] !== '');
  return sessions.filter(
    (session) =>
      (matches === undefined || matches.has(session.sessionId)) &&
      active.every((key) => filterValue(session, key) === filters[key]),
  );
}

/** Last activity, for ordering and display. */
export function lastActivityOf(session: SessionInfo): number {
  return session.lastActivity ?? session.updatedAt;
}

/** Most recently active first (the server's order), ties by id so the list never jumps. */
export function sortSessions(sessions: readonly SessionInfo[]): SessionInfo[] {
  // The server's listing order: pinned first, then the most recently active.
  return [...sessions].sort(
    (a, b) =>
      Number(b.pinned === true) - Number(a.pinned === true) ||
      lastActivityOf(b) - lastActivityOf(a) ||
      a.sessionId.localeCompare(b.sessionId),
  );
}

/** The list with a page of sessions added (or replaced), sorted once. */
export function mergeSessions(sessions: readonly SessionInfo[], page: readonly SessionInfo[]): SessionInfo[] {
  const incoming = new Set(page.map((session) => session.sessionId));
  return sortSessions([...sessions.filter((entry) => !incoming.has(entry.sessionId)), ...page]);
}

/** The list with `session` added or replaced, re-sorted. */
export function upsertSession(sessions: readonly SessionInfo[], session: SessionInfo): SessionInfo[] {
  return sortSessions([...sessions.filter((entry) => entry.sessionId !== session.sessionId), session]);
}

const KIND_LABELS: Record<SessionInfo['scope']['kind'], string> = {
  draft: 'draft',
  task: 'task',
  feature: 'feature',
  workflow: 'workflow',
  imported: 'imported',
};

/** A row's title and the line under it. */
export function sessionLabel(session: SessionInfo): { title: string; detail: string; kind: string } {
  const scope = session.scope;
  let title: string;
  switch (scope.kind) {
    case 'draft':
      title = `${scope.role} · ${[scope.project, scope.taskSlug].filter(Boolean).join('/') || 'no task'}`;
      break;
    case 'task':
      title = `${session.agentType} · ${scope.featureId}/${scope.taskId} [${scope.taskState}]`;
      break;
    case 'feature':
      title = `${session.agentType} · ${scope.featureId}`;
      break;
    case 'workflow':
      title = `${scope.harness} · ${scope.agent}`;
      break;
    case 'imported':
      title = `${scope.source} · ${scope.nativeSessionId ?? session.sessionId}`;
      break;
  }
  if (session.title) title = session.title;
  const detail = [
    session.agentType,
    session.type,
    session.status === 'archived' ? 'archived' : undefined,
    session.readOnly ? 'read only' : undefined,
  ]
    .filter(Boolean)
    .join(' · ');
  return { title, detail, kind: KIND_LABELS[scope.kind] };
}

export interface SessionStats {
  lastActivity: number;
  /** Reported tokens (input, output, cache) when the back end reported any; else the stored estimate. */
  tokens: number;
  costUsd: number;
  costUnknown: boolean;
  /** Some of the cost is an estimate from the price table. */
  costEstimated: boolean;
  compactions: number;
  turns: number;
}

export function sessionStats(session: SessionInfo): SessionStats {
  const metrics = session.metrics;
  const reported = metrics
    ? metrics.inputTokens + metrics.outputTokens + metrics.cacheReadTokens + metrics.cacheWriteTokens
    : 0;
  return {
    lastActivity: lastActivityOf(session),
    tokens: reported > 0 ? reported : session.stats.totalTokens,
    costUsd: metrics?.costUsd ?? 0,
    costUnknown: metrics?.costUnknown ?? false,
    costEstimated: metrics?.costEstimated ?? false,
    compactions: session.stats.totalCompactions,
    turns: metrics?.turns ?? 0,
  };
}

// ---- conversation ----------------------------------------------------------------------------------

/** One entry of the chat panel: a block, a tool call with its result, or a worker with its thread. */
export interface ChatItem {
  key: string;
  block: ConversationBlock;
  /** The result of a `tool_use`, when it arrived. */
  result?: ToolResultBlock;
  /** A `subagent`'s own thread, as items. */
  thread?: ChatItem[];
}

/**
 * The blocks of a conversation as the chat panel shows them: each tool result joins its call, and
 * each worker block carries its thread (threads can nest). A result with no call stays on its own.
 */
export function chatItems(conversation: ConversationState): ChatItem[] {
  const threads = new Map<string, SubagentThread>(conversation.subagents.map((thread) => [thread.id, thread]));
  return itemsOf(conversation.blocks, threads, new Set([MAIN_CONVERSATION]));
}

function itemsOf(
  blocks: readonly ConversationBlock[],
  threads: ReadonlyMap<string, SubagentThread>,
  seen: ReadonlySet<string>,
): ChatItem[] {
  const calls = new Set<string>();
  for (const block of blocks) if (block.type === 'tool_use') calls.add(block.toolUseId);
  const results = new Map<string, ToolResultBlock>();
  for (const block of blocks)
    if (block.type === 'tool_result' && calls.has(block.toolUseId)) results.set(block.toolUseId, block);
  const items: ChatItem[] = [];
  for (const block of blocks) {
    if (block.type === 'tool_result' && calls.has(block.toolUseId)) continue;
    const item: ChatItem = { key: block.id, block };
    if (block.type === 'tool_use') {
      const result = results.get(block.toolUseId);
      if (result) item.result = result;
    }
    if (block.type === 'subagent' && !seen.has(block.subagentId)) {
      // A thread that names itself (directly or not) is shown once, not forever.
      const thread = threads.get(block.subagentId);
      item.thread = thread ? itemsOf(thread.blocks, threads, new Set([...seen, block.subagentId])) : [];
    }
    items.push(item);
  }
  return items;
}

// ---- cost and turns over time ----------------------------------------------------------------------

/** One `metadata_update` that cost something or closed a turn. */
export interface UsagePoint {
  at: number;
  /** This update's cost (workers included, as the session's metrics count it). */
  costUsd: number;
  /** It closed a turn of the main conversation. */
  turn: boolean;
}

export interface UsageSeries {
  lastSeq: number;
  points: UsagePoint[];
  costUsd: number;
  turns: number;
  costUnknown: boolean;
}

export function emptySeries(): UsageSeries {
  return { lastSeq: -1, points: [], costUsd: 0, turns: 0, costUnknown: false };
}

/**
 * Folds `metadata_update` events into cost and turns over time. Like `applyEvent`, an event at or
 * below `lastSeq` is already in, so replayed ranges change nothing.
 */
export function foldSeries(series: UsageSeries, events: Iterable<StreamEvent>): UsageSeries {
  let next: UsageSeries | undefined;
  for (const event of events) {
    const current = next ?? series;
    if (event.seq <= current.lastSeq) continue;
    next ??= { ...series, points: [...series.points] };
    next.lastSeq = event.seq;
    if (event.type !== 'metadata_update') continue;
    const metadata = event.metadata;
    const turn = event.conversationId === MAIN_CONVERSATION && metadata.turnComplete === true;
    if (metadata.costUnknown) next.costUnknown = true;
    if (metadata.costUsd === undefined && !turn) continue;
    next.costUsd += metadata.costUsd ?? 0;
    if (turn) next.turns += 1;
    next.points.push({ at: event.at, costUsd: metadata.costUsd ?? 0, turn });
  }
  return next ?? series;
}

/** The least distance between two turn ticks, in the chart's units (pixels). */
const TICK_SPACING = 1;

export interface ChartGeometry {
  width: number;
  height: number;
  /** SVG path data: cumulative cost as a step line, and the same closed to the axis (its fill). */
  costPath: string;
  costArea: string;
  /** x of each completed turn: a tick on the time axis per turn (one per pixel where turns crowd). */
  turnTicks: number[];
  maxCost: number;
  /** The axis' y (the ticks stand on it). */
  baseline: number;
  startAt: number;
  endAt: number;
}

/**
 * Cost and turns over time in a `width`×`height` box: cumulative cost as a step line scaled to its
 * maximum, and one tick per completed turn on the time axis. Points are put in time order first
 * (an imported session's worker threads interleave with the main thread). Undefined without points.
 */
export function chartGeometry(
  points: readonly UsagePoint[],
  size: { width: number; height: number; padding?: number },
): ChartGeometry | undefined {
  if (points.length === 0) return undefined;
  // Usually in order already (one thread's log): sorted only when not, keeping equal times in order.
  const inOrder = points.every((point, index) => index === 0 || points[index - 1]!.at <= point.at);
  const ordered = inOrder
    ? points
    : points
        .map((point, index) => ({ point, index }))
        .sort((a, b) => a.point.at - b.point.at || a.index - b.index)
        .map((entry) => entry.point);
  const padding = size.padding ?? 4;
  const startAt = ordered[0]!.at;
  const endAt = ordered.at(-1)!.at;
  const span = endAt - startAt;
  const innerWidth = size.width - padding * 2;
  const innerHeight = size.height - padding * 2;
  // Everything at one instant (a replayed or scripted burst): spread by order so the steps show.
  const xOf = (point: UsagePoint, index: number) =>
    padding +
    (span > 0
      ? ((point.at - startAt) / span) * innerWidth
      : ordered.length === 1
        ? innerWidth
        : (index / (ordered.length - 1)) * innerWidth);
  const cumulative: number[] = [];
  let total = 0;
  let maxCost = 0;
  for (const point of ordered) {
    cumulative.push((total += point.costUsd));
    if (total > maxCost) maxCost = total;
  }
  const baseline = padding + innerHeight;
  const yOf = (value: number) => baseline - (maxCost > 0 ? (value / maxCost) * innerHeight : 0);
  // The step line's corners, one per drawn x: points that land on the same x (a tenth of a pixel)
  // end in one step to the last one's height. Cost only grows, so the vertical line to that height
  // covers the ones in between: the line looks the same, and a session of thousands of turns has
  // hundreds of corners instead of thousands (their path was most of the chart's share of a long
  // session's first frame).
  const corners: Array<{ x: number; y: number }> = [];
  let lastX = padding;
  const turnTicks: number[] = [];
  ordered.forEach((point, index) => {
    const x = xOf(point, index);
    const y = yOf(cumulative[index]!);
    const corner = round(x);
    if (corners.length > 0 && corners.at(-1)!.x === corner) corners.at(-1)!.y = y;
    else corners.push({ x: corner, y });
    lastX = x;
    // Turns closer than a pixel share a tick: the axis looks the same, and a session of thousands
    // of turns draws hundreds of lines instead of thousands (they were most of a long session's first frame).
    if (point.turn && !(turnTicks.length > 0 && x - turnTicks.at(-1)! < TICK_SPACING)) turnTicks.push(round(x));
  });
  let costPath = `M${round(padding)},${round(baseline)}`;
  let previousY = baseline;
  for (const { x, y } of corners) {
    costPath += ` H${x}`;
    if (y !== previousY) costPath += ` V${round(y)}`;
    previousY = y;
  }
  const costArea = `${costPath} H${round(Math.max(lastX, padding + innerWidth))} V${round(baseline)} Z`;
  return { width: size.width, height: size.height, costPath, costArea, turnTicks, maxCost, baseline, startAt, endAt };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

// ---- context and the request -------------------------------------------------------------------------

/** What `preview_request` says about the next request (the fields the status view uses). */
export interface RequestPreviewSummary {
  totalTokens: number;
  budget?: number | undefined;
  threshold?: number | undefined;
  sections?: Record<string, number> | undefined;
}

export type ContextLevel = 'ok' | 'near' | 'over' | 'unknown';

export interface ContextGauge {
  /** Occupancy of the last request over the window, in percent; undefined while the window is unknown. */
  percent: number | undefined;
  /** Where the session compacts, in percent of the window (managed sessions: the budget's threshold). */
  thresholdPercent: number | undefined;
  level: ContextLevel;
  usedTokens: number;
  windowTokens: number | undefined;
}

/** Context % (input + cache of the last main request over the window) and the compaction point on the same scale. */
export function contextGauge(metrics: SessionMetrics, preview?: RequestPreviewSummary): ContextGauge {
  const percent = contextPercent(metrics);
  const window = metrics.contextWindow;
  const thresholdPercent = window && preview?.threshold !== undefined ? (preview.threshold / window) * 100 : undefined;
  let level: ContextLevel = 'unknown';
  if (percent !== undefined) {
    const point = thresholdPercent ?? 100;
    level = percent >= point ? 'over' : percent >= point * 0.8 ? 'near' : 'ok';
  }
  return { percent, thresholdPercent, level, usedTokens: metrics.lastInputTokens, windowTokens: window };
}

export const SECTION_LABELS: Record<string, string> = {
  role: 'Agent description',
  context: 'Context',
  checkpoint: 'Checkpoint',
  conversation: 'Recent messages',
  userPrompt: 'User prompt',
};
const SECTION_ORDER = Object.keys(SECTION_LABELS);

export interface SectionShare {
  name: string;
  label: string;
  tokens: number;
  /** Share of the whole request, in percent. */
  percent: number;
}

/** Tokens per section of the request (in the request's order), each with its share of the total. */
export function sectionShares(sections: Record<string, number> | undefined): SectionShare[] {
  if (!sections) return [];
  const names = [
    ...SECTION_ORDER.filter((name) => name in sections),
    ...Object.keys(sections)
      .filter((name) => !SECTION_ORDER.includes(name))
      .sort(),
  ];
  const total = names.reduce((sum, name) => sum + Math.max(0, sections[name] ?? 0), 0);
  return names.map((name) => {
    const tokens = Math.max(0, sections[name] ?? 0);
    return { name, label: SECTION_LABELS[name] ?? name, tokens, percent: total > 0 ? (tokens / total) * 100 : 0 };
  });
}

// ---- checkpoints -------------------------------------------------------------------------------------

export const CHECKPOINT_SECTIONS = [
  ['completed', 'Completed'],
  ['inProgress', 'In progress'],
  ['pending', 'Pending'],
  ['decisions', 'Decisions'],
  ['blockers', 'Blockers'],
] as const satisfies ReadonlyArray<readonly [keyof CheckpointWire['summary'], string]>;

/** What a compaction folded in: its `seq` range, how many messages, and their time span. */
export function foldedRange(checkpoint: CheckpointWire, options: { utc?: boolean } = {}): string {
  const covers = checkpoint.covers;
  const range =
    covers.fromSeq !== undefined ? `seq ${covers.fromSeq}–${covers.throughSeq}` : `up to seq ${covers.throughSeq}`;
  const span =
    covers.oldestMessageTimestamp && covers.newestMessageTimestamp
      ? `, ${formatTime(covers.oldestMessageTimestamp, options)} → ${formatTime(covers.newestMessageTimestamp, options)}`
      : '';
  return `${plural(covers.messageCount, 'message')} (${range})${span}`;
}

/** `v3 · manual · structural · 1,234 tokens · saved 40,000` (the summarizer when the checkpoint records it). */
export function checkpointHeadline(checkpoint: CheckpointWire): string {
  const saved = checkpoint.tokens.totalSaved > 0 ? ` · saved ${formatCount(checkpoint.tokens.totalSaved)}` : '';
  const by = checkpoint.summarizer ? ` · ${summarizerLabel(checkpoint.summarizer)}` : '';
  const copy = checkpoint.restoredFrom !== undefined ? ` · copy of v${checkpoint.restoredFrom}` : '';
  return `v${checkpoint.version} · ${checkpoint.trigger}${copy}${by} · ${formatCount(checkpoint.tokens.checkpoint)} tokens${saved}`;
}

/** `structural`, `structural (model failed)`, or the model's back end and name. */
export function summarizerLabel(summarizer: NonNullable<CheckpointWire['summarizer']>): string {
  if (summarizer.kind === 'structural') return summarizer.fallback ? 'structural (model failed)' : 'structural';
  return [summarizer.backend, summarizer.model].filter(Boolean).join(' ') || 'model';
}

// ---- connecting --------------------------------------------------------------------------------------

/** The token in a page URL's query (`?token=…`), if any. */
export function tokenFromSearch(search: string): string | undefined {
  const token = new URLSearchParams(search).get('token')?.trim();
  return token ? token : undefined;
}

/** The page's address without its token, so the secret does not stay in the address bar, history or a screenshot. */
export function withoutToken(href: string): string {
  const url = new URL(href);
  url.searchParams.delete('token');
  return url.toString();
}

/** The JSON-RPC endpoint of the server that served the page. */
export function rpcUrlFor(location: { protocol: string; host: string }): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${RPC_PATH}`;
}

export type ConnectProblem = 'missing' | 'refused';

/** What to tell a user who has no token, or whose token was refused. */
export function connectHelp(problem: ConnectProblem, origin: string): { title: string; lines: string[] } {
  const how = [
    'Open the address `parley serve` printed when it started: it ends with `?token=…`.',
    "Or read it from `server.json` in the project's data folder (`.parley/server.json` unless `--data-dir` or PARLEY_DATA_DIR says otherwise): its `url` field is the address with the token; the token alone is in `.parley/token`.",
    `Then open \`${origin}/?token=<token>\`, or paste the token below.`,
  ];
  if (problem === 'missing') return { title: "This page needs the server's token", lines: how };
  return {
    title: 'The server refused the connection',
    lines: [
      'The token is wrong or from another server (each data folder has its own), or the server is not running.',
      ...how,
    ],
  };
}
