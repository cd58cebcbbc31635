import { createHash } from 'node:crypto';
import pg from 'pg';
import type { StoreChange } from './session-store.js';
import { KEEPALIVE_DELAY_MS } from '../postgres/connection.js';
import { FIRST_BACKOFF_MS, MAX_BACKOFF_MS } from '../postgres/retry.js';

/** PostgreSQL truncates identifiers, channel names too, beyond 63 bytes. */
const MAX_CHANNEL_BYTES = 63;
/** How often the LISTEN connection is asked to answer; one that does not is dropped and made again. */
const HEARTBEAT_MS = 5_000;
/** How long a heartbeat may take before the connection counts as dead (a half-open TCP connection never errors). */
const HEARTBEAT_TIMEOUT_MS = 5_000;

/**
 * The NOTIFY channel of one schema: every process on the same schema shares it, other schemas in
 * the same database do not hear it. Readable when it fits; a hash of the schema when it does not.
 */
export function changeChannel(schema: string): string {
  const readable = `parley_changes:${schema}`;
  if (Buffer.byteLength(readable) <= MAX_CHANNEL_BYTES) return readable;
  return `parley_changes:${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}

/**
 * A notification's payload: `<origin> <sessionId> <firstSeq>` for an append, `<origin> <sessionId>`
 * for a record update. Session ids never contain a space (IdSchema); the origin names the store
 * instance that made the change, so it can ignore its own.
 */
export function parsePayload(payload: string, ownOrigin: string): StoreChange | undefined {
  const [origin, sessionId, firstSeq] = payload.split(' ');
  if (origin === ownOrigin || origin === undefined || sessionId === undefined || sessionId === '') return undefined;
  if (firstSeq === undefined) return { kind: 'updated', sessionId };
  const seq = Number(firstSeq);
  return Number.isInteger(seq) && seq >= 0 ? { kind: 'appended', sessionId, firstSeq: seq } : { kind: 'unknown' };
}

export interface ChangeListenerOptions {
  connectionString: string;
  connectTimeoutMs: number;
  channel: string;
  /** This store instance's origin: its own notifications are not reported. */
  origin: string;
}

/**
 * One dedicated connection that LISTENs on the schema's channel for every watcher of a store. It is
 * made when the first watcher comes and ended when the last one goes. When it drops (a restarted
 * server, `pg_terminate_backend`, a dead network) it is made again with growing pauses, and once it
 * listens again every watcher hears `unknown`: notifications sent meanwhile are lost for good. It
 * also says `unknown` when it first listens, since changes made before then were not heard.
 */
export class ChangeListener {
  private readonly watchers = new Set<(change: StoreChange) => void>();
  private client: pg.Client | undefined;
  private stopped = true;
  private backoff = FIRST_BACKOFF_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ChangeListenerOptions) {}

  watch(onChange: (change: StoreChange) => void): () => void {
    this.watchers.add(onChange);
    if (this.stopped) {
      this.stopped = false;
      void this.connect();
    }
    return () => {
      this.watchers.delete(onChange);
      if (this.watchers.size === 0) this.stop();
    };
  }

  /** Ends the connection; no watcher hears anything after this. */
  stop(): void {
    this.watchers.clear();
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.heartbeatTimer);
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      connectionTimeoutMillis: this.options.connectTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
      application_name: 'parley-listen',
    });
    // Bound before connecting: an error event with no listener would end the process.
    client.on('error', () => this.dropped(client));
    client.on('end', () => this.dropped(client));
    client.on('notification', (message) => {
      if (this.client !== client || message.channel !== this.options.channel || message.payload === undefined) return;
      const change = parsePayload(message.payload, this.options.origin);
      if (change) this.tell(change);
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.options.channel)}`);
    } catch {
      this.dropped(client);
      return;
    }
    if (this.client !== client) return;
    this.backoff = FIRST_BACKOFF_MS;
    this.heartbeatTimer = setInterval(() => this.heartbeat(client), HEARTBEAT_MS);
    this.heartbeatTimer.unref();
    this.tell({ kind: 'unknown' });
  }

  /** Asks the connection to answer; one that does not within the timeout is ended (and made again). */
  private heartbeat(client: pg.Client): void {
    const timeout = setTimeout(() => this.dropped(client), HEARTBEAT_TIMEOUT_MS);
    timeout.unref();
    client.query('SELECT 1').then(
      () => clearTimeout(timeout),
      () => {
        clearTimeout(timeout);
        this.dropped(client);
      },
    );
  }

  /** The connection failed or ended: make a new one after a pause, unless the listener was stopped. */
  private dropped(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    clearInterval(this.heartbeatTimer);
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    this.retryTimer = setTimeout(() => void this.connect(), wait);
    this.retryTimer.unref();
  }

  private tell(change: StoreChange): void {
    for (const watcher of [...this.watchers]) {
      try {
        watcher(change);
      } catch (error) {
        process.emitWarning(`A store change watcher threw: ${String(error)}`);
      }
    }
  }
}
