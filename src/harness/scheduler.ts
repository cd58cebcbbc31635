import { randomUUID } from 'node:crypto';
import { ParleyError } from '../conversation/index.js';
import type {
  ScheduleCatchUp,
  ScheduleFiring,
  ScheduleOverlap,
  ScheduleRecord,
  ScheduleStore,
  ScheduleTarget,
  ScheduleTiming,
} from '../store/index.js';
import { ScheduleTargetSchema } from '../store/index.js';
import { systemClock, type HarnessClock } from './clock.js';
import { HarnessError } from './errors.js';
import { checkTiming, invalidSchedule, nextFireTime } from './schedule-timing.js';

/**
 * What a schedule's firing reaches, supplied by whoever hosts the scheduler (the server wires the
 * run service and the draft layer, src/server/schedule-targets.ts). Kept out of the scheduler so it
 * fires the same way in a server, in a test, and in a library user's own process.
 */
export interface ScheduleTargets {
  /**
   * Checks a target before its schedule is stored: the workflow, project, role or session exists.
   * Throws a typed error naming what is wrong. May fill defaults (returns the target to store).
   */
  check(target: ScheduleTarget, scheduleId: string): Promise<ScheduleTarget>;
  /** Starts the run or sends the prompt; resolves with what it reached once that is stored. */
  fire(target: ScheduleTarget, firing: { scheduleId: string; fireAt: string }): Promise<FiringReach>;
  /** Whether what a firing reached is still going: its run unfinished, its draft's turn running. */
  running(firing: ScheduleFiring, target: ScheduleTarget): Promise<boolean>;
}

/** The run or session a firing reached. */
export interface FiringReach {
  runId?: string;
  sessionId?: string;
}

/** What `addSchedule` takes: a cron expression with its time zone, or an interval; a target; the rules. */
export interface AddScheduleRequest {
  name?: string;
  /** Five fields (minute hour day-of-month month weekday), or six with seconds first. Needs `timeZone`. */
  cron?: string;
  /** The IANA time zone the cron expression is read in; required with `cron`, never guessed. */
  timeZone?: string;
  /** Or: every so many seconds, counted from now. */
  everySeconds?: number;
  target: ScheduleTarget;
  /** Firings missed while no server ran (default `skip`). */
  catchUp?: ScheduleCatchUp;
  /** A firing while the previous one's run or turn goes on (default `skip`). */
  overlap?: ScheduleOverlap;
  /** Store it paused (default false). */
  paused?: boolean;
}

/** What a scheduler tells its listeners; the server forwards them as notifications. */
export interface SchedulerEvents {
  /** A schedule was added, changed, fired, paused or resumed. */
  schedule_updated: { schedule: ScheduleRecord };
  schedule_removed: { scheduleId: string };
  /** A firing could not start its run or send its prompt. */
  schedule_failed: { schedule: ScheduleRecord; firing: ScheduleFiring };
}

/** Options of `createScheduler`. */
export interface SchedulerOptions {
  store: ScheduleStore;
  targets: ScheduleTargets;
  /** Where the scheduler reads the time and sets its timer (default: the system clock). */
  clock?: HarnessClock;
  /** This process's name in the firings it claims (default: a random one). */
  serverName?: string;
  /**
   * A due time older than this when the scheduler first sees it was missed (no server ran then), and
   * `catchUp` decides (default 60 s). Younger ones are late, not missed: they fire.
   */
  missedAfterMs?: number;
  /** The longest the timer sleeps, so other servers' changes are seen (default 1 s). */
  pollMs?: number;
  /** Where a failed pass is reported (a store that could not be reached). */
  onError?: (error: unknown) => void;
}

/**
 * Schedules: stored, fired at their times by whichever server claims each firing first, with their
 * catch-up and overlap rules. `parley serve` runs one; `list_schedules`, `add_schedule`,
 * `pause_schedule`, `resume_schedule` and `remove_schedule` are thin faces over it.
 */
