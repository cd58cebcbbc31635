import type { ConversationBlock } from '../../conversation/index.js';
import { isRpcError, RpcErrorCode, type ProtocolClient } from '../../protocol/index.js';
import { messageOf, noArguments, type CommandContext } from './command-context.js';
import type { DialogChoice } from './dialogs.js';
import { formatCost, formatDuration, oneLine, plural } from './format.js';

// The way back: /rewind (conversation, files or both), /branches, /checkpoints and
// /restore-checkpoint. Every change is the server's (rewind, switch_branch, restore_checkpoint):
// it sends `history_changed` and the controller reads the active branch again.

const EVENTS_PAGE = 5_000;
/** What the rewind picker's second question offers, in its order: what goes back, or a fork from there. */
const RESTORES = ['conversation', 'files', 'both', 'fork'] as const;
type Restore = (typeof RESTORES)[number];

/** A user message of the draft's main conversation that a rewind can go back to. */
export interface RewindPoint {
  blockId: string;
  /** The seq of its event (the file snapshot taken before its turn sits at this seq). */
  seq: number;
  text: string;
  createdAt: number;
}

const TURN_RUNNING =
  'A turn is running: press Esc to interrupt it (or wait for it to end), then try again. Nothing was changed.';
const NO_SNAPSHOTS =
  'this server keeps no file snapshots (it was started with --no-file-snapshots, or by a program that did not turn them on)';

/** The user messages of the main conversation, oldest first. */
export function rewindPoints(blocks: readonly ConversationBlock[]): RewindPoint[] {
  const points: RewindPoint[] = [];
  for (const block of blocks) {
    if (block.type !== 'user_message' || block.seq === undefined) continue;
    points.push({ blockId: block.id, seq: block.seq, text: block.content, createdAt: block.createdAt });
  }
  return points;
}

/**
 * `/rewind` (and Esc Esc on an empty prompt): pick an earlier message of yours, then what goes
 * back. The conversation goes back to just before the message, and its text comes back in the
 * prompt, so editing and sending it starts a new branch; the files go back to how they were when
 * it was sent (the snapshot before its turn). Nothing is deleted: what followed stays a branch.
 */
export async function rewindCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'rewind', args)) return;
  const state = context.state();
  const draft = state.draft;
  if (!draft) {
    context.error('No agent is drafted, so there is nothing to rewind. Draft one with /draft <role>.');
    return;
  }
  if (state.turn) {
    context.error(TURN_RUNNING);
    return;
  }
  const points = rewindPoints(state.conversation?.blocks ?? []);
  if (points.length === 0) {
    context.error('Nothing to rewind to: the conversation has no message of yours yet.');
    return;
  }
  const now = context.clock();
  const picked = await context.dialogs.ask({
    title: 'Rewind: go back to before which message of yours?',
    lines: [{ text: 'What came after it stays, as a branch you can switch back to (/branches).', tone: 'dim' }],
    choices: points.map((point) => ({
      label: oneLine(point.text, 90) || '(empty)',
      detail: `${formatDuration(Math.max(0, now - point.createdAt))} ago`,
    })),
    initial: points.length - 1,
    hint: '↑/↓ choose · Enter picks it · Esc cancels',
  });
  if (picked === undefined) return cancelled(context);
  const point = points[picked]!;
  const files = state.fileSnapshots === true;
  const noFiles = files ? {} : { disabled: `The files cannot go back: ${NO_SNAPSHOTS}.` };
  const choices: DialogChoice[] = [
    { label: 'The conversation', detail: 'your message comes back in the prompt, to edit and send again' },
    { label: 'The files', detail: 'as they were when you sent it; the conversation stays', ...noFiles },
    { label: 'Both', detail: 'the conversation and the files', ...noFiles },
    {
      label: 'A fork from here',
      detail: 'a new session up to before it, where the draft goes on; this one stays as it is',
      ...(picked === 0 ? { disabled: 'Nothing comes before your first message to fork: use /fork at the end.' } : {}),
    },
  ];
  const restore = await context.dialogs.ask({
    title: `Rewind to before "${oneLine(point.text, 60)}": what goes back?`,
    lines: files ? [] : [{ text: `Only the conversation can go back: ${NO_SNAPSHOTS}.`, tone: 'warning' }],
    choices,
  });
  if (restore === undefined) return cancelled(context);
  await rewindTo(context, draft.sessionId, point, RESTORES[restore]!);
}

