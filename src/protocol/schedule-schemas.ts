import * as z from 'zod';
import { WireIdSchema } from './schemas.js';

/**
 * The wire shapes of schedules: what `list_schedules`, `add_schedule` and `schedule_updated` carry.
 * The protocol depends only on `conversation/`, so the store's `ScheduleRecord`
 * (src/store/schedules/records.ts) is restated here; the server pins the two together with a
 * compile-time check (src/server/schedule-handlers.ts).
 */

const IsoDate = z.string().describe('ISO 8601');

export const ScheduleIdSchema = WireIdSchema.describe('A schedule id (see `list_schedules`).');

export const ScheduleTimingWireSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('cron'),
    cron: z.string().describe('Five fields (minute hour day-of-month month weekday), or six with seconds first.'),
    timeZone: z.string().describe('The IANA time zone the expression is read in.'),
  }),
  z.strictObject({ kind: z.literal('interval'), everySeconds: z.number().int().positive() }),
]);

export const ScheduleTargetWireSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('workflow'),
    workflow: z.string().min(1).max(4096).describe('As `start_run` takes it: a module under the project, or a name.'),
    input: z.unknown().optional(),
    project: WireIdSchema.optional(),
  }),
  z.strictObject({
    kind: z.literal('draft'),
    prompt: z.string().min(1).max(500_000),
    project: WireIdSchema,
    role: WireIdSchema,
    task: WireIdSchema.optional().describe('Default: a task made at the first firing.'),
    channelId: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("The draft's channel; default `schedule-<id>`, so every firing meets one draft."),
  }),
  z.strictObject({
    kind: z.literal('session'),
    prompt: z.string().min(1).max(500_000),
    sessionId: WireIdSchema.describe('A draft session: the prompt goes to the draft running it.'),
  }),
]);

export const FIRING_OUTCOME_VALUES = ['started', 'queued', 'skipped_overlap', 'missed', 'failed'] as const;

export const ScheduleFiringWireSchema = z.object({
  scheduleId: z.string(),
  fireAt: IsoDate.describe('When it was due.'),
  firedAt: IsoDate.describe('When a server claimed it.'),
  outcome: z.enum(FIRING_OUTCOME_VALUES),
  runId: z.string().optional().describe('The run it started (`get_run`).'),
  sessionId: z.string().optional().describe('The session its prompt went to (`get_session`).'),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  server: z.string().optional(),
});
export type ScheduleFiringWire = z.infer<typeof ScheduleFiringWireSchema>;

export const ScheduleWireSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  timing: ScheduleTimingWireSchema,
  target: ScheduleTargetWireSchema,
  catchUp: z.enum(['skip', 'once']),
  overlap: z.enum(['skip', 'queue', 'parallel']),
  paused: z.boolean(),
  nextFireAt: IsoDate.optional(),
  queue: z.array(IsoDate),
  last: ScheduleFiringWireSchema.optional(),
  active: ScheduleFiringWireSchema.optional(),
  revision: z.number().int().nonnegative(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
});
/** A schedule on the wire. */
export type ScheduleWire = z.infer<typeof ScheduleWireSchema>;

export const ListSchedulesResultSchema = z.object({ schedules: z.array(ScheduleWireSchema).describe('oldest first') });

export const AddScheduleParamsSchema = z
  .strictObject({
    name: z.string().max(200).optional(),
    cron: z.string().max(200).optional().describe('A cron expression; needs `timeZone`. Not with `everySeconds`.'),
    timeZone: z.string().max(100).optional().describe('The IANA time zone of `cron` (e.g. Europe/Berlin); required.'),
    everySeconds: z.number().int().optional().describe('Or: every so many seconds from now.'),
    target: ScheduleTargetWireSchema,
    catchUp: z.enum(['skip', 'once']).optional().describe('Firings missed while no server ran (default skip).'),
    overlap: z
      .enum(['skip', 'queue', 'parallel'])
      .optional()
      .describe("A firing while the previous one's run or turn goes on (default skip)."),
    paused: z.boolean().optional(),
  })
  .describe('A cron expression with its time zone, or an interval; what it fires; its rules.');

export const ScheduleParamsSchema = z.strictObject({ scheduleId: ScheduleIdSchema });
export const ScheduleResultSchema = z.object({ schedule: ScheduleWireSchema });
export const GetScheduleParamsSchema = z.strictObject({
  scheduleId: ScheduleIdSchema,
  /** How many of its newest firings to return (default 20). */
  firings: z.number().int().positive().max(500).optional(),
});
export const GetScheduleResultSchema = z.object({
  schedule: ScheduleWireSchema,
  firings: z.array(ScheduleFiringWireSchema).describe('newest first'),
});
export const RemoveScheduleResultSchema = z.object({ removed: z.literal(true) });

export const ScheduleUpdatedSchema = z.object({ schedule: ScheduleWireSchema });
export const ScheduleRemovedSchema = z.object({ scheduleId: z.string() });
