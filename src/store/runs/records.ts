import * as z from 'zod';

/**
 * The stored record of a durable harness run: what `list_runs` and `get_run` return and
 * what a RunStore keeps. The run's journal (its events and the journaled results of every
 * non-deterministic step) is kept beside it, append-only; this record is the run's current face.
 * Timestamps are ISO 8601 strings, as JSON keeps them.
 */

const IsoDate = z.iso.datetime({ offset: true });

/** Every `RunStatus`, in order. */
export const RUN_STATUSES = ['running', 'waiting', 'paused', 'complete', 'aborted', 'failed'] as const;
export const RunStatusSchema = z.enum(RUN_STATUSES);
/** Where a durable run is: running, waiting for a person, paused, complete, aborted or failed. */
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** A run is unfinished while it may still make progress or take an answer. */
export const UNFINISHED_RUN_STATUSES: readonly RunStatus[] = ['running', 'waiting', 'paused'];

/** Where the workflow's code is: a module under the project, or a name from `parley.config.json`. */
export const RunWorkflowRefSchema = z.object({
  /** What the user asked for (`reviews/code-review.ts`, or a configured name). */
  ref: z.string().min(1),
  /** The module it resolved to, absolute, so a restart loads the same file. */
  path: z.string().min(1),
});
export type RunWorkflowRef = z.infer<typeof RunWorkflowRefSchema>;

/** A `waitForUser` waiting for its answer. `deadline` (when it has a timeout) survives restarts. */
export const RunPendingPromptSchema = z.object({
  promptId: z.string().min(1),
  prompt: z.string(),
  choices: z.array(z.string()).optional(),
  defaultChoice: z.string().optional(),
  askedAt: IsoDate,
  deadline: IsoDate.optional(),
});
export type RunPendingPrompt = z.infer<typeof RunPendingPromptSchema>;

/** An agent of the run and the Parley session its turns are in (linked from the UIs). */
export const RunAgentSchema = z.object({
  key: z.string().min(1),
  name: z.string().min(1),
  sessionId: z.string().optional(),
});
export type RunAgent = z.infer<typeof RunAgentSchema>;

export const RunErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  /** The journal step a ReplayDivergenceError names. */
  step: z.string().optional(),
});
export type RunError = z.infer<typeof RunErrorSchema>;

/** Where a forked run came from: the source run and the last journal step the fork took from it. */
export const RunForkOriginSchema = z.object({
  runId: z.string().min(1),
  step: z.number().int().nonnegative(),
  /** The answer the fork gave at that step in place of the source's, when it gave one. */
  answer: z.string().optional(),
});
export type RunForkOrigin = z.infer<typeof RunForkOriginSchema>;

/** The zod schema of a `RunRecord`. */
export const RunRecordSchema = z.object({
  id: z.string().min(1),
  /** The harness's `name`. */
  harness: z.string().min(1),
  workflow: RunWorkflowRefSchema,
  /** The project the run belongs to (the server's project name), when it was started through one. */
  project: z.string().optional(),
  input: z.unknown(),
  /** The workflow's state as of its last journaled step. */
  state: z.unknown(),
  status: RunStatusSchema,
  /** The phase running now, or the last one. */
  phase: z.string().optional(),
  /** Phases started so far, in order. */
  phases: z.array(z.string()).default([]),
  pendingPrompts: z.array(RunPendingPromptSchema),
  agents: z.array(RunAgentSchema),
  /** The workflow's result once `complete`. */
  result: z.unknown().optional(),
  error: RunErrorSchema.optional(),
  /** Entries in the run's journal. */
  journalLength: z.number().int().nonnegative(),
  /** The run this one was forked from, and the last step of its journal the fork replayed. */
  forkedFrom: RunForkOriginSchema.optional(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  endedAt: IsoDate.optional(),
});
/** A durable run as the run store keeps it: workflow, input, status, pending prompts and agents. */
export type RunRecord = z.infer<typeof RunRecordSchema>;
