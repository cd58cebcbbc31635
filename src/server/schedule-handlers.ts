import { ParleyError } from '../conversation/index.js';
import type { Scheduler } from '../harness/index.js';
import type { ScheduleFiringWire, ScheduleWire } from '../protocol/index.js';
import type { ScheduleFiring, ScheduleRecord } from '../store/index.js';
import type { Handlers } from './dispatcher.js';
import type { Hub } from './hub.js';
import { JSONRPC_VERSION } from '../protocol/index.js';

/**
 * The schedule methods: thin faces over a `Scheduler`. Without one every schedule method answers
 * SCHEDULES_NOT_ENABLED (-32007), saying why.
 */

// The store's record and the wire's are restated on each side of the layer line (the protocol may
// not import the store); these fail to compile the moment one changes without the other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Fits<A, B> = [A] extends [B] ? true : false;
const scheduleFitsTheWire: Fits<ScheduleRecord, ScheduleWire> = true;
const scheduleHasTheWireFields: Same<keyof ScheduleRecord, keyof ScheduleWire> = true;
const firingIsItsWireShape: Same<ScheduleFiring, ScheduleFiringWire> = true;
void scheduleFitsTheWire;
void scheduleHasTheWireFields;
void firingIsItsWireShape;

export type ScheduleMethodName =
  'list_schedules' | 'get_schedule' | 'add_schedule' | 'pause_schedule' | 'resume_schedule' | 'remove_schedule';

export function createScheduleHandlers(scheduler: Scheduler | undefined): Pick<Handlers, ScheduleMethodName> {
  const schedules = (method: ScheduleMethodName): Scheduler => {
    if (scheduler) return scheduler;
    throw new ParleyError(
      'SCHEDULES_NOT_ENABLED',
      `Schedules are not enabled on this server: it was started without a schedule store, so ${method} cannot be answered. Serve the project with \`parley serve\`.`,
      { fault: 'user', data: { method } },
    );
  };
  return {
    list_schedules: async () => ({ schedules: await schedules('list_schedules').listSchedules() }),
    get_schedule: async (params) => {
      const service = schedules('get_schedule');
      return {
        schedule: await service.getSchedule(params.scheduleId),
        firings: await service.listFirings(params.scheduleId, { limit: params.firings ?? 20 }),
      };
    },
    add_schedule: async (params) => ({
      schedule: await schedules('add_schedule').addSchedule({
        ...(params.name !== undefined ? { name: params.name } : {}),
        ...(params.cron !== undefined ? { cron: params.cron } : {}),
        ...(params.timeZone !== undefined ? { timeZone: params.timeZone } : {}),
        ...(params.everySeconds !== undefined ? { everySeconds: params.everySeconds } : {}),
        target: params.target,
        ...(params.catchUp !== undefined ? { catchUp: params.catchUp } : {}),
        ...(params.overlap !== undefined ? { overlap: params.overlap } : {}),
        ...(params.paused !== undefined ? { paused: params.paused } : {}),
      }),
    }),
    pause_schedule: async (params) => ({
      schedule: await schedules('pause_schedule').pauseSchedule(params.scheduleId),
    }),
    resume_schedule: async (params) => ({
      schedule: await schedules('resume_schedule').resumeSchedule(params.scheduleId),
    }),
    remove_schedule: async (params) => {
      await schedules('remove_schedule').removeSchedule(params.scheduleId);
      return { removed: true as const };
    },
  };
}

/** Every connection hears `schedule_updated` and `schedule_removed`: the Schedules view stays current. */
export function forwardScheduleEvents(scheduler: Scheduler, hub: Hub): Array<() => void> {
  const broadcast = (method: string, params: unknown) => {
    const frame = Buffer.from(JSON.stringify({ jsonrpc: JSONRPC_VERSION, method, params }));
    for (const connection of hub.all()) hub.write(connection, frame);
  };
  return [
    scheduler.on('schedule_updated', (payload) => broadcast('schedule_updated', payload)),
    scheduler.on('schedule_removed', (payload) => broadcast('schedule_removed', payload)),
  ];
}
