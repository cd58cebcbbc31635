import type { DraftView, NoteLine } from './view-state.js';

/**
 * `/backend`: which back end the draft runs on; `/backend <name>`: the next message continues the
 * draft there (the server moves its session: a native back end resumes a transcript Parley writes
 * from the log, and a system block in the conversation says what was converted). Pure: it returns
 * what to say and the back end the next `submit_prompt` carries (undefined: none).
 */
export function backendCommand(
  draft: DraftView | undefined,
  args: string,
  pending: string | undefined,
): { lines: NoteLine[]; next: string | undefined } {
  if (!draft)
    return {
      lines: [{ text: '✗ No draft to move. Draft an agent first with /draft <role>.', tone: 'error' }],
      next: pending,
    };
  const name = args.trim();
  if (name === '') {
    const then = pending !== undefined ? ` The next message continues it on ${pending}.` : '';
    return {
      lines: [{ text: `The draft runs on ${draft.backend}${draft.model ? ` (${draft.model})` : ''}.${then}` }],
      next: pending,
    };
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    return {
      lines: [{ text: `✗ "${name}" is not a back-end name. \`parley backends\` lists them.`, tone: 'error' }],
      next: pending,
    };
  if (name === draft.backend) return { lines: [{ text: `The draft already runs on ${name}.` }], next: undefined };
  return {
    lines: [{ text: `The next message continues this draft on ${name}, with its history so far.`, tone: 'success' }],
    next: name,
  };
}
