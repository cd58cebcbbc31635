import { reduce, type AppAction, type AppState } from './state.js';

/** Holds the state; every dispatch runs the reducer and tells the listeners (the renderer). */
export class Store {
  private current: AppState;
  private readonly listeners = new Set<(state: AppState) => void>();

  constructor(initial: AppState) {
    this.current = initial;
  }

  get state(): AppState {
    return this.current;
  }

  dispatch(action: AppAction): void {
    const next = reduce(this.current, action);
    if (next === this.current) return;
    this.current = next;
    for (const listener of [...this.listeners]) listener(next);
  }

  subscribe(listener: (state: AppState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
