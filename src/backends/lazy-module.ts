/**
 * A package loaded on first use. Client SDKs take long to import; every `parley` command would pay
 * that at start-up whether or not it talks to their API (bench/server.bench.ts times `parley serve`
 * to ready).
 */
export interface LazyModule<T> {
  load(): Promise<T>;
  /** The module if it has been loaded (errors it threw can only exist once it is). */
  loaded(): T | undefined;
}

export function lazyModule<T>(importer: () => Promise<T>): LazyModule<T> {
  let loading: Promise<T> | undefined;
  let loaded: T | undefined;
  return {
    load: () => (loading ??= importer().then((module) => (loaded = module))),
    loaded: () => loaded,
  };
}

/** `value instanceof type`, false while the class is not loaded. */
export function isInstance<T>(value: unknown, type: (abstract new (...args: never[]) => T) | undefined): value is T {
  return type !== undefined && value instanceof type;
}