export interface Scheduler {
  /** Checks and stores a schedule; a bad cron, time zone or target is refused with nothing stored. */
  addSchedule(request: AddScheduleRequest): Promise<ScheduleRecord>;
  /** Oldest first. */
  listSchedules(): Promise<ScheduleRecord[]>;
  /** Throws SCHEDULE_NOT_FOUND. */
  getSchedule(scheduleId: string): Promise<ScheduleRecord>;
  /** Newest first. */
  listFirings(scheduleId: string, options?: { limit?: number }): Promise<ScheduleFiring[]>;
  pauseSchedule(scheduleId: string): Promise<ScheduleRecord>;
  /** Goes on from now: firings due while it was paused are not made up. */
  resumeSchedule(scheduleId: string): Promise<ScheduleRecord>;
  /** Throws SCHEDULE_NOT_FOUND. */
  removeSchedule(scheduleId: string): Promise<void>;
  /** Fires what is due now (one pass; the timer calls it, tests call it after moving their clock). */
  tick(): Promise<void>;
  /** Starts the timer. */
  start(): void;
  on<E extends keyof SchedulerEvents>(event: E, listener: (payload: SchedulerEvents[E]) => void): () => void;
  /** Stops the timer and waits for the pass under way. */
  close(): Promise<void>;
}

export function createScheduler(options: SchedulerOptions): Scheduler {
  return new StoreScheduler(options);
}

const DEFAULT_MISSED_AFTER_MS = 60_000;
const DEFAULT_POLL_MS = 1_000;
/** A write that keeps losing to other writers gives up after this many tries (it is retried next pass). */
const MAX_WRITE_TRIES = 8;

class StoreScheduler implements Scheduler {
  private readonly clock: HarnessClock;
  private readonly serverName: string;
  private readonly missedAfterMs: number;
  private readonly pollMs: number;
  private readonly listeners = new Map<keyof SchedulerEvents, Set<(payload: never) => void>>();
  private pass: Promise<void> = Promise.resolve();
  private timer: unknown;
  private started = false;
  private closed = false;

  constructor(private readonly options: SchedulerOptions) {
    this.clock = options.clock ?? systemClock;
    this.serverName = options.serverName ?? `scheduler-${randomUUID().slice(0, 8)}`;
    this.missedAfterMs = options.missedAfterMs ?? DEFAULT_MISSED_AFTER_MS;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  }

  // ---- managing schedules ---------------------------------------------------------------------

  async addSchedule(request: AddScheduleRequest): Promise<ScheduleRecord> {
    this.throwIfClosed();
    const timing = timingOf(request);
    checkTiming(timing);
    const parsedTarget = ScheduleTargetSchema.safeParse(request.target);
    if (!parsedTarget.success)
      throw invalidSchedule(
        `The schedule's target is not valid: ${parsedTarget.error.issues.map((issue) => `${issue.path.join('.') || 'target'}: ${issue.message}`).join('; ')}.`,
      );
    const overlap = request.overlap ?? 'skip';
    if (overlap === 'parallel' && parsedTarget.data.kind !== 'workflow')
      throw invalidSchedule(
        `overlap "parallel" needs a workflow target: a draft runs one turn at a time, so a prompt cannot run beside the one before it. Use "skip" or "queue".`,
        { overlap },
      );
    const id = `schedule-${randomUUID().slice(0, 8)}`;
    const target = await this.options.targets.check(parsedTarget.data, id);
    const now = this.clock.now();
    const next = nextFireTime(timing, now, now);
    if (next === undefined)
      throw invalidSchedule(
        `The cron expression "${request.cron ?? ''}" names no time in the future, so the schedule would never fire.`,
      );
    const iso = new Date(now).toISOString();
    const record: ScheduleRecord = {
      id,
      ...(request.name !== undefined ? { name: request.name } : {}),
      timing,
      target,
      catchUp: request.catchUp ?? 'skip',
      overlap,
      paused: request.paused ?? false,
      nextFireAt: new Date(next).toISOString(),
      queue: [],
      revision: 0,
      createdAt: iso,
      updatedAt: iso,
    };
    const stored = await this.options.store.createSchedule(record);
    this.emit('schedule_updated', { schedule: stored });
    this.wake();
    return stored;
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.options.store.listSchedules();
  }

