import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HarnessClock, RunService } from '../../src/harness/index.js';
import type { RunRecord } from '../../src/store/index.js';

/** A clock tests move by hand: timers fire when `advance` passes their time, never by waiting. */
export interface ManualClock extends HarnessClock {
  advance(ms: number): void;
  readonly pending: number;
}

export function manualClock(start = Date.parse('2026-01-05T09:00:00.000Z')): ManualClock {
  let now = start;
  const timers = new Set<{ at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const timer = { at: now + ms, callback };
      timers.add(timer);
      return timer;
    },
    clearTimeout(handle) {
      timers.delete(handle as { at: number; callback: () => void });
    },
    advance(ms) {
      now += ms;
      for (const timer of [...timers].sort((a, b) => a.at - b.at)) {
        if (timer.at > now) continue;
        timers.delete(timer);
        timer.callback();
      }
    },
    get pending() {
      return timers.size;
    },
  };
}

/** Resolves with the run once `predicate` holds for it (checked now and on every update). */
export async function waitForRun(
  service: RunService,
  runId: string,
  predicate: (run: RunRecord) => boolean,
): Promise<RunRecord> {
  return new Promise((resolve, reject) => {
    const stop = service.on('run_updated', ({ run }) => {
      if (run.id === runId && predicate(run)) {
        stop();
        resolve(run);
      }
    });
    service.getRun(runId).then((run) => {
      if (predicate(run)) {
        stop();
        resolve(run);
      }
    }, reject);
  });
}

export const isWaiting = (run: RunRecord): boolean => run.status === 'waiting' && run.pendingPrompts.length > 0;
export const hasEnded = (run: RunRecord): boolean => ['complete', 'aborted', 'failed'].includes(run.status);

/** A project folder with an (empty) workflow module file at `relative`, so the run service finds it. */
export async function projectWithWorkflow(
  root: string,
  relative = 'workflows/review.ts',
  config?: unknown,
): Promise<string> {
  await mkdir(join(root, 'workflows'), { recursive: true });
  await writeFile(join(root, relative), '// loaded through the test loader\n');
  if (config !== undefined) await writeFile(join(root, 'parley.config.json'), JSON.stringify(config));
  return root;
}
