import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The `parallel` branch code runs in (`name#index`, nested joined by `/`); events carry it. One
 * store for the whole layer: events, prompts and `parallel` itself must all read the same one.
 */
export const branches = new AsyncLocalStorage<string>();

/** The branch the calling code runs in; undefined outside any `parallel`. */
export function currentBranch(): string | undefined {
  return branches.getStore();
}