  async getSchedule(scheduleId: string): Promise<ScheduleRecord> {
    const record = await this.options.store.getSchedule(scheduleId);
    if (!record) throw scheduleNotFound(scheduleId);
    return record;
  }

  async listFirings(scheduleId: string, options?: { limit?: number }): Promise<ScheduleFiring[]> {
    await this.getSchedule(scheduleId);
    return this.options.store.listFirings(scheduleId, options);
  }

  async pauseSchedule(scheduleId: string): Promise<ScheduleRecord> {
    return this.change(scheduleId, (record) => ({ ...record, paused: true }));
  }

  async resumeSchedule(scheduleId: string): Promise<ScheduleRecord> {
    const resumed = await this.change(scheduleId, (record) => {
      if (!record.paused) return record;
      const now = this.clock.now();
      const next = nextFireTime(record.timing, now, Date.parse(record.createdAt));
      const { nextFireAt: _dropped, ...rest } = record;
      return { ...rest, paused: false, ...(next !== undefined ? { nextFireAt: new Date(next).toISOString() } : {}) };
    });
    this.wake();
    return resumed;
  }

  async removeSchedule(scheduleId: string): Promise<void> {
    if (!(await this.options.store.removeSchedule(scheduleId))) throw scheduleNotFound(scheduleId);
    this.emit('schedule_removed', { scheduleId });
  }

  /** Reads, changes and writes the schedule until no other writer came between (or throws). */
  private async change(scheduleId: string, edit: (record: ScheduleRecord) => ScheduleRecord): Promise<ScheduleRecord> {
    for (let attempt = 0; attempt < MAX_WRITE_TRIES; attempt += 1) {
      const record = await this.getSchedule(scheduleId);
      const edited = edit(record);
      if (edited === record) return record;
      const written = await this.options.store.updateSchedule({
        ...edited,
        updatedAt: new Date(this.clock.now()).toISOString(),
      });
      if (written) {
        this.emit('schedule_updated', { schedule: written });
        return written;
      }
    }
    throw new ParleyError(
      'INVALID_STATE',
      `Schedule "${scheduleId}" kept changing under this write (other servers firing it); try again.`,
      { fault: 'system', data: { scheduleId } },
    );
  }

  // ---- firing ---------------------------------------------------------------------------------

  tick(): Promise<void> {
    const pass = this.pass.then(() => this.runPass());
    this.pass = pass.catch((error: unknown) => this.options.onError?.(error));
    return pass;
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.wake();
  }

  private async runPass(): Promise<void> {
    if (this.closed) return;
    for (const schedule of await this.options.store.listSchedules()) {
      if (this.closed) return;
      if (schedule.paused) continue;
      const served = await this.serveQueue(schedule);
      await this.fireDue(served ?? schedule);
    }
  }

  /** The oldest queued firing starts once the run before it has finished. Returns the record as it now is. */
  private async serveQueue(schedule: ScheduleRecord): Promise<ScheduleRecord | undefined> {
    const [fireAt, ...rest] = schedule.queue;
    if (fireAt === undefined) return undefined;
    if (await this.stillRunning(schedule)) return undefined;
    const firing: ScheduleFiring = {
      scheduleId: schedule.id,
      fireAt,
      firedAt: new Date(this.clock.now()).toISOString(),
      outcome: 'started',
      server: this.serverName,
    };
    const claimed = await this.options.store.updateSchedule({
      ...schedule,
      queue: rest,
      last: firing,
      active: firing,
      updatedAt: firing.firedAt,
    });
    if (!claimed) return undefined;
    // The queued firing's row is there already (stored as `queued` when it was due).
    return this.fireClaimed(claimed, firing);
  }

