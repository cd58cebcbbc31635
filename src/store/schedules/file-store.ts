import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { ensureDirectory, ioError, replaceFile } from '../atomic-file.js';
import { formatJson, readJsonFile } from '../json-file.js';
import { KeyedQueue } from '../keyed-queue.js';
import { FORMAT_VERSION } from '../record-format.js';
import { checkId, storeClosed } from '../validate.js';
import { ScheduleFiringSchema, ScheduleRecordSchema, type ScheduleFiring, type ScheduleRecord } from './records.js';
import { checkFiring, checkLimit, checkSchedule, firingNotFound, scheduleExists, scheduleNotFound } from './rules.js';
import { newestFiringFirst, oldestFirst, type ScheduleStore } from './schedule-store.js';

/**
 * The file ScheduleStore, in the data folder beside the sessions and runs:
 *
 * ```
 * <dataDir>/schedules/<scheduleId>.json   the record and its newest firings, replaced by write-temp + fsync + rename
 * <dataDir>/schedules/.tmp/               temp files; anything here at open is a crash leftover
 * ```
 *
 * A schedule and its firings are one file, so a write that claims a firing and the firing itself
 * land together or not at all. It keeps the newest `maxFirings` firings (default 500): due times only
 * move forward, so one older than those is never claimed again. Like the run store it relies on the
 * file session store's `store.lock` for being the data folder's only writer.
 */
export interface FileScheduleStoreOptions {
  dataDir: string;
  /** Firings kept per schedule, newest first (default 500). */
  maxFirings?: number;
}

const ScheduleFileSchema = z.object({
  formatVersion: z.number().int().positive(),
  schedule: ScheduleRecordSchema,
  firings: z.array(ScheduleFiringSchema),
});
type ScheduleFile = z.infer<typeof ScheduleFileSchema>;

/** Opens the schedule store on files: `schedules/<id>.json` in the data folder. */
export async function createFileScheduleStore(options: FileScheduleStoreOptions): Promise<ScheduleStore> {
  const dir = join(options.dataDir, 'schedules');
  const tmpDir = join(dir, '.tmp');
  await ensureDirectory(tmpDir);
  for (const name of await fs.readdir(tmpDir)) await fs.rm(join(tmpDir, name), { force: true, recursive: true });
  return new FileScheduleStore(dir, tmpDir, options.maxFirings ?? 500);
}

const ADVICE = 'Restore it from a backup, or remove the file to drop the schedule.';

class FileScheduleStore implements ScheduleStore {
  readonly kind = 'file';
  private closed = false;
  private readonly files = new KeyedQueue();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
    private readonly maxFirings: number,
  ) {}

  private guard<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed('file schedule'));
    const running = task();
    this.inFlight.add(running);
    const forget = (): void => void this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  private path(scheduleId: string): string {
    return join(this.dir, `${checkId(scheduleId, 'schedule id')}.json`);
  }

  private read(scheduleId: string): Promise<ScheduleFile | undefined> {
    return readJsonFile(this.path(scheduleId), ScheduleFileSchema, ADVICE);
  }

  private async write(file: Omit<ScheduleFile, 'formatVersion'>): Promise<void> {
    const firings = [...file.firings].sort(newestFiringFirst).slice(0, this.maxFirings);
    await replaceFile(
      this.tmpDir,
      this.path(file.schedule.id),
      formatJson({ formatVersion: FORMAT_VERSION, schedule: file.schedule, firings }),
    );
  }

  createSchedule(input: ScheduleRecord): Promise<ScheduleRecord> {
    return this.guard(async () => {
      const record = { ...checkSchedule(input), revision: 0 };
      return this.files.run(record.id, async () => {
        if ((await this.read(record.id)) !== undefined) throw scheduleExists(record.id);
        await this.write({ schedule: record, firings: [] });
        return structuredClone(record);
      });
    });
  }

  getSchedule(scheduleId: string): Promise<ScheduleRecord | undefined> {
    return this.guard(async () => (await this.read(scheduleId))?.schedule);
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.guard(async () => {
      let names: string[];
      try {
        names = await fs.readdir(this.dir);
      } catch (error) {
        throw ioError('list', this.dir, error);
      }
      const files = await Promise.all(
        names.filter((name) => name.endsWith('.json')).map((name) => this.read(name.slice(0, -'.json'.length))),
      );
      return files
        .filter((file): file is ScheduleFile => file !== undefined)
        .map((file) => file.schedule)
        .sort(oldestFirst);
    });
  }

  updateSchedule(input: ScheduleRecord, options?: { firing?: ScheduleFiring }): Promise<ScheduleRecord | undefined> {
    return this.guard(async () => {
      const checked = checkSchedule(input);
      const firing = options?.firing ? checkFiring(options.firing, checked.id) : undefined;
      return this.files.run(checked.id, async () => {
        const stored = await this.read(checked.id);
        if (!stored) throw scheduleNotFound(checked.id);
        if (stored.schedule.revision !== checked.revision) return undefined;
        if (firing && stored.firings.some((each) => each.fireAt === firing.fireAt)) return undefined;
        const record = { ...checked, revision: checked.revision + 1 };
        await this.write({ schedule: record, firings: firing ? [...stored.firings, firing] : stored.firings });
        return structuredClone(record);
      });
    });
  }

  updateFiring(input: ScheduleFiring): Promise<void> {
    return this.guard(async () => {
      const firing = checkFiring(input);
      await this.files.run(firing.scheduleId, async () => {
        const stored = await this.read(firing.scheduleId);
        if (!stored) throw scheduleNotFound(firing.scheduleId);
        const index = stored.firings.findIndex((each) => each.fireAt === firing.fireAt);
        if (index < 0) throw firingNotFound(firing);
        stored.firings[index] = firing;
        await this.write(stored);
      });
    });
  }

  listFirings(scheduleId: string, options?: { limit?: number }): Promise<ScheduleFiring[]> {
    return this.guard(async () => {
      const limit = checkLimit(options?.limit);
      const stored = await this.read(scheduleId);
      if (!stored) throw scheduleNotFound(scheduleId);
      const firings = [...stored.firings].sort(newestFiringFirst);
      return limit === undefined ? firings : firings.slice(0, limit);
    });
  }

  removeSchedule(scheduleId: string): Promise<boolean> {
    return this.guard(() =>
      this.files.run(checkId(scheduleId, 'schedule id'), async () => {
        const path = this.path(scheduleId);
        try {
          await fs.rm(path);
          return true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
          throw ioError('remove', path, error);
        }
      }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
  }
}
