import type { Writable } from 'node:stream';
import type { WebSocket } from 'ws';
import { JSONRPC_VERSION, type NotificationName, type NotificationParams } from '../protocol/index.js';
import type { TokenBucket } from './rate-limit.js';
import { WriteBatch } from './write-batch.js';

const TEXT_FRAME = { binary: false } as const;

/** One WebSocket connection: its channel, its subscriptions and its rate. */
export class Connection {
  readonly subscriptions = { all: false, sessionIds: new Set<string>() };
  closed = false;

  constructor(
    readonly id: string,
    readonly channelId: string,
    readonly socket: WebSocket,
    readonly bucket: TokenBucket | undefined,
    /** The TCP socket under `socket`: writes to it are batched per turn of the event loop. */
    readonly stream?: Writable,
  ) {}
}

export interface HubOptions {
  /** A connection whose unsent data passes this is too slow: it is closed (1013) and resumes after reconnecting. */
  maxBufferedBytes: number;
  onSlowConnection?: (connection: Connection) => void;
}

/**
 * Who receives which notification. Each notification is serialized once, to one buffer, and that
 * same buffer is written to every receiving socket: the cost of fan-out is the writes, not JSON.
 * What a turn of the event loop writes to one socket leaves in one system call (`WriteBatch`).
 */
export class Hub {
  private readonly channels = new Map<string, Set<Connection>>();
  private readonly followersOfAll = new Set<Connection>();
  private readonly followers = new Map<string, Set<Connection>>();
  private readonly connections = new Set<Connection>();
  private readonly batch = new WriteBatch();

  constructor(private readonly options: HubOptions) {}

  get size(): number {
    return this.connections.size;
  }

  all(): Iterable<Connection> {
    return this.connections;
  }

  add(connection: Connection): void {
    this.connections.add(connection);
    let members = this.channels.get(connection.channelId);
    if (!members) {
      members = new Set();
      this.channels.set(connection.channelId, members);
    }
    members.add(connection);
  }

  /** Sends what this turn has written so far, now: before sockets are destroyed. */
  flush(): void {
    this.batch.flush();
  }

  remove(connection: Connection): void {
    connection.closed = true;
    this.connections.delete(connection);
    const members = this.channels.get(connection.channelId);
    members?.delete(connection);
    if (members?.size === 0) this.channels.delete(connection.channelId);
    this.unsubscribe(connection);
  }

  subscribe(connection: Connection, sessionIds?: readonly string[]): void {
    if (sessionIds === undefined) {
      connection.subscriptions.all = true;
      this.followersOfAll.add(connection);
      return;
    }
    for (const sessionId of sessionIds) {
      connection.subscriptions.sessionIds.add(sessionId);
      let set = this.followers.get(sessionId);
      if (!set) {
        set = new Set();
        this.followers.set(sessionId, set);
      }
      set.add(connection);
    }
  }

  unsubscribe(connection: Connection, sessionIds?: readonly string[]): void {
    const ids = sessionIds ?? [...connection.subscriptions.sessionIds];
    if (sessionIds === undefined) {
      connection.subscriptions.all = false;
      this.followersOfAll.delete(connection);
    }
    for (const sessionId of ids) {
      connection.subscriptions.sessionIds.delete(sessionId);
      const set = this.followers.get(sessionId);
      set?.delete(connection);
      if (set?.size === 0) this.followers.delete(sessionId);
    }
  }

  hasChannel(channelId: string): boolean {
    return this.channels.has(channelId);
  }

  hasFollowers(sessionId: string): boolean {
    return this.followersOfAll.size > 0 || this.followers.has(sessionId);
  }

  /** To every connection of the channel. */
  toChannel<N extends NotificationName>(channelId: string, method: N, params: NotificationParams<N>): void {
    const members = this.channels.get(channelId);
    if (!members) return;
    this.broadcast(members, method, params);
  }

  /** To every connection following the session (or all sessions). */
  toFollowers<N extends NotificationName>(sessionId: string, method: N, params: NotificationParams<N>): void {
    const some = this.followers.get(sessionId);
    if (this.followersOfAll.size === 0) {
      if (some) this.broadcast(some, method, params);
      return;
    }
    if (!some) {
      this.broadcast(this.followersOfAll, method, params);
      return;
    }
    const union = new Set(this.followersOfAll);
    for (const connection of some) union.add(connection);
    this.broadcast(union, method, params);
  }

  private broadcast(targets: Iterable<Connection>, method: string, params: unknown): void {
    let frame: Buffer | undefined;
    for (const connection of targets) {
      if (connection.closed) continue;
      frame ??= Buffer.from(JSON.stringify({ jsonrpc: JSONRPC_VERSION, method, params }));
      this.write(connection, frame);
    }
  }

  /** Writes a frame already serialized (a response, or a notification built once). */
  write(connection: Connection, frame: Buffer | string): void {
    const socket = connection.socket;
    if (connection.closed || socket.readyState !== socket.OPEN) return;
    // Held bytes count in `bufferedAmount`: a burst in one turn is first offered to the socket, so
    // only data the client has not taken is judged (as before writes were batched).
    if (socket.bufferedAmount > this.options.maxBufferedBytes && connection.stream) this.batch.release(connection.stream);
    if (socket.bufferedAmount > this.options.maxBufferedBytes) {
      connection.closed = true;
      this.options.onSlowConnection?.(connection);
      return;
    }
    if (connection.stream) this.batch.hold(connection.stream);
    socket.send(frame, TEXT_FRAME);
  }
}