  private async fireDue(schedule: ScheduleRecord): Promise<void> {
    if (schedule.nextFireAt === undefined) return;
    const now = this.clock.now();
    const due = Date.parse(schedule.nextFireAt);
    if (due > now) return;
    const next = nextFireTime(schedule.timing, now, Date.parse(schedule.createdAt));
    const firedAt = new Date(now).toISOString();
    const base = { scheduleId: schedule.id, fireAt: schedule.nextFireAt, firedAt, server: this.serverName };
    const { nextFireAt: _due, ...rest } = schedule;
    const advanced: ScheduleRecord = {
      ...rest,
      ...(next !== undefined ? { nextFireAt: new Date(next).toISOString() } : {}),
      updatedAt: firedAt,
    };
    const missed = now - due > this.missedAfterMs;
    let outcome: ScheduleFiring['outcome'] = 'started';
    if (missed && schedule.catchUp === 'skip') outcome = 'missed';
    // Queued firings keep their order: a new one goes behind them.
    else if (schedule.overlap === 'queue' && schedule.queue.length > 0) outcome = 'queued';
    else if (schedule.overlap !== 'parallel' && (await this.stillRunning(schedule)))
      outcome = schedule.overlap === 'queue' ? 'queued' : 'skipped_overlap';
    const firing: ScheduleFiring = { ...base, outcome };
    const claimed = await this.options.store.updateSchedule(
      {
        ...advanced,
        last: firing,
        ...(outcome === 'started' ? { active: firing } : {}),
        ...(outcome === 'queued' ? { queue: [...schedule.queue, firing.fireAt] } : {}),
      },
      { firing },
    );
    // Another server claimed it first: it fires there.
    if (!claimed) return;
    if (outcome !== 'started') {
      this.emit('schedule_updated', { schedule: claimed });
      return;
    }
    await this.fireClaimed(claimed, firing);
  }

  /** Fires a claimed firing, then records what it reached (or why it failed). */
  private async fireClaimed(schedule: ScheduleRecord, firing: ScheduleFiring): Promise<ScheduleRecord> {
    let done: ScheduleFiring;
    try {
      const reach = await this.options.targets.fire(schedule.target, {
        scheduleId: schedule.id,
        fireAt: firing.fireAt,
      });
      done = { ...firing, outcome: 'started', ...reach };
    } catch (error) {
      const { code, message } = describeError(error);
      done = { ...firing, outcome: 'failed', error: { code, message } };
    }
    await this.options.store.updateFiring(done).catch((error: unknown) => {
      // The schedule was removed meanwhile: nothing left to record.
      if (!isNotFound(error)) throw error;
    });
    const recorded = await this.recordReach(schedule.id, done).catch((error: unknown) => {
      if (isNotFound(error)) return schedule;
      throw error;
    });
    this.emit('schedule_updated', { schedule: recorded });
    if (done.outcome === 'failed') this.emit('schedule_failed', { schedule: recorded, firing: done });
    return recorded;
  }

  /** Puts the fired firing's run or error into the record's `last` and `active`, if they still name it. */
  private async recordReach(scheduleId: string, done: ScheduleFiring): Promise<ScheduleRecord> {
    for (let attempt = 0; attempt < MAX_WRITE_TRIES; attempt += 1) {
      const record = await this.getSchedule(scheduleId);
      const isLast = record.last?.fireAt === done.fireAt;
      const isActive = record.active?.fireAt === done.fireAt;
      if (!isLast && !isActive) return record;
      const { active: _active, ...rest } = record;
      // A firing that failed started nothing: it stops being the one the overlap rule waits for.
      const active = isActive ? (done.outcome === 'started' ? done : undefined) : record.active;
      const edited: ScheduleRecord = { ...rest, ...(isLast ? { last: done } : {}), ...(active ? { active } : {}) };
      const written = await this.options.store.updateSchedule(edited);
      if (written) return written;
    }
    return this.getSchedule(scheduleId);
  }

