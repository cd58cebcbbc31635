import type {
  ConversationBlock,
  SubagentBlock,
  SystemBlock,
  ToolResultBlock,
  ToolUseBlock,
} from '../conversation/index.js';
import type { Checkpoint } from '../store/index.js';

/**
 * The one function from stored history to what the model sees. Compaction is
 * data: nothing is deleted from the log; the newest checkpoint says which `seq` it covers, and the
 * projection shows covered content as one short placeholder. A tool call and its result are one unit,
 * so no cut (compaction, clear, truncation, trimming) can separate them; a call that never got a result
 * is closed as interrupted.
 */

export type ProjectedRole = 'user' | 'assistant' | 'tool' | 'system';
export type ProjectedKind = 'message' | 'tool' | 'worker' | 'notice' | 'placeholder';
export type ToolState = 'complete' | 'error' | 'interrupted' | 'orphan';

export interface ProjectedTool {
  toolUseId: string;
  name: string;
  /** The call's input as JSON text. */
  input: string;
  /** The result text the model sees (a marker when pruned or interrupted). */
  output: string;
  state: ToolState;
  pruned: boolean;
  /** Characters of the stored result, before any pruning. */
  outputChars: number;
}

/** One message of a projection, as the model will see it. */
export interface ProjectedMessage {
  /** Changes whenever the rendered content does: the key token counts are cached under. */
  key: string;
  kind: ProjectedKind;
  role: ProjectedRole;
  /** Exactly the text the model sees for this unit. */
  content: string;
  /** The blocks this unit stands for (a tool call and its result: both). */
  blockIds: string[];
  /** The `seq` of the unit's first and last block; -1 for the placeholder. */
  firstSeq: number;
  lastSeq: number;
  /** Milliseconds since the epoch, of the first block. */
  createdAt?: number;
  pinned?: boolean;
  /** False while still in flight: streaming text, or a call with no result and no user message after it. */
  complete: boolean;
  tool?: ProjectedTool;
  worker?: { subagentId: string; status: string };
}

export interface ProjectionInput {
  /** The main thread's blocks, in log order, each stamped with its `seq` by the reducer. */
  blocks: readonly ConversationBlock[];
  /** The newest checkpoint: what it covers is shown as a placeholder; live workers it recorded are shown when they finish. */
  checkpoint?: Pick<Checkpoint, 'covers' | 'liveHandles'>;
  /** `clearMessages`: units that started at or before this `seq` are not shown at all. */
  clearedThroughSeq?: number;
  /** Tool calls whose output is replaced by a short marker (cheap pruning of old tool output). */
  prunedToolUseIds?: ReadonlySet<string>;
  /** Prepended to every unit's `key`, so counts cached for one session never answer for another's block ids. */
  keyPrefix?: string;
}

/** Stored history projected to what the model sees: messages, with placeholders for compacted content. */
export interface Projection {
  /** What the model sees, oldest first; the placeholder (when anything is compacted) comes first. */
  messages: ProjectedMessage[];
  /** Units hidden because the checkpoint covers them (placeholder aside). */
  compactedUnits: number;
  /** User and assistant messages among them. */
  compactedMessages: number;
}

const NOTICE_SUBTYPES: ReadonlySet<SystemBlock['subtype']> = new Set(['interrupted', 'aborted', 'error']);
const NOTICE_MAX_CHARS = 600;

export const INTERRUPTED_OUTPUT = '[interrupted: the turn ended before this call returned a result]';

/** Projects stored history to the messages a request shows. Pure. */
export function projectConversation(input: ProjectionInput): Projection {
  const units = buildUnits(input.blocks, input.prunedToolUseIds);
  if (input.keyPrefix) for (const unit of units) unit.key = input.keyPrefix + unit.key;
  const cleared = input.clearedThroughSeq ?? -1;
  const through = input.checkpoint?.covers.throughSeq ?? -1;
  const liveAtCheckpoint = new Set((input.checkpoint?.liveHandles ?? []).map((handle) => handle.id));
  const messages: ProjectedMessage[] = [];
  let compactedUnits = 0;
  let compactedMessages = 0;
  for (const unit of units) {
    // A unit that began before a clear goes with it, whole.
    if (unit.firstSeq <= cleared) continue;
    if (isCovered(unit, through, liveAtCheckpoint)) {
      compactedUnits++;
      if (unit.kind === 'message') compactedMessages++;
      continue;
    }
    messages.push(unit);
  }
  if (compactedUnits > 0) messages.unshift(placeholder(compactedMessages, compactedUnits, through));
  return { messages, compactedUnits, compactedMessages };
}

