/**
 * A small typed event emitter: `on` returns its own unsubscribe function, and a throwing handler
 * never breaks the emitter or the other handlers (it is reported to `onHandlerError`).
 */
export class TypedEmitter<Events extends object> {
  private readonly handlers = new Map<keyof Events, Set<(payload: never) => void>>();

  constructor(private readonly onHandlerError: (error: unknown) => void = () => {}) {}

  on<K extends keyof Events>(name: K, handler: (payload: Events[K]) => void): () => void {
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
    }
    set.add(handler as (payload: never) => void);
    return () => {
      set.delete(handler as (payload: never) => void);
    };
  }

  emit<K extends keyof Events>(name: K, payload: Events[K]): void {
    const set = this.handlers.get(name);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        (handler as (payload: Events[K]) => void)(payload);
      } catch (error) {
        this.onHandlerError(error);
      }
    }
  }

  listenerCount(name: keyof Events): number {
    return this.handlers.get(name)?.size ?? 0;
  }
}
