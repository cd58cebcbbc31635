import * as z from 'zod';
import { CheckpointWireSchema, SessionIdParamSchema, SessionInfoSchema } from './schemas.js';

/**
 * The history tree on the wire: rewind, edit and resend, branches, checkpoint restore, and the
 * notification that tells clients to read the active branch again.
 */

/** A point of a session's active branch: a `seq`, or a block id (its last event), as `fork_session`'s `at`. */
const HistoryPointSchema = z.union([z.number().int().nonnegative(), z.string().min(1).max(200)]);

export const RewindParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** The last point kept (inclusive); -1 goes back to before the first event (nothing kept). */
  to: z.union([z.literal(-1), HistoryPointSchema]),
  /** What goes back: the conversation (default), the project's files, or both. */
  restore: z.enum(['conversation', 'files', 'both']).optional(),
  /** With files: overwrite files the user changed since the agent last touched them (default: such a restore stops and lists them). */
  overwrite: z.boolean().optional(),
});
export const RewindResultSchema = z.object({
  session: SessionInfoSchema,
  /** The seq the active branch ends at now (-1: nothing kept). */
  seq: z.number().int(),
  /** The conversation went back (false for `restore: 'files'`). */
  conversation: z.boolean(),
  /** The files restored, when files were. */
  files: z.object({ restored: z.array(z.string()) }).optional(),
});

export const EditMessageParamsSchema = z.strictObject({
  /** The id of a user message of the channel's draft's active branch. */
  blockId: z.string().min(1).max(200),
  /** The edited text, sent as the next turn on the new branch. */
  content: z.string().min(1).max(500_000),
});
export const EditMessageResultSchema = z.object({
  sessionId: z.string(),
  /** Where the new branch leaves the old one: the seq before the edited message (-1: the start). */
  branchedAt: z.number().int(),
  /** The `seq` of the edited message, stored. */
  seq: z.number().int().nonnegative(),
});

export const ListBranchesParamsSchema = z.strictObject({ sessionId: SessionIdParamSchema });
export const BranchWireSchema = z.object({
  /** Give it to `switch_branch`. */
  id: z.string(),
  /** Where it leaves the branch it came from (-1: from the start). */
  forkSeq: z.number().int(),
  firstSeq: z.number().int(),
  tipSeq: z.number().int(),
  active: z.boolean(),
  lastMessage: z.string().optional(),
  /** Milliseconds since the epoch of its last event. */
  at: z.number().optional(),
  turns: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative(),
});
export const ListBranchesResultSchema = z.object({ branches: z.array(BranchWireSchema) });

export const SwitchBranchParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  branch: z.string().min(1).max(200),
});
export const SwitchBranchResultSchema = RewindResultSchema.omit({ files: true });

export const RestoreCheckpointParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  version: z.number().int().positive(),
});
export const RestoreCheckpointResultSchema = z.object({ checkpoint: CheckpointWireSchema });

/** The active branch of a session changed: read it again from the start (`get_events` with no `afterSeq`). */
export const HistoryChangedSchema = z.object({
  sessionId: z.string(),
  reason: z.enum(['rewound', 'branch_switched', 'edited']),
  /** The seq the active branch ends at now. */
  seq: z.number().int(),
  session: SessionInfoSchema,
});