/**
 * Covered by the checkpoint: the whole unit is at or below its `seq`. A unit that straddles it (a
 * result logged after the cut, a worker the checkpoint recorded as live that has since finished) is
 * shown whole, since the summary never saw its end.
 */
function isCovered(unit: ProjectedMessage, through: number, liveAtCheckpoint: ReadonlySet<string>): boolean {
  if (unit.firstSeq > through) return false;
  if (unit.lastSeq > through) return false;
  if (unit.worker && liveAtCheckpoint.has(unit.worker.subagentId) && isFinal(unit.worker.status)) return false;
  return true;
}

function isFinal(status: string): boolean {
  return status === 'success' || status === 'error';
}

function placeholder(messages: number, units: number, throughSeq: number): ProjectedMessage {
  const what =
    messages === units
      ? `${messages} message${messages === 1 ? '' : 's'}`
      : `${messages} message${messages === 1 ? '' : 's'} and ${units - messages} tool call${units - messages === 1 ? '' : 's'} or notices`;
  return {
    key: `placeholder#${messages}#${units}#${throughSeq}`,
    kind: 'placeholder',
    role: 'system',
    content: `[Earlier conversation (${what}, through seq ${throughSeq}) is summarized in the Checkpoint above; the full history is kept in the session log.]`,
    blockIds: [],
    firstSeq: -1,
    lastSeq: throughSeq,
    complete: true,
  };
}

/** Groups blocks into units: messages, tool call + result pairs, workers, notices. Thinking is never shown. */
function buildUnits(blocks: readonly ConversationBlock[], pruned: ReadonlySet<string> | undefined): ProjectedMessage[] {
  const results = new Map<string, ToolResultBlock>();
  const calls = new Set<string>();
  let lastUserIndex = -1;
  blocks.forEach((block, index) => {
    if (block.type === 'tool_result' && !results.has(block.toolUseId)) results.set(block.toolUseId, block);
    else if (block.type === 'tool_use') calls.add(block.toolUseId);
    else if (block.type === 'user_message') lastUserIndex = index;
  });

  const units: ProjectedMessage[] = [];
  blocks.forEach((block, index) => {
    const seq = block.seq ?? -1;
    // Nothing after it means the turn may still be running; a later user message means it ended.
    const settled = index < lastUserIndex;
    switch (block.type) {
      case 'user_message':
      case 'assistant_text': {
        const user = block.type === 'user_message';
        units.push({
          key: `${block.id}#${block.content.length}`,
          kind: 'message',
          role: user ? 'user' : 'assistant',
          content: `${user ? '**User**' : '**Assistant**'}: ${block.content}`,
          blockIds: [block.id],
          firstSeq: seq,
          lastSeq: seq,
          createdAt: block.createdAt,
          complete: block.completedAt !== undefined || settled,
          ...(user && block.pinned ? { pinned: true } : {}),
        });
        return;
      }
      case 'tool_use':
        units.push(toolUnit(block, results.get(block.toolUseId), pruned?.has(block.toolUseId) ?? false, settled));
        return;
      case 'tool_result':
        // Shown with its call; alone only when the call is nowhere in the history (an import, a lost record).
        if (calls.has(block.toolUseId) || results.get(block.toolUseId) !== block) return;
        units.push(orphanResultUnit(block, pruned?.has(block.toolUseId) ?? false));
        return;
      case 'subagent':
        units.push(workerUnit(block));
        return;
      case 'system':
        if (!NOTICE_SUBTYPES.has(block.subtype)) return;
        units.push({
          key: `${block.id}#${block.content.length}`,
          kind: 'notice',
          role: 'system',
          content: `[${block.subtype}: ${clip(block.content, NOTICE_MAX_CHARS)}]`,
          blockIds: [block.id],
          firstSeq: seq,
          lastSeq: seq,
          createdAt: block.createdAt,
          complete: true,
        });
        return;
      case 'thinking':
        return;
    }
  });
  return units;
}

