import { MAIN_CONVERSATION, type ConversationBlock, type StreamEvent } from '../../conversation/index.js';
import type { MethodResult, SessionInfo } from '../../protocol/index.js';

/**
 * The history tree as the page shows it (pure, unit-tested): where the branches of the selected
 * session fork (the `‹ 2/3 ›` switchers), the point just before each user message (what a rewind
 * there keeps), and what a rewind will do, in words. The server is the truth (`list_branches`,
 * the record's `segments`); this only arranges what it said for the conversation on screen.
 */

/** One branch of `list_branches`. */
export type BranchEntry = MethodResult<'list_branches'>['branches'][number];

/** What a rewind restores. */
export type RewindRestore = 'conversation' | 'files' | 'both';

/** A run of consecutive seqs of the active branch, as the page read it. */
export interface SeqRun {
  first: number;
  last: number;
}

/**
 * What the page learned of the active branch's shape from its events, in their order: the runs
 * of seqs it holds (a checkpoint lies on the branch when the seq it covers through does) and, for
 * each user message of the main conversation, the seq of the event just before its first one (a
 * rewind to "before this message" keeps exactly that; -1: nothing before it).
 */
export interface BranchTrace {
  runs: readonly SeqRun[];
  pointsBefore: ReadonlyMap<string, number>;
  lastSeq: number;
}

export function emptyTrace(): BranchTrace {
  return { runs: [], pointsBefore: new Map(), lastSeq: -1 };
}

/**
 * The trace with `events` (in seq order) added. As `applyEvents` does, an event at or below the
 * last seq traced is already in and is skipped; the trace is returned as it was when nothing new came.
 */
export function traceEvents(trace: BranchTrace, events: readonly StreamEvent[]): BranchTrace {
  let runs: SeqRun[] | undefined;
  let points: Map<string, number> | undefined;
  let lastSeq = trace.lastSeq;
  for (const event of events) {
    if (event.seq <= lastSeq) continue;
    runs ??= [...trace.runs];
    const tail = runs.at(-1);
    if (tail && tail.last === event.seq - 1) runs[runs.length - 1] = { first: tail.first, last: event.seq };
    else runs.push({ first: event.seq, last: event.seq });
    if (
      (event.type === 'block_start' || event.type === 'block_complete') &&
      event.conversationId === MAIN_CONVERSATION &&
      event.block.type === 'user_message' &&
      !trace.pointsBefore.has(event.block.id) &&
      !points?.has(event.block.id)
    ) {
      points ??= new Map(trace.pointsBefore);
      points.set(event.block.id, lastSeq);
    }
    lastSeq = event.seq;
  }
  if (!runs) return trace;
  return { runs, pointsBefore: points ?? trace.pointsBefore, lastSeq };
}

/** True when `seq` lies on the traced branch (-1, the start, always does). */
export function onTrace(trace: BranchTrace, seq: number): boolean {
  if (seq < 0) return true;
  return trace.runs.some((run) => seq >= run.first && seq <= run.last);
}

// ---- where the branches fork ---------------------------------------------------------------------

/** One way on from a fork point: the branch a switch goes to (the newest leaf of that way). */
export interface BranchOption {
  branch: BranchEntry;
  /** The first seq after the fork point on this way; undefined for an active branch that ends at the point (rewound there). */
  next: number | undefined;
  active: boolean;
}

/** A point of the active branch where the history forks, and the ways on from it, oldest first. */
export interface ForkPoint {
  /** The last seq the ways share (-1: they part at the start). */
  seq: number;
  options: BranchOption[];
  /** Which option is the active branch's. */
  activeIndex: number;
}

type SessionShape = Pick<SessionInfo, 'segments' | 'forkedFrom' | 'head'>;

/**
 * The runs of seqs of the history that ends at `tip`, oldest first: the session's segments walked
 * back from the tip (as the server's history-path.ts does), and for a fork the part in its source as
 * one run from 0 (the same for every branch of the fork up to where they part in it).
 */
export function pathTo(session: SessionShape, tip: number): SeqRun[] {
  const rootParent = session.forkedFrom?.seq ?? -1;
  const segments = [{ firstSeq: rootParent + 1, parentSeq: rootParent }, ...(session.segments ?? [])];
  const root = segments[0]!;
  const runs: SeqRun[] = [];
  let at = tip;
  while (at >= root.firstSeq) {
    let segment = root;
    for (const each of segments) if (each.firstSeq <= at && each.firstSeq >= segment.firstSeq) segment = each;
    runs.push({ first: segment.firstSeq, last: at });
    at = Math.min(segment.parentSeq, segment.firstSeq - 1);
  }
  if (session.forkedFrom !== undefined && at >= 0) runs.push({ first: 0, last: at });
  return runs.reverse();
}

