import { useEffect, useState, useSyncExternalStore } from 'react';
import { TuiController, type ControllerOptions } from './controller.js';
import type { NoteLine, ViewState } from './view-state.js';

export interface UseParleyOptions extends ControllerOptions {
  /** Printed first, before anything the server says. */
  banner?: NoteLine[];
}

/**
 * The one hook: it owns the controller that folds protocol traffic into view state (`reduceView`)
 * and re-renders on each change. Created once per client; connects on mount, lets go on unmount.
 */
export function useParley(options: UseParleyOptions): { state: ViewState; controller: TuiController } {
  const [controller] = useState(() => {
    const created = new TuiController(options);
    if (options.banner) created.dispatch({ type: 'banner', lines: options.banner });
    return created;
  });
  const state = useSyncExternalStore(controller.subscribe, controller.getState);
  useEffect(() => {
    controller.start();
    return () => controller.stop();
  }, [controller]);
  return { state, controller };
}

/**
 * The time, re-read every `tickMs` while `active` (spinners and elapsed times); no timer runs
 * while nothing is in progress, so an idle TUI does not re-render.
 */
export function useNow(active: boolean, tickMs: number, clock: () => number): number {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setTick((tick) => tick + 1), tickMs);
    return () => clearInterval(timer);
  }, [active, tickMs]);
  return clock();
}
