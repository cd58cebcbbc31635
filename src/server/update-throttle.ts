import type { SessionManagerEvents } from '../sessions/index.js';

type SessionUpdate = SessionManagerEvents['session:updated'];

/** Least time between two `session_updated` notifications of one session caused by appended events. */
export const APPENDED_UPDATE_INTERVAL_MS = 250;

/**
 * `session_updated` carries the whole session record. Sent after every appended event, a streaming
 * reply would send it to every follower once per text delta, doubling their traffic for a record
 * that barely changes (the events themselves carry the content). Updates caused by appended events
 * go out at most once per interval per session, the newest last; any other update (created,
 * message added, cleared, archived, settings) goes out at once and replaces a waiting one.
 */
export class SessionUpdateThrottle {
  private readonly sessions = new Map<string, { sentAt: number; waiting?: SessionUpdate; timer?: NodeJS.Timeout }>();

  constructor(
    private readonly send: (update: SessionUpdate) => void,
    private readonly intervalMs = APPENDED_UPDATE_INTERVAL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  offer(update: SessionUpdate): void {
    const now = this.now();
    const entry = this.sessions.get(update.sessionId);
    if (
      update.action !== 'events_appended' ||
      entry === undefined ||
      (entry.timer === undefined && now - entry.sentAt >= this.intervalMs)
    ) {
      if (entry?.timer !== undefined) clearTimeout(entry.timer);
      this.sessions.set(update.sessionId, { sentAt: now });
      this.send(update);
      return;
    }
    entry.waiting = update;
    entry.timer ??= setTimeout(
      () => this.sendWaiting(update.sessionId),
      Math.max(0, entry.sentAt + this.intervalMs - now),
    ).unref();
  }

  close(): void {
    for (const entry of this.sessions.values()) if (entry.timer !== undefined) clearTimeout(entry.timer);
    this.sessions.clear();
  }

  private sendWaiting(sessionId: string): void {
    const entry = this.sessions.get(sessionId);
    if (entry?.waiting === undefined) return;
    const update = entry.waiting;
    this.sessions.set(sessionId, { sentAt: this.now() });
    this.send(update);
  }
}
