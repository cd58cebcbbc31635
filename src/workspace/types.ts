import * as z from 'zod';

/**
 * The workspace toolset's vocabulary: permission modes (as Claude Code names them), what a tool
 * asks approval for, and the answers. Schemas first; the wire copies in `src/protocol/` have the
 * same shapes (the draft layer pins them together at compile time).
 */

/**
 * `default` asks before every write and every command; `acceptEdits` asks only for commands;
 * `bypassPermissions` asks for nothing; `plan` allows reads only (writes and commands are refused).
 */
export const PermissionModeSchema = z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']);
export type PermissionMode = z.infer<typeof PermissionModeSchema>;

/** What an approval is for: an edit of part of a file, a whole-file write, or a shell command. */
export const ApprovalKindSchema = z.enum(['edit', 'write', 'command']);
export type ApprovalKind = z.infer<typeof ApprovalKindSchema>;

/**
 * `allow_once` runs this call; `allow_always` runs it and every later call of the same kind in the
 * session (same tool for edits and writes, same command prefix for commands); `deny` changes nothing.
 */
export const ApprovalDecisionSchema = z.enum(['allow_once', 'allow_always', 'deny']);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

export const ApprovalRequestSchema = z.object({
  /** Unique; the answer names it. */
  requestId: z.string().min(1),
  /** The Parley session whose agent asks. */
  sessionId: z.string().min(1),
  /** `main`, or a worker's id when a worker asks inside its drafting session. */
  conversationId: z.string().optional(),
  /** The tool that asks: `edit_file`, `write_file`, `run_command`. */
  tool: z.string().min(1),
  /** The tool use that asks (the conversation's `toolUseId`), when the back end said which. */
  toolUseId: z.string().min(1).optional(),
  kind: ApprovalKindSchema,
  /** One line a person reads: "Edit src/app.ts", "Run `npm test`". */
  title: z.string(),
  /** edit/write: the file, relative to the project folder. */
  path: z.string().optional(),
  /** edit/write: the change as a unified diff. */
  diff: z.string().optional(),
  /** command: the shell command, and where it runs (relative to the project folder; `.` is the folder itself). */
  command: z.string().optional(),
  cwd: z.string().optional(),
  /**
   * What `allow_always` would remember, worded for a person ("commands starting with `npm test`",
   * "every edit_file call"). Absent when it is not offered (a command with `;`, `&&`, `|`, `>`, …
   * is asked about each time): `allow_always` then counts as `allow_once`.
   */
  allowAlwaysScope: z.string().optional(),
  /** ISO 8601: when it was asked. */
  requestedAt: z.string(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/** Who gave an answer: a connected client, a library approver function, a remembered "allow always". */
export type ApprovalSource = 'client' | 'approver' | 'remembered' | 'cancelled';

export interface ApprovalResolution {
  requestId: string;
  sessionId: string;
  /** The request's thread (a worker's id), when it was not `main`. */
  conversationId?: string;
  decision: ApprovalDecision;
  source: ApprovalSource;
}

/**
 * A library user's (or a harness workflow's) answer to an approval request. It may take as long
 * as it likes; `signal` aborts when the turn is cancelled (the request is then denied). A throw is
 * a deny.
 */
export type Approver = (
  request: ApprovalRequest,
  options: { signal: AbortSignal },
) => ApprovalDecision | Promise<ApprovalDecision>;
