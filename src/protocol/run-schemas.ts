import * as z from 'zod';
import { WireIdSchema } from './schemas.js';

/**
 * The wire shapes of durable harness runs: what `list_runs`, `get_run` and the run
 * notifications carry. The protocol depends only on `conversation/`, so the store's `RunRecord`
 * (src/store/runs/records.ts) is restated here field for field; the server pins the two together
 * with a compile-time check (src/server/run-handlers.ts), so they cannot drift apart unnoticed.
 */

const IsoDate = z.string().describe('ISO 8601');

export const RUN_STATUS_VALUES = ['running', 'waiting', 'paused', 'complete', 'aborted', 'failed'] as const;
export const RunStatusWireSchema = z.enum(RUN_STATUS_VALUES);
/** A run's status on the wire. */
export type RunStatusWire = z.infer<typeof RunStatusWireSchema>;

export const RunIdSchema = WireIdSchema.describe('A run id (see `list_runs`).');
/** A prompt id as the run names it (`pendingPrompts[].promptId`). */
export const PromptIdSchema = z
  .string()
  .min(1)
  .max(200)
  .describe('A pending prompt of the run (`pendingPrompts[].promptId`).');

/** A `waitForUser` waiting for its answer. `deadline` (when it has a timeout) is kept across restarts. */
export const RunPromptWireSchema = z.object({
  promptId: z.string(),
  prompt: z.string(),
  /** The answers it accepts, when it offers choices (an answer may be the text or its 1-based number). */
  choices: z.array(z.string()).optional(),
  defaultChoice: z.string().optional(),
  askedAt: IsoDate,
  /** When the wait ends with the default (or a TimeoutError), if it has a timeout. */
  deadline: IsoDate.optional(),
});
/** A durable run's pending question on the wire. */
export type RunPromptWire = z.infer<typeof RunPromptWireSchema>;

/** An agent of the run and the Parley session its turns are in (`get_session`, `get_events`). */
export const RunAgentWireSchema = z.object({
  key: z.string(),
  name: z.string(),
  sessionId: z.string().optional(),
});
/** An agent of a durable run on the wire. */
export type RunAgentWire = z.infer<typeof RunAgentWireSchema>;

export const RunErrorWireSchema = z.object({
  code: z.string(),
  message: z.string(),
  /** The journal step a ReplayDivergenceError names. */
  step: z.string().optional(),
});

/** A stored run: its status, phases, pending prompts, agents and, once finished, its result or error. */
export const RunWireSchema = z.object({
  id: z.string(),
  /** The harness's `name`. */
  harness: z.string(),
  /** What was asked for (`ref`) and the module it resolved to (`path`). */
  workflow: z.object({ ref: z.string(), path: z.string() }),
  project: z.string().optional(),
  /** Absent when the run was started without input (JSON has no `undefined`). */
  input: z.unknown().optional(),
  /** The workflow's state as of its last journaled step. */
  state: z.unknown().optional(),
  status: RunStatusWireSchema,
  /** The phase running now, or the last one. */
  phase: z.string().optional(),
  /** Phases started so far, in order. */
  phases: z.array(z.string()),
  pendingPrompts: z.array(RunPromptWireSchema),
  agents: z.array(RunAgentWireSchema),
  /** The workflow's result once `complete`. */
  result: z.unknown().optional(),
  error: RunErrorWireSchema.optional(),
  /** Entries in the run's journal. */
  journalLength: z.number().int().nonnegative(),
  /** The run this one was forked from (`fork_run`), the last journal step it replayed, and the answer it gave there. */
  forkedFrom: z
    .object({ runId: z.string(), step: z.number().int().nonnegative(), answer: z.string().optional() })
    .optional(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  endedAt: IsoDate.optional(),
});
/** A durable run as the protocol shows it. */
export type RunWire = z.infer<typeof RunWireSchema>;

/**
 * One event of a run (the harness's SessionEvent: `phase:start`, `agent:event`, `user:prompt`, …), as
 * JSON carries it: `type`, `timestamp` (ISO 8601) and the event's own fields.
 */
export const RunEventWireSchema = z.looseObject({
  type: z.string(),
  timestamp: IsoDate,
  branch: z.string().optional(),
});
/** An event of a durable run on the wire. */
export type RunEventWire = z.infer<typeof RunEventWireSchema>;