async function rewindTo(
  context: CommandContext,
  sessionId: string,
  point: RewindPoint,
  restore: Restore,
): Promise<void> {
  if (restore === 'fork') {
    const at = await seqBefore(context.client, sessionId, point.seq);
    if (await forkAndGoOn(context, at, undefined)) context.dispatch({ type: 'prefill', text: point.text });
    return;
  }
  // Files first: a refusal (your own changes, no snapshot) then leaves the conversation as it was too.
  if (restore !== 'conversation' && !(await restoreFiles(context, sessionId, point.seq, false))) return;
  if (restore === 'files') return;
  const before = restore === 'both' ? 'The files were restored, but the conversation was not: ' : '';
  try {
    const to = await seqBefore(context.client, sessionId, point.seq);
    await context.client.request('rewind', { sessionId, to, restore: 'conversation' });
  } catch (error) {
    refused(context, error, before);
    return;
  }
  context.dispatch({ type: 'prefill', text: point.text });
  context.note([
    {
      text: `Rewound the conversation to before "${oneLine(point.text, 60)}". Your message is back in the prompt: edit it and press Enter to send it on a new branch (the one you left stays: /branches).`,
      tone: 'success',
    },
  ]);
}

/** Restores the files to `seq`; on files you changed since, lists them and asks before overwriting. */
async function restoreFiles(
  context: CommandContext,
  sessionId: string,
  seq: number,
  overwrite: boolean,
): Promise<boolean> {
  try {
    const result = await context.client.request(
      'rewind',
      { sessionId, to: seq, restore: 'files', ...(overwrite ? { overwrite: true } : {}) },
      { timeoutMs: 0 },
    );
    const restored = result.files?.restored ?? [];
    context.note([
      {
        text:
          restored.length === 0
            ? 'The files were already as they were then: nothing to restore.'
            : `Restored ${plural(restored.length, 'file')}: ${listed(restored)}.`,
        tone: 'success',
      },
    ]);
    return true;
  } catch (error) {
    if (!overwrite && isRpcError(error) && error.reason === 'RESTORE_CONFLICT') {
      const files = Array.isArray(error.data.files)
        ? error.data.files.filter((file): file is string => typeof file === 'string')
        : [];
      const answer = await context.dialogs.ask({
        title: `You changed ${plural(files.length, 'file')} since the agent last touched them:`,
        lines: files.slice(0, 12).map((file) => ({ text: `  ${file}`, tone: 'warning' as const })),
        choices: [
          { label: 'Keep my changes', detail: 'restore nothing' },
          { label: 'Overwrite them', detail: 'your changes to these files are lost' },
        ],
      });
      if (answer !== 1) {
        context.note([{ text: 'Nothing was restored: your changes stay, and so does the conversation.' }]);
        return false;
      }
      return restoreFiles(context, sessionId, seq, true);
    }
    refused(context, error, '');
    return false;
  }
}

/**
 * The last seq of the active branch before `seq` (-1 when nothing comes before it): where the
 * conversation goes back to. Read from the server, since a branch's seqs have gaps where it
 * leaves another.
 */
export async function seqBefore(client: ProtocolClient, sessionId: string, seq: number): Promise<number> {
  let before = -1;
  let afterSeq = -1;
  for (;;) {
    const page = await client.request('get_events', { sessionId, afterSeq, limit: EVENTS_PAGE });
    for (const event of page.events) {
      if (event.seq >= seq) return before;
      before = event.seq;
    }
    const last = page.events.at(-1);
    if (!page.hasMore || !last) return before;
    afterSeq = last.seq;
  }
}