function toolUnit(
  call: ToolUseBlock,
  result: ToolResultBlock | undefined,
  pruned: boolean,
  settled: boolean,
): ProjectedMessage {
  const input = stringifyInput(call.input);
  let state: ToolState;
  let output: string;
  if (result) {
    state = result.isError ? 'error' : 'complete';
    output = result.content;
  } else if (call.status === 'error') {
    state = 'error';
    output = call.error ?? '[the call failed and recorded no output]';
  } else if (call.status === 'success') {
    state = 'complete';
    output = '[the call succeeded and recorded no output]';
  } else {
    state = 'interrupted';
    output = INTERRUPTED_OUTPUT;
  }
  const outputChars = output.length;
  const seq = result?.seq ?? call.seq ?? -1;
  const prunedNow = pruned && result !== undefined && outputChars > prunedMarker(outputChars, seq).length;
  if (prunedNow) output = prunedMarker(outputChars, seq);
  const tool: ProjectedTool = {
    toolUseId: call.toolUseId,
    name: call.name,
    input,
    output,
    state,
    pruned: prunedNow,
    outputChars,
  };
  return {
    key: `${call.id}#${input.length}|${result ? `${result.id}#${result.content.length}` : call.status}|${prunedNow ? 'p' : ''}`,
    kind: 'tool',
    role: 'tool',
    content: renderTool(tool),
    blockIds: result ? [call.id, result.id] : [call.id],
    firstSeq: call.seq ?? -1,
    lastSeq: result?.seq ?? call.seq ?? -1,
    createdAt: call.createdAt,
    // A call with no result is closed as interrupted once the turn is over; before that it is in flight.
    complete:
      result !== undefined
        ? result.completedAt !== undefined || settled
        : call.status === 'success' || call.status === 'error' || settled,
    tool,
  };
}

function orphanResultUnit(result: ToolResultBlock, pruned: boolean): ProjectedMessage {
  const seq = result.seq ?? -1;
  const marker = prunedMarker(result.content.length, seq);
  const prunedNow = pruned && result.content.length > marker.length;
  const tool: ProjectedTool = {
    toolUseId: result.toolUseId,
    name: '',
    input: '',
    output: prunedNow ? marker : result.content,
    state: 'orphan',
    pruned: prunedNow,
    outputChars: result.content.length,
  };
  return {
    key: `${result.id}#${result.content.length}|orphan|${prunedNow ? 'p' : ''}`,
    kind: 'tool',
    role: 'tool',
    content: renderTool(tool),
    blockIds: [result.id],
    firstSeq: seq,
    lastSeq: seq,
    createdAt: result.createdAt,
    complete: true,
    tool,
  };
}

function workerUnit(block: SubagentBlock): ProjectedMessage {
  const seq = block.seq ?? -1;
  const lines = [`**Worker** ${block.name} (${block.subagentId}), ${block.status}`, `Task: ${block.input}`];
  if (block.output !== undefined) lines.push(`Result: ${block.output}`);
  return {
    key: `${block.id}#${block.status}#${block.input.length}#${block.output?.length ?? -1}`,
    kind: 'worker',
    role: 'assistant',
    content: lines.join('\n'),
    blockIds: [block.id],
    firstSeq: seq,
    lastSeq: seq,
    createdAt: block.createdAt,
    // A worker runs across turns; it never holds a compaction back (its handle is kept in the checkpoint).
    complete: true,
    worker: { subagentId: block.subagentId, status: block.status },
  };
}

/** The text of a tool unit: the call, then its result, always together. */
export function renderTool(tool: Pick<ProjectedTool, 'toolUseId' | 'name' | 'input' | 'output' | 'state'>): string {
  if (tool.state === 'orphan')
    return `**Tool result** (call ${tool.toolUseId}; its call is not in the history): ${tool.output}`;
  const label = tool.state === 'error' ? `call ${tool.toolUseId}, error` : `call ${tool.toolUseId}`;
  return `**Assistant** called tool \`${tool.name}\` (call ${tool.toolUseId}) with input: ${tool.input}\n**Tool result** (${label}): ${tool.output}`;
}

export function prunedMarker(chars: number, seq: number): string {
  return `[old tool output pruned to save context: ${chars.toLocaleString('en-US')} characters; the full output is kept in the session log at seq ${seq}]`;
}

function stringifyInput(input: unknown): string {
  if (input === undefined) return '{}';
  if (typeof input === 'string') return input;
  try {
    return JSON.stringify(input) ?? String(input);
  } catch {
    return String(input);
  }
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