  private async stillRunning(schedule: ScheduleRecord): Promise<boolean> {
    const active = schedule.active;
    if (!active || active.outcome !== 'started') return false;
    if (active.runId === undefined && active.sessionId === undefined) return false;
    try {
      return await this.options.targets.running(active, schedule.target);
    } catch {
      // What it reached is gone (a removed run, a closed draft): nothing runs.
      return false;
    }
  }

  // ---- the timer ------------------------------------------------------------------------------

  /** Runs a pass now and sets the timer for the next (the earliest due time, at most `pollMs` away). */
  private wake(): void {
    if (!this.started || this.closed) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    void this.tick()
      .catch(() => undefined)
      .then(async () => {
        if (this.closed) return;
        const schedules = await this.options.store.listSchedules().catch(() => []);
        const now = this.clock.now();
        let delay = this.pollMs;
        for (const schedule of schedules)
          if (!schedule.paused && schedule.nextFireAt !== undefined)
            delay = Math.min(delay, Math.max(0, Date.parse(schedule.nextFireAt) - now));
        if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
        this.timer = this.clock.setTimeout(() => {
          this.timer = undefined;
          this.wake();
        }, delay);
      });
  }

  on<E extends keyof SchedulerEvents>(event: E, listener: (payload: SchedulerEvents[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => void set.delete(listener as (payload: never) => void);
  }

  private emit<E extends keyof SchedulerEvents>(event: E, payload: SchedulerEvents[E]): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        (listener as (payload: SchedulerEvents[E]) => void)(payload);
      } catch (error) {
        process.emitWarning(`A scheduler listener threw: ${String(error)}`);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  private throwIfClosed(): void {
    if (this.closed)
      throw new HarnessError('SESSION_ENDED', 'The scheduler is closed; create a new one to run schedules.', {
        fault: 'system',
      });
  }
}

function timingOf(request: AddScheduleRequest): ScheduleTiming {
  const hasCron = request.cron !== undefined;
  const hasInterval = request.everySeconds !== undefined;
  if (hasCron === hasInterval)
    throw invalidSchedule(
      'A schedule needs exactly one of a cron expression (with its time zone) or an interval in seconds.',
    );
  if (hasInterval) {
    const every = request.everySeconds!;
    if (!Number.isInteger(every) || every < 1 || every > 366 * 24 * 3600)
      throw invalidSchedule(`The interval must be a whole number of seconds from 1 to a year, not ${String(every)}.`, {
        everySeconds: every,
      });
    return { kind: 'interval', everySeconds: every };
  }
  const cron = request.cron!.trim();
  if (cron === '') throw invalidSchedule('The cron expression is empty. Write e.g. "0 3 * * *" (03:00 every day).');
  if (request.timeZone === undefined || request.timeZone.trim() === '')
    throw invalidSchedule(
      `The cron expression "${cron}" needs an explicit IANA time zone (e.g. Europe/Berlin or UTC): Parley never guesses the machine's.`,
      { cron },
    );
  return { kind: 'cron', cron, timeZone: request.timeZone.trim() };
}

function scheduleNotFound(scheduleId: string): HarnessError {
  return new HarnessError(
    'SCHEDULE_NOT_FOUND',
    `No schedule "${scheduleId}". List schedules to see the ids that exist.`,
    { fault: 'user', data: { scheduleId } },
  );
}

function isNotFound(error: unknown): boolean {
  return error instanceof ParleyError && error.code === 'SCHEDULE_NOT_FOUND';
}

function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof ParleyError) return { code: error.code, message: error.message };
  return { code: 'FIRING_FAILED', message: error instanceof Error ? error.message : String(error) };
}
