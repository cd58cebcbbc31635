import * as z from 'zod';
import { IdSchema } from '../record-format.js';

/**
 * A schedule: when (a cron expression in an explicit IANA time zone, or a fixed interval) and what
 * (start a durable run of a named workflow with an input, or send a prompt into a draft or a
 * session), with what to do about firings missed while no server ran (`catchUp`) and about a firing
 * whose previous run has not finished (`overlap`). A ScheduleStore keeps it; the scheduler in the
 * harness fires it. Timestamps are ISO 8601 strings, as JSON keeps them.
 */

const IsoDate = z.iso.datetime({ offset: true });

/** When a schedule fires: a cron expression read in a time zone, or every so many seconds. */
export const ScheduleTimingSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('cron'),
    /** Five fields (minute … weekday), or six with seconds first, as croner reads them. */
    cron: z.string().trim().min(1).max(200),
    /** The IANA time zone the expression is read in (`Europe/Berlin`, `UTC`); never the machine's. */
    timeZone: z.string().min(1).max(100),
  }),
  z.strictObject({
    kind: z.literal('interval'),
    /** Seconds between firings, counted from the schedule's creation. */
    everySeconds: z
      .number()
      .int()
      .min(1)
      .max(366 * 24 * 3600),
  }),
]);
/** When a schedule fires. */
export type ScheduleTiming = z.infer<typeof ScheduleTimingSchema>;

/** What a firing does. */
export const ScheduleTargetSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('workflow'),
    /** A workflow module under the project, or a name in `parley.config.json` (as `start_run` takes it). */
    workflow: z.string().min(1).max(4096),
    input: z.unknown().optional(),
    project: IdSchema.optional(),
  }),
  z.strictObject({
    kind: z.literal('draft'),
    /** The prompt the draft is sent. */
    prompt: z.string().min(1).max(500_000),
    project: IdSchema,
    role: IdSchema,
    /** The task the draft works on; default: one made at the first firing. */
    task: IdSchema.optional(),
    /** The channel the draft lives on; default `schedule-<id>`, so the schedule's prompts meet one draft. */
    channelId: z.string().min(1).max(200).optional(),
  }),
  z.strictObject({
    kind: z.literal('session'),
    prompt: z.string().min(1).max(500_000),
    /** A draft's session: the prompt goes to the draft running it on the firing server. */
    sessionId: IdSchema,
  }),
]);
/** What a firing does: start a workflow run, or prompt a draft or a session. */
export type ScheduleTarget = z.infer<typeof ScheduleTargetSchema>;

/** Firings missed while no server ran: dropped (`skip`), or the latest of them made once (`once`). */
export const ScheduleCatchUpSchema = z.enum(['skip', 'once']);
export type ScheduleCatchUp = z.infer<typeof ScheduleCatchUpSchema>;

/** A firing while the previous one's run (or turn) has not finished: dropped, kept for after it, or made beside it. */
export const ScheduleOverlapSchema = z.enum(['skip', 'queue', 'parallel']);
export type ScheduleOverlap = z.infer<typeof ScheduleOverlapSchema>;

/** What became of one firing. */
export const FIRING_OUTCOMES = ['started', 'queued', 'skipped_overlap', 'missed', 'failed'] as const;
export const FiringOutcomeSchema = z.enum(FIRING_OUTCOMES);
export type FiringOutcome = z.infer<typeof FiringOutcomeSchema>;

/** One firing of a schedule: the time it was due, what became of it, and the run or session it reached. */
export const ScheduleFiringSchema = z.object({
  scheduleId: IdSchema,
  /** The time the firing was due (its key: a schedule fires once per due time). */
  fireAt: IsoDate,
  /** When a server claimed it. */
  firedAt: IsoDate,
  outcome: FiringOutcomeSchema,
  runId: z.string().optional(),
  sessionId: z.string().optional(),
  /** Why it failed. */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /** The server that claimed it. */
  server: z.string().optional(),
});
/** One firing of a schedule. */
export type ScheduleFiring = z.infer<typeof ScheduleFiringSchema>;

/** The zod schema of a `ScheduleRecord`. */
export const ScheduleRecordSchema = z.object({
  id: IdSchema,
  /** A name a person gave it, shown in lists. */
  name: z.string().max(200).optional(),
  timing: ScheduleTimingSchema,
  target: ScheduleTargetSchema,
  catchUp: ScheduleCatchUpSchema,
  overlap: ScheduleOverlapSchema,
  paused: z.boolean(),
  /** The next due time; absent when the expression has no future time. */
  nextFireAt: IsoDate.optional(),
  /** Due times kept by `overlap: 'queue'`, oldest first, waiting for the run before them to finish. */
  queue: z.array(IsoDate),
  /** The newest firing, whatever became of it: what lists show. */
  last: ScheduleFiringSchema.optional(),
  /** The newest firing that started something: the run or session the overlap rule looks at. */
  active: ScheduleFiringSchema.optional(),
  /** Bumped by the store on every write; a write naming an older one is refused, so two servers never both claim a firing. */
  revision: z.number().int().nonnegative(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
});
/** A schedule as the schedule store keeps it. */
export type ScheduleRecord = z.infer<typeof ScheduleRecordSchema>;