/** Where two paths part: the last seq they share and the first seq each has after it (undefined: it ends there). */
export function partingOf(
  a: readonly SeqRun[],
  b: readonly SeqRun[],
): { seq: number; nextA: number | undefined; nextB: number | undefined } {
  let seq = -1;
  for (let index = 0; ; index += 1) {
    const runA = a[index];
    const runB = b[index];
    if (!runA || !runB || runA.first !== runB.first) return { seq, nextA: runA?.first, nextB: runB?.first };
    if (runA.last === runB.last) {
      seq = runA.last;
      continue;
    }
    seq = Math.min(runA.last, runB.last);
    return {
      seq,
      nextA: runA.last > seq ? seq + 1 : a[index + 1]?.first,
      nextB: runB.last > seq ? seq + 1 : b[index + 1]?.first,
    };
  }
}

/** The leaf a switch to a way goes to: the one last active (newest event), then the longest. */
function newer(a: BranchEntry, b: BranchEntry): BranchEntry {
  const at = (entry: BranchEntry) => entry.at ?? -1;
  if (at(a) !== at(b)) return at(a) > at(b) ? a : b;
  return a.tipSeq >= b.tipSeq ? a : b;
}

/**
 * Every fork point on the active branch, oldest first. Each branch that is not active parts from
 * the active one at one seq; the branches parting at the same seq with the same next seq are one
 * way on (a subtree), shown as one option that switches to its newest leaf. The active way is an
 * option too: an active branch rewound to the point (nothing after it yet) comes last, as the next
 * message will be the newest seq there.
 */
export function forkPoints(session: SessionShape, branches: readonly BranchEntry[]): ForkPoint[] {
  const active = branches.find((branch) => branch.active);
  if (!active || branches.length < 2) return [];
  const activePath = pathTo(session, active.tipSeq);
  const byPoint = new Map<number, { activeNext: number | undefined; ways: Map<number, BranchEntry> }>();
  for (const branch of branches) {
    if (branch === active) continue;
    const parting = partingOf(activePath, pathTo(session, branch.tipSeq));
    // A branch the active one goes on from is not a way elsewhere.
    if (parting.nextB === undefined) continue;
    let point = byPoint.get(parting.seq);
    if (!point) byPoint.set(parting.seq, (point = { activeNext: parting.nextA, ways: new Map() }));
    const known = point.ways.get(parting.nextB);
    point.ways.set(parting.nextB, known ? newer(known, branch) : branch);
  }
  return [...byPoint.entries()]
    .sort(([a], [b]) => a - b)
    .map(([seq, point]) => {
      const options: BranchOption[] = [...point.ways.entries()].map(([next, branch]) => ({
        branch,
        next,
        active: false,
      }));
      options.push({ branch: active, next: point.activeNext, active: true });
      options.sort((a, b) => (a.next ?? Number.POSITIVE_INFINITY) - (b.next ?? Number.POSITIVE_INFINITY));
      return { seq, options, activeIndex: options.findIndex((option) => option.active) };
    });
}

/**
 * Where each switcher goes in the conversation: before the first top-level block past its fork
 * point (the block that differs between the ways), by that block's id; a point with no block after
 * it (the active branch was rewound there) goes after the last block, under `end`.
 */
export function placeForkPoints(
  points: readonly ForkPoint[],
  blocks: readonly Pick<ConversationBlock, 'id' | 'seq'>[],
): { before: Map<string, ForkPoint[]>; end: ForkPoint[] } {
  const before = new Map<string, ForkPoint[]>();
  const end: ForkPoint[] = [];
  for (const point of points) {
    const block = blocks.find((each) => each.seq !== undefined && each.seq > point.seq);
    if (!block) {
      end.push(point);
      continue;
    }
    const list = before.get(block.id) ?? [];
    list.push(point);
    before.set(block.id, list);
  }
  return { before, end };
}

// ---- what a rewind does, in words ----------------------------------------------------------------

/** Where a rewind goes: to just before a user message, or through a compaction's checkpoint. */
export type RewindTarget =
  | {
      kind: 'message';
      blockId: string;
      /** The seq kept: the event just before the message. */
      to: number;
      /**
       * Where the files go back to: the message's own seq, where the snapshot of the tree its turn
       * started from is taken (none may lie at or before `to`, as for the first message).
       */
      filesTo: number;
      /** 1-based: the message's place among the user messages of the active branch, and how many there are. */
      turn: number;
      turns: number;
      text: string;
    }
  | {
      kind: 'checkpoint';
      blockId: string;
      /** The block id: the rewind keeps through the compaction's notice. */
      to: string;
      version?: number;
      /** User messages before the compaction, and after it. */
      turnsBefore: number;
      turnsAfter: number;
    };