/** `/branches`: every branch of the draft's conversation; choose one to switch to. `/branches <id>` switches at once. */
export async function branchesCommand(context: CommandContext, args: string): Promise<void> {
  const draft = context.state().draft;
  if (!draft) {
    context.error('No agent is drafted, so there are no branches to show. Draft one with /draft <role>.');
    return;
  }
  if (/\s/.test(args)) {
    context.error(`/branches takes one branch id at most: /branches [id] (got "${oneLine(args, 40)}").`);
    return;
  }
  if (args !== '') return switchBranch(context, draft.sessionId, args);
  const { branches } = await context.client.request('list_branches', { sessionId: draft.sessionId });
  const now = context.clock();
  const active = Math.max(
    0,
    branches.findIndex((branch) => branch.active),
  );
  const picked = await context.dialogs.ask({
    title: `Branches of this conversation (${branches.length}): switch to which?`,
    lines: branches.length === 1 ? [{ text: 'There is one branch: /rewind makes another.', tone: 'dim' as const }] : [],
    choices: branches.map((branch) => ({
      label: `${branch.id}${branch.active ? ' (active)' : ''}`,
      detail: [
        branch.forkSeq < 0 ? 'from the start' : `forks at seq ${branch.forkSeq}`,
        plural(branch.turns, 'turn'),
        formatCost(branch.costUsd),
        ...(branch.at !== undefined ? [`${formatDuration(Math.max(0, now - branch.at))} ago`] : []),
        ...(branch.lastMessage !== undefined ? [`"${oneLine(branch.lastMessage, 50)}"`] : []),
      ].join(' · '),
    })),
    initial: active,
    hint: '↑/↓ choose · Enter switches to it · Esc closes',
  });
  if (picked === undefined) return;
  const branch = branches[picked]!;
  if (branch.active) {
    context.note([{ text: `Branch ${branch.id} is the active one already.` }]);
    return;
  }
  await switchBranch(context, draft.sessionId, branch.id);
}

async function switchBranch(context: CommandContext, sessionId: string, branch: string): Promise<void> {
  if (context.state().turn) {
    context.error(TURN_RUNNING);
    return;
  }
  try {
    const switched = await context.client.request('switch_branch', { sessionId, branch });
    context.note([
      {
        text: `Switched to branch ${branch}: the conversation goes on from seq ${switched.seq}. The others stay (/branches).`,
        tone: 'success',
      },
    ]);
  } catch (error) {
    refused(context, error, '');
  }
}

/** `/checkpoints`: every checkpoint version of the draft's session; choose one to make current again. */
export async function checkpointsCommand(context: CommandContext, args: string): Promise<void> {
  if (!noArguments(context, 'checkpoints', args)) return;
  const draft = context.state().draft;
  if (!draft) {
    context.error('No agent is drafted, so there are no checkpoints to show. Draft one with /draft <role>.');
    return;
  }
  const { current, versions } = await context.client.request('get_checkpoint', { sessionId: draft.sessionId });
  if (versions.length === 0) {
    context.note([{ text: 'No checkpoint yet: the conversation was never compacted (/compact writes one).' }]);
    return;
  }
  const now = context.clock();
  const picked = await context.dialogs.ask({
    title: `Checkpoints (${versions.length}): make which version current again?`,
    lines: [{ text: 'Restoring writes a new version that copies it; none is deleted.', tone: 'dim' }],
    choices: versions.map((checkpoint) => {
      const created = Date.parse(checkpoint.createdAt);
      return {
        label: `v${checkpoint.version} ${checkpoint.trigger}${checkpoint.restoredFrom !== undefined ? ` (copy of v${checkpoint.restoredFrom})` : ''}${checkpoint.version === current?.version ? ' (current)' : ''}`,
        detail: [
          `through seq ${checkpoint.covers.throughSeq}`,
          plural(checkpoint.covers.messageCount, 'message'),
          ...(Number.isNaN(created) ? [] : [`${formatDuration(Math.max(0, now - created))} ago`]),
        ].join(' · '),
      };
    }),
    initial: versions.length - 1,
    hint: '↑/↓ choose · Enter restores it · Esc closes',
  });
  if (picked === undefined) return;
  const version = versions[picked]!.version;
  if (version === current?.version) {
    context.note([{ text: `Checkpoint v${version} is the current one already.` }]);
    return;
  }
  await restoreCheckpoint(context, draft.sessionId, version);
}

