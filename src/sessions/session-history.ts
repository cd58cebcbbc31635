import { applyEvents, emptyConversation, type ConversationBlock, type StreamEvent } from '../conversation/index.js';
import type { SessionRecord, SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { activePath, readActiveEvents, segmentsOf, type HistoryPath } from './history-path.js';

/** What a rewind puts back: the conversation, the project's files, or both. */
export type RewindRestore = 'conversation' | 'files' | 'both';
export const REWIND_RESTORES: readonly RewindRestore[] = ['conversation', 'files', 'both'];

/** Where `rewind` takes the session back to, and what it restores. */
export interface RewindOptions {
  /**
   * The last point kept: a seq on the active branch, or a block id (its last event on it), read as
   * `forkSession`'s `at` is; -1 goes back to before the first event (nothing is kept).
   */
  to: number | string;
  /** Default `conversation`. */
  restore?: RewindRestore;
  /** With files: overwrite files the user changed since the agent last touched them (default false: such a restore stops and lists them). */
  overwrite?: boolean;
}

/** What a file restore did (the snapshot store's answer). */
export interface FileRestoreResult {
  /** Project-relative paths of the files written or removed. */
  restored: string[];
}

/**
 * Puts a session's project files back as they were at a point of its history: the snapshot store
 * (a shadow git repository in the data folder) implements it. Implementers must change nothing
 * and throw a typed error when they cannot: no snapshot at or before that point, or files the user
 * changed since the agent last touched them (listed, unless `overwrite`).
 */
export interface FileRestorer {
  restoreFiles(request: {
    sessionId: string;
    /** The last seq kept on the session's history. */
    seq: number;
    /** The history that stays active (its ranges; a fork's first ones are its source's). */
    path: HistoryPath;
    overwrite: boolean;
    /**
     * The conversation goes back to `seq` too, written after this resolves; `settleRewind` follows
     * it. A restorer that keeps an intent across a crash finishes both at its next start.
     */
    rewind?: boolean;
  }): Promise<FileRestoreResult>;
  /** The conversation of a `rewind` restore is written (both are at the point). */
  settleRewind?(): Promise<void>;
}

/** What `rewind` (or a branch switch, or an edit) did. */
export interface RewindResult {
  session: SessionRecord;
  /** The seq the active branch now ends at (-1: nothing is kept). */
  seq: number;
  /** The conversation went back (a `files` rewind leaves it). */
  conversation: boolean;
  /** Set when files were restored. */
  files?: FileRestoreResult;
}

/** One branch of a session's history tree: a path from the start to a tip nothing continues. */
export interface BranchInfo {
  /** `b<firstSeq>`: named by the seq its own run starts at; `b<firstSeq>:<seq>` for the active branch cut short by a rewind. */
  id: string;
  /** Where it leaves the branch it came from (-1 from the start; a fork's point for the fork's first branch). */
  forkSeq: number;
  /** The first seq of its own run. */
  firstSeq: number;
  /** The seq it ends at. */
  tipSeq: number;
  active: boolean;
  /** The text of its last user or assistant message, shortened. */
  lastMessage?: string;
  /** Milliseconds since the epoch of its last event. */
  at?: number;
  turns: number;
  costUsd: number;
}

const PREVIEW_CHARACTERS = 120;

/** Refuses a restore that is not one of the three. */
export function checkRestore(restore: unknown): RewindRestore {
  if (restore === undefined) return 'conversation';
  if (typeof restore === 'string' && (REWIND_RESTORES as readonly string[]).includes(restore))
    return restore as RewindRestore;
  throw new SessionError(
    'INVALID_INPUT',
    `Cannot rewind: restore must be "conversation", "files" or "both" (got ${JSON.stringify(restore)}).`,
    { fault: 'user', data: { restore } },
  );
}

/**
 * The record with its active branch ending at `seq`: a head when that is not its log's end. The
 * native link goes: the back end's own session goes on past the point, so the next turn resumes
 * from a transcript Parley writes from the active branch (as a fork does).
 */
export function recordAt(record: SessionRecord, seq: number, logEnd: number, now: number): SessionRecord {
  const { head: _head, native: _native, ...rest } = record;
  return { ...rest, ...(seq === logEnd ? {} : { head: seq }), updatedAt: now };
}

/** The seq just before the block's first event on the path (-1 when nothing comes before it). */
export function pointBefore(path: HistoryPath, seq: number): number {
  let before = -1;
  for (const range of path.ranges) {
    if (range.firstSeq >= seq) break;
    before = Math.min(range.lastSeq, seq - 1);
  }
  return before;
}

/** The user message `blockId` of the active branch, or a typed error saying what to give instead. */
export function userMessageOf(
  sessionId: string,
  blocks: readonly ConversationBlock[],
  blockId: string,
): ConversationBlock & { seq: number } {
  const block = blocks.find((each) => each.id === blockId);
  if (block === undefined || block.seq === undefined) {
    throw new SessionError(
      'FORK_POINT_NOT_FOUND',
      `Cannot edit "${blockId}" in session "${sessionId}": no block of its active branch has that id. Give the id of one of its user messages (\`parley show\` lists them).`,
      { fault: 'user', data: { sessionId, blockId } },
    );
  }
  if (block.type !== 'user_message') {
    throw new SessionError(
      'INVALID_INPUT',
      `Cannot edit "${blockId}" in session "${sessionId}": it is a ${block.type} block; only a user message can be edited and resent.`,
      { fault: 'user', data: { sessionId, blockId, type: block.type } },
    );
  }
  return block as ConversationBlock & { seq: number };
}

interface Leaf {
  firstSeq: number;
  forkSeq: number;
  tipSeq: number;
}

/**
 * The leaves of the session's own tree: each run of its log that nothing continues (no segment
 * goes on from its end), with the seq it leaves its parent at. A fork that has not gone on yet
 * has one, ending at its fork point.
 */
function leavesOf(record: SessionRecord, logEnd: number): Leaf[] {
  const segments = segmentsOf(record);
  const continued = new Set(segments.slice(1).map((segment) => segment.parentSeq));
  const leaves: Leaf[] = [];
  segments.forEach((segment, index) => {
    // The run ends before the next segment that starts later (a later one at the same seq replaces it).
    const next = segments.slice(index + 1).find((other) => other.firstSeq >= segment.firstSeq);
    const end = next === undefined ? logEnd : next.firstSeq - 1;
    if (end < segment.firstSeq) {
      // Empty: a crash left it, or a later segment replaced it; only an empty root still holds the start.
      if (index === 0 && next === undefined)
        leaves.push({ firstSeq: segment.firstSeq, forkSeq: segment.parentSeq, tipSeq: segment.parentSeq });
      return;
    }
    if (!continued.has(end)) leaves.push({ firstSeq: segment.firstSeq, forkSeq: segment.parentSeq, tipSeq: end });
  });
  return leaves;
}

/** Every branch of the session's own history, oldest first, with the active one marked. */
export async function listBranches(
  store: SessionStore,
  record: SessionRecord,
  active: HistoryPath,
): Promise<BranchInfo[]> {
  const logEnd = await store.lastSeq(record.sessionId);
  const leaves = leavesOf(record, logEnd);
  const branches: BranchInfo[] = [];
  let activeListed = false;
  for (const leaf of leaves) {
    const isActive = leaf.tipSeq === active.tip;
    activeListed ||= isActive;
    branches.push(await describe(store, record, leaf, `b${leaf.firstSeq}`, isActive));
  }
  if (!activeListed) {
    // A rewind cut the active branch short of every tip: it is listed as well, until it goes on.
    const run = runHolding(record, active.tip);
    branches.push(
      await describe(store, record, { ...run, tipSeq: active.tip }, `b${run.firstSeq}:${active.tip}`, true),
    );
  }
  return branches;
}

/** The segment run of the session's own log that holds `seq` (the root one when it lies before it). */
function runHolding(record: SessionRecord, seq: number): { firstSeq: number; forkSeq: number } {
  const segments = segmentsOf(record);
  let holding = segments[0]!;
  for (const segment of segments)
    if (segment.firstSeq <= seq && segment.firstSeq >= holding.firstSeq) holding = segment;
  return { firstSeq: holding.firstSeq, forkSeq: holding.parentSeq };
}

async function describe(
  store: SessionStore,
  record: SessionRecord,
  leaf: Leaf,
  id: string,
  active: boolean,
): Promise<BranchInfo> {
  const path = await activePath(store, record, { tip: leaf.tipSeq });
  const events: StreamEvent[] = await readActiveEvents(store, record, { path });
  const conversation = applyEvents(emptyConversation(record.sessionId), events);
  const last = conversation.blocks.findLast(
    (block) => block.type === 'user_message' || block.type === 'assistant_text',
  );
  const text = last !== undefined && 'content' in last && typeof last.content === 'string' ? last.content : undefined;
  return {
    id,
    forkSeq: leaf.forkSeq,
    firstSeq: leaf.firstSeq,
    tipSeq: leaf.tipSeq,
    active,
    ...(text !== undefined ? { lastMessage: preview(text) } : {}),
    ...(events.length > 0 ? { at: events.at(-1)!.at } : {}),
    turns: conversation.metrics.turns,
    costUsd: conversation.metrics.costUsd,
  };
}

function preview(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= PREVIEW_CHARACTERS ? line : `${line.slice(0, PREVIEW_CHARACTERS - 1)}…`;
}

/** The tip a branch id names, checked against the session's branches; a typed error lists them when it names none. */
export function branchTip(sessionId: string, branches: readonly BranchInfo[], branch: string): number {
  const found = branches.find((each) => each.id === branch);
  if (found) return found.tipSeq;
  const names = branches.map((each) => `${each.id}${each.active ? ' (active)' : ''}`).join(', ');
  throw new SessionError(
    'BRANCH_NOT_FOUND',
    `Session "${sessionId}" has no branch "${branch}". Its branches: ${names}. Give one of these ids (\`parley branches ${sessionId}\` lists them).`,
    { fault: 'user', data: { sessionId, branch, branches: branches.map((each) => each.id) } },
  );
}