/**
 * The rewind target of a block of the conversation: a user message of the main conversation (its
 * point before must be known) or a compaction's notice; undefined for any other block.
 */
export function rewindTargetOf(
  blocks: readonly ConversationBlock[],
  blockId: string,
  trace: BranchTrace,
): RewindTarget | undefined {
  const index = blocks.findIndex((block) => block.id === blockId);
  const block = blocks[index];
  if (!block) return undefined;
  const userMessages = blocks.filter((each) => each.type === 'user_message');
  if (block.type === 'user_message') {
    const to = trace.pointsBefore.get(block.id);
    if (to === undefined || block.seq === undefined) return undefined;
    return {
      kind: 'message',
      blockId,
      to,
      filesTo: block.seq,
      turn: userMessages.indexOf(block) + 1,
      turns: userMessages.length,
      text: block.content,
    };
  }
  if (block.type === 'system' && block.subtype === 'compaction') {
    const version = (block.data as { version?: unknown } | undefined)?.version;
    const turnsBefore = blocks.slice(0, index).filter((each) => each.type === 'user_message').length;
    return {
      kind: 'checkpoint',
      blockId,
      to: blockId,
      ...(typeof version === 'number' ? { version } : {}),
      turnsBefore,
      turnsAfter: userMessages.length - turnsBefore,
    };
  }
  return undefined;
}

/** What the confirmation says: a title, what goes back, what stays, and what files do. */
export interface RewindSummary {
  title: string;
  conversation: string;
  files: string;
  kept: string;
}

const PREVIEW = 80;

function shortened(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= PREVIEW ? line : `${line.slice(0, PREVIEW - 1)}…`;
}

function turnsText(count: number): string {
  return count === 1 ? '1 turn' : `${count} turns`;
}

export function rewindSummary(target: RewindTarget, restore: RewindRestore): RewindSummary {
  const goesBack = restore !== 'files';
  const filesBack = restore !== 'conversation';
  if (target.kind === 'message') {
    const leaving = target.turns - target.turn + 1;
    return {
      title: `Rewind to before message ${target.turn} of ${target.turns}: “${shortened(target.text)}”`,
      conversation: goesBack
        ? `The conversation goes back to just before this message: it and what followed (${turnsText(leaving)}) leave the active branch, and your next message starts a new one from here.`
        : 'The conversation stays as it is.',
      files: filesBack
        ? "The project's files go back to how they were before this message was sent. A file you changed yourself since is not overwritten: Parley lists it and stops, and you choose."
        : "The project's files stay as they are.",
      kept: 'Nothing is deleted: what you leave stays in the history as a branch, and ‹ › at this point switches back to it.',
    };
  }
  const name = target.version !== undefined ? `checkpoint v${target.version}` : 'this checkpoint';
  return {
    title: `Rewind to ${name} (after ${turnsText(target.turnsBefore)})`,
    conversation: goesBack
      ? `The conversation keeps everything through this compaction, and the next request starts from ${name}. ${target.turnsAfter === 0 ? 'Nothing came after it yet.' : `The ${turnsText(target.turnsAfter)} after it leave the active branch.`}`
      : 'The conversation stays as it is.',
    files: filesBack
      ? "The project's files go back to how they were at this compaction. A file you changed yourself since is not overwritten: Parley lists it and stops, and you choose."
      : "The project's files stay as they are.",
    kept: 'Nothing is deleted: what you leave stays in the history as a branch, and ‹ › at this point switches back to it.',
  };
}

/** How one option of a switcher reads: its place, its last message, its turns and cost. */
export function describeOption(point: ForkPoint, index: number): string {
  const option = point.options[index]!;
  const place = `Branch ${index + 1} of ${point.options.length}`;
  if (option.active && option.next === undefined) return `${place}: this branch, rewound here (nothing after it yet)`;
  const parts = [option.branch.lastMessage !== undefined ? `“${option.branch.lastMessage}”` : undefined];
  parts.push(turnsText(option.branch.turns));
  if (option.branch.costUsd > 0) parts.push(`$${option.branch.costUsd.toFixed(4)}`);
  return `${place}${option.active ? ' (shown)' : ''}: ${parts.filter(Boolean).join(' · ')}`;
}

/** Who drafts on a fork: the role, project and task of the draft it came from. */
export interface DraftTarget {
  role: string;
  project: string;
  task: string;
}

/** The draft a fork can go on as (its scope's role, project and task); undefined for any other session. */
export function continueTarget(session: SessionInfo): DraftTarget | undefined {
  const { scope } = session;
  if (session.forkedFrom === undefined || session.status === 'archived' || session.readOnly === true) return undefined;
  if (scope.kind !== 'draft' || scope.project === undefined || scope.taskSlug === undefined) return undefined;
  return { role: scope.role, project: scope.project, task: scope.taskSlug };
}