/** `/restore-checkpoint <version>`: makes that checkpoint version current again (a new version copying it). */
export async function restoreCheckpointCommand(context: CommandContext, args: string): Promise<void> {
  const draft = context.state().draft;
  if (!draft) {
    context.error('No agent is drafted, so there is no checkpoint to restore. Draft one with /draft <role>.');
    return;
  }
  const match = /^v?(\d{1,9})$/.exec(args);
  if (!match || Number(match[1]) < 1) {
    context.error(
      `Give a checkpoint version: /restore-checkpoint <version>${args !== '' ? ` (got "${oneLine(args, 40)}")` : ''}. /checkpoints lists them.`,
    );
    return;
  }
  await restoreCheckpoint(context, draft.sessionId, Number(match[1]));
}

async function restoreCheckpoint(context: CommandContext, sessionId: string, version: number): Promise<void> {
  try {
    const { checkpoint } = await context.client.request('restore_checkpoint', { sessionId, version });
    context.note([
      {
        text: `Checkpoint v${version} is current again, as v${checkpoint.version} (a copy; no version was deleted). The next request starts from it.`,
        tone: 'success',
      },
    ]);
  } catch (error) {
    refused(context, error, '');
  }
}

/**
 * `/fork [backend]`: a new session with the conversation so far (shared, not copied), on `backend`
 * when one is named, and the draft goes on in it; the session it came from stays as it is.
 */
export async function forkCommand(context: CommandContext, args: string): Promise<void> {
  const state = context.state();
  const draft = state.draft;
  if (!draft) {
    context.error('No agent is drafted, so there is no conversation to fork. Draft one with /draft <role>.');
    return;
  }
  const backend = args.trim();
  if (backend !== '' && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(backend)) {
    context.error(`"${oneLine(backend, 40)}" is not a back-end name: /fork [backend]. \`parley backends\` lists them.`);
    return;
  }
  if (state.turn) {
    context.error(TURN_RUNNING);
    return;
  }
  await forkAndGoOn(context, undefined, backend !== '' ? backend : undefined);
}

/** Forks the draft's session at `at` (default: its end), on `backend` if given, and the draft goes on in the fork. */
async function forkAndGoOn(
  context: CommandContext,
  at: number | undefined,
  backend: string | undefined,
): Promise<boolean> {
  const draft = context.state().draft;
  if (!draft) return false;
  let forked: string;
  try {
    const { session } = await context.client.request('fork_session', {
      sessionId: draft.sessionId,
      ...(at !== undefined ? { at } : {}),
      ...(backend !== undefined ? { backend } : {}),
    });
    forked = session.sessionId;
  } catch (error) {
    refused(context, error, 'Could not fork: ');
    return false;
  }
  if (!(await context.continueIn(forked, backend !== undefined && backend !== draft.backend ? backend : undefined)))
    return false;
  context.note([
    {
      text: `Forked the conversation${at !== undefined ? ` at seq ${at}` : ''} into session ${forked}${backend !== undefined ? ` on ${backend}` : ''}, and the draft goes on in the fork. The session it came from stays as it was (${draft.sessionId}).`,
      tone: 'success',
    },
  ]);
  return true;
}

function cancelled(context: CommandContext): void {
  context.note([{ text: 'Rewind cancelled: nothing was changed.', tone: 'dim' }]);
}

/** The server's refusal, said with what to do (it changed nothing). */
function refused(context: CommandContext, error: unknown, prefix: string): void {
  if (isRpcError(error, RpcErrorCode.TURN_IN_PROGRESS)) context.error(`${prefix}${TURN_RUNNING}`);
  else if (isRpcError(error) && error.reason === 'FILE_SNAPSHOTS_NOT_CONFIGURED')
    context.error(`${prefix}The files cannot go back: ${NO_SNAPSHOTS}. Nothing was changed.`);
  else context.error(`${prefix}${messageOf(error)}`);
}

function listed(files: readonly string[]): string {
  const shown = files.slice(0, 8).join(', ');
  return files.length > 8 ? `${shown}, and ${files.length - 8} more` : shown;
}
