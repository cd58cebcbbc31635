import type { Checkpoint, CheckpointSummary } from '../store/index.js';

/**
 * How a checkpoint reads in a request (its "# Checkpoint" section). Deterministic: the same
 * checkpoint always renders to the same text, so its token count is cached by the text.
 */

export type CheckpointView = Pick<Checkpoint, 'summary' | 'pinned' | 'liveHandles'> &
  Partial<Pick<Checkpoint, 'ralphLoop' | 'version' | 'covers' | 'userRequests' | 'summarizer'>>;

/** Said before a structural checkpoint's lists, so the model reading it does not take every request for work left. */
export const STRUCTURAL_NOTE =
  '(Built without a model, from the conversation\'s structure: "Still To Do" lists the user\'s requests in order, done or not; "Completed" lists the files and tools used and the last answers.)';

export const CHECKPOINT_HEADING = '# Checkpoint (Work Progress)';

const SUMMARY_SECTIONS: ReadonlyArray<[keyof CheckpointSummary, string]> = [
  ['completed', 'Completed'],
  ['inProgress', 'In Progress'],
  ['pending', 'Still To Do'],
  ['decisions', 'Key Decisions'],
  ['blockers', 'Current Blockers'],
];

export function emptySummary(): CheckpointSummary {
  return { completed: [], inProgress: [], pending: [], decisions: [], blockers: [] };
}

/** The whole "# Checkpoint" section; `heading` false gives the body alone (for related sessions' checkpoints). */
export function renderCheckpoint(
  checkpoint: CheckpointView | undefined,
  options: { heading?: boolean; level?: number } = {},
): string {
  const level = options.level ?? 2;
  const hashes = '#'.repeat(level);
  const parts: string[] = [];
  if (options.heading !== false) parts.push(CHECKPOINT_HEADING, '');
  if (!checkpoint) {
    parts.push('No checkpoint yet: the conversation below is the whole session so far.');
    return parts.join('\n');
  }
  if (checkpoint.summarizer?.kind === 'structural') parts.push(STRUCTURAL_NOTE, '');
  for (const [key, title] of SUMMARY_SECTIONS) {
    const items = checkpoint.summary[key];
    // A checkpoint always shows what is done and what is left; the other lists only when they say something.
    if (items.length === 0 && key !== 'completed' && key !== 'pending') continue;
    parts.push(`${hashes} ${title}`, '', ...(items.length > 0 ? items.map((item) => `- ${item}`) : ['- (none)']), '');
  }
  if (checkpoint.pinned.length > 0) {
    parts.push(
      `${hashes} User Intent (verbatim)`,
      '',
      ...checkpoint.pinned.map((text, index) => `${index + 1}. ${text}`),
      '',
    );
  }
  if (checkpoint.userRequests && checkpoint.userRequests.length > 0) {
    parts.push(
      `${hashes} Recent User Requests (verbatim)`,
      '',
      ...checkpoint.userRequests.map((text) => `- ${text}`),
      '',
    );
  }
  if (checkpoint.liveHandles.length > 0) {
    parts.push(
      `${hashes} Live Workers`,
      '',
      ...checkpoint.liveHandles.map(
        (handle) => `- ${handle.id} (${handle.kind}${handle.label ? `: ${handle.label}` : ''}): ${handle.status}`,
      ),
      '',
    );
  }
  const loop = checkpoint.ralphLoop;
  if (loop) {
    parts.push(
      `${hashes} Ralph Loop`,
      '',
      `- Iteration: ${loop.currentIteration}`,
      `- Passed checks: ${loop.passedChecks.length > 0 ? loop.passedChecks.join(', ') : '(none)'}`,
      `- Failed checks: ${loop.failedChecks.length > 0 ? loop.failedChecks.join(', ') : '(none)'}`,
      ...(loop.lastError ? [`- Last error: ${loop.lastError}`] : []),
      '',
    );
  }
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts.join('\n');
}
