import { JSONRPC_VERSION, type NotificationName, type NotificationParams } from '../protocol/index.js';
import type { Connection, Hub } from './hub.js';

/**
 * Which connections follow which runs (`subscribe_runs`), and the fan-out of run notifications to
 * them: each notification is serialized once and written through the hub (so it joins the
 * connection's batched writes and its slow-client guard). A closed connection is dropped here the
 * next time it would be written to, so nothing has to be told when a socket closes.
 */
export class RunFollowers {
  private readonly followersOfAll = new Set<Connection>();
  private readonly followers = new Map<string, Set<Connection>>();
  /** The runs each connection follows by id, for `subscriptionOf` and `unsubscribe`. */
  private readonly followed = new WeakMap<Connection, Set<string>>();
  /** Connections that asked for `run_event` too (every event: agent output included). */
  private readonly wantEvents = new WeakSet<Connection>();

  constructor(private readonly hub: Hub) {}

  /** `events` given sets whether the connection also receives `run_event`; omitted leaves it as it was. */
  subscribe(connection: Connection, runIds?: readonly string[], events?: boolean): void {
    if (events === true) this.wantEvents.add(connection);
    if (events === false) this.wantEvents.delete(connection);
    if (runIds === undefined) {
      this.followersOfAll.add(connection);
      return;
    }
    const own = this.followedBy(connection);
    for (const runId of runIds) {
      own.add(runId);
      let set = this.followers.get(runId);
      if (!set) {
        set = new Set();
        this.followers.set(runId, set);
      }
      set.add(connection);
    }
  }

  /** Stops following the runs named, or every run (and `all`) when none are named. */
  unsubscribe(connection: Connection, runIds?: readonly string[]): void {
    const own = this.followedBy(connection);
    if (runIds === undefined) {
      this.followersOfAll.delete(connection);
      this.wantEvents.delete(connection);
    }
    for (const runId of runIds ?? [...own]) {
      own.delete(runId);
      const set = this.followers.get(runId);
      set?.delete(connection);
      if (set?.size === 0) this.followers.delete(runId);
    }
  }

  subscriptionOf(connection: Connection): { all: boolean; runIds: string[]; events: boolean } {
    return {
      all: this.followersOfAll.has(connection),
      runIds: [...this.followedBy(connection)].sort(),
      events: this.wantEvents.has(connection),
    };
  }

  hasFollowers(runId: string): boolean {
    return this.followersOfAll.size > 0 || this.followers.has(runId);
  }

  /** To every connection following the run (or all runs), once each. */
  notify<N extends NotificationName>(runId: string, method: N, params: NotificationParams<N>): void {
    const targets = new Set(this.followersOfAll);
    for (const connection of this.followers.get(runId) ?? []) targets.add(connection);
    let frame: Buffer | undefined;
    for (const connection of targets) {
      if (connection.closed) {
        this.unsubscribe(connection);
        continue;
      }
      if (method === 'run_event' && !this.wantEvents.has(connection)) continue;
      frame ??= Buffer.from(JSON.stringify({ jsonrpc: JSONRPC_VERSION, method, params }));
      this.hub.write(connection, frame);
    }
  }

  private followedBy(connection: Connection): Set<string> {
    let own = this.followed.get(connection);
    if (!own) {
      own = new Set();
      this.followed.set(connection, own);
    }
    return own;
  }
}
