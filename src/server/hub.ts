import type { Writable } from 'node:stream';
import type { WebSocket } from 'ws';
import { JSONRPC_VERSION, type NotificationName, type NotificationParams } from '../protocol/index.js';
import type { TokenBucket } from './rate-limit.js';
import { WriteBatch } from './write-batch.js';

const TEXT_FRAME = { binary: false } as const;

/** One WebSocket connection: its channel, its subscriptions and its rate. */
export class Connection {
  /**
   * The sessions it follows with their events (`session_event`) and notices (`session_updated`,
   * `compaction_*`), and those it follows for their notices only (`subscribe { events: false }`).
   * A session is in one of the two at most.
   */
  readonly subscriptions = {
    all: false,
    sessionIds: new Set<string>(),
    notices: { all: false, sessionIds: new Set<string>() },
  };
  closed = false;
  /** The paired device this connection authenticated as; undefined: the server's own token. */
  deviceId: string | undefined = undefined;
  /** Receives every channel's approval requests and answers (`get_permissions { all: true }`). */
  allApprovals = false;

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
  /** Those following notices only (`subscribe { events: false }`). */
  private readonly noticeFollowersOfAll = new Set<Connection>();
  private readonly noticeFollowers = new Map<string, Set<Connection>>();
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

  /** Follows sessions (or all); with `events` false, their notices only (a session already followed with events stays so). */
  subscribe(connection: Connection, sessionIds?: readonly string[], events = true): void {
    const own = connection.subscriptions;
    if (!events) {
      if (sessionIds === undefined) {
        own.notices.all = true;
        this.noticeFollowersOfAll.add(connection);
        return;
      }
      for (const sessionId of sessionIds)
        if (!own.sessionIds.has(sessionId)) follow(this.noticeFollowers, own.notices.sessionIds, sessionId, connection);
      return;
    }
    if (sessionIds === undefined) {
      own.all = true;
      this.followersOfAll.add(connection);
      return;
    }
    for (const sessionId of sessionIds) {
      unfollow(this.noticeFollowers, own.notices.sessionIds, sessionId, connection);
      follow(this.followers, own.sessionIds, sessionId, connection);
    }
  }

  /** Stops following sessions, at either level; no ids: every session, and `all`. */
  unsubscribe(connection: Connection, sessionIds?: readonly string[]): void {
    const own = connection.subscriptions;
    if (sessionIds === undefined) {
      own.all = false;
      own.notices.all = false;
      this.followersOfAll.delete(connection);
      this.noticeFollowersOfAll.delete(connection);
    }
    for (const sessionId of sessionIds ?? [...own.sessionIds])
      unfollow(this.followers, own.sessionIds, sessionId, connection);
    for (const sessionId of sessionIds ?? [...own.notices.sessionIds])
      unfollow(this.noticeFollowers, own.notices.sessionIds, sessionId, connection);
  }

  hasChannel(channelId: string): boolean {
    return this.channels.has(channelId);
  }

  hasFollowers(sessionId: string): boolean {
    return (
      this.followersOfAll.size > 0 ||
      this.followers.has(sessionId) ||
      this.noticeFollowersOfAll.size > 0 ||
      this.noticeFollowers.has(sessionId)
    );
  }

  /** Connections of a paired device. */
  ofDevice(deviceId: string): Connection[] {
    return [...this.connections].filter((connection) => connection.deviceId === deviceId);
  }

  /** To every connection of the channel and every one that follows all approvals, once each. */
  toChannelAndApprovalFollowers<N extends NotificationName>(
    channelId: string,
    method: N,
    params: NotificationParams<N>,
  ): void {
    const targets = new Set(this.channels.get(channelId));
    for (const connection of this.connections) if (connection.allApprovals) targets.add(connection);
    if (targets.size > 0) this.broadcast(targets, method, params);
  }

  /** To every connection of the channel. */
  toChannel<N extends NotificationName>(channelId: string, method: N, params: NotificationParams<N>): void {
    const members = this.channels.get(channelId);
    if (!members) return;
    this.broadcast(members, method, params);
  }

  /**
   * To every connection following the session (or all sessions): a `session_event` only to those
   * following its events, a notice also to those following notices only.
   */
  toFollowers<N extends NotificationName>(sessionId: string, method: N, params: NotificationParams<N>): void {
    const groups = [this.followersOfAll, this.followers.get(sessionId)];
    if (method !== 'session_event') groups.push(this.noticeFollowersOfAll, this.noticeFollowers.get(sessionId));
    const present = groups.filter((group): group is Set<Connection> => group !== undefined && group.size > 0);
    if (present.length === 0) return;
    if (present.length === 1) {
      this.broadcast(present[0]!, method, params);
      return;
    }
    const union = new Set<Connection>();
    for (const group of present) for (const connection of group) union.add(connection);
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
    if (socket.bufferedAmount > this.options.maxBufferedBytes && connection.stream)
      this.batch.release(connection.stream);
    if (socket.bufferedAmount > this.options.maxBufferedBytes) {
      connection.closed = true;
      this.options.onSlowConnection?.(connection);
      return;
    }
    if (connection.stream) this.batch.hold(connection.stream);
    socket.send(frame, TEXT_FRAME);
  }
}

function follow(
  index: Map<string, Set<Connection>>,
  own: Set<string>,
  sessionId: string,
  connection: Connection,
): void {
  own.add(sessionId);
  let set = index.get(sessionId);
  if (!set) {
    set = new Set();
    index.set(sessionId, set);
  }
  set.add(connection);
}

function unfollow(
  index: Map<string, Set<Connection>>,
  own: Set<string>,
  sessionId: string,
  connection: Connection,
): void {
  own.delete(sessionId);
  const set = index.get(sessionId);
  set?.delete(connection);
  if (set?.size === 0) index.delete(sessionId);
}
