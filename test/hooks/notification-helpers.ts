import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AttentionItem, Notification, NotificationSink, NotifierClock } from '../../src/hooks/index.js';

/** A clock whose time moves only when a test says so: timers due by then run, in order. */
export class ManualClock implements NotifierClock {
  private time = 1_000_000;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();
  private nextId = 1;

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time on by `ms`, running each timer due on the way. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, timer]) => timer.at <= end).sort((a, b) => a[1].at - b[1].at);
      const next = due[0];
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = Math.max(this.time, next[1].at);
      next[1].callback();
    }
    this.time = end;
  }

  get pendingTimers(): number {
    return this.timers.size;
  }
}

/** A sink that keeps what it was sent. */
export function recordingSink(): NotificationSink & { sent: Notification[] } {
  const sent: Notification[] = [];
  return {
    name: 'recording',
    sent,
    send: async (notification) => {
      sent.push(notification);
    },
  };
}

export function item(key: string, overrides: Partial<AttentionItem> = {}): AttentionItem {
  return {
    key,
    kind: 'permission_request',
    title: `Approval needed: ${key}`,
    message: `The reviewer wants to run ${key}.`,
    who: 'reviewer',
    where: 'demo / fix-login',
    sessionId: 'session-1',
    route: `#approval=session-1/${key}`,
    ...overrides,
  };
}

/** A webhook receiver on 127.0.0.1 that keeps each request. */
export async function startReceiver(status = 200): Promise<{
  url: string;
  requests: Array<{ path: string; headers: IncomingHttpHeaders; body: string }>;
  /** Resolves once `count` requests arrived. */
  received(count: number): Promise<void>;
  close(): Promise<void>;
}> {
  const requests: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end('ok');
      for (const waiter of waiters.filter((entry) => requests.length >= entry.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    received: (count) =>
      requests.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
