import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createInMemoryTransportPair, type Transport, type TransportFactory } from '../../../src/protocol/index.js';

/** One frame of a recorded session: a request the client sent, a response (with the method it answered) or a notification. */
export type RecordedFrame = RequestFrame | ResponseFrame | NotificationFrame;
export interface RequestFrame {
  request: string;
}
export interface ResponseFrame {
  response: string;
  result?: unknown;
  error?: unknown;
}
export interface NotificationFrame {
  notification: string;
  params: unknown;
}

export interface RecordedSession {
  about: string;
  protocolVersion: number;
  frames: RecordedFrame[];
}

export function loadRecording(name = 'draft-session.json'): RecordedSession {
  return JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8')) as RecordedSession;
}

/** An answer instead of the recording: a result, an `Error` (NOT_FOUND), `{ error }`, or a promise of one (held until it settles). */
type Handler = (params: Record<string, unknown>) => unknown;

/**
 * A server that replays a recorded session over the in-memory transport:
 * each method answers with its recorded responses in order (the last one repeats), and the
 * notifications a request set off in the recording (those that arrived after it was sent and
 * before the next request) follow its answer here. `get_events` is answered
 * from the events delivered so far (plus any a test appends), so history loads and resumption
 * after a reconnect behave like the real server's.
 */
export class RecordedPeer {
  readonly requests: Array<{ method: string; params: Record<string, unknown> }> = [];
  /** Events per session, as `get_events` serves them. */
  readonly log = new Map<string, StreamEvent[]>();
  /** Answers a method instead of the recording (return an `Error` to answer with NOT_FOUND, or `{ error }`). */
  readonly handlers = new Map<string, Handler>();
  /**
   * Changes a recorded answer before it is sent (to a result, `{ error }`, or a promise of one);
   * unlike a handler, the notifications the request set off in the recording still follow it.
   */
  readonly adjust = new Map<string, (recorded: unknown, params: Record<string, unknown>) => unknown>();
  /** Connecting fails while set. */
  refuse = false;
  /** When false, recorded notifications are not played after their responses (tests push them step by step). */
  autoplay: boolean;
  private readonly queues = new Map<string, Array<{ index: number; frame: ResponseFrame }>>();
  /** Notifications set off by the n-th request of a method (`method#n`). */
  private readonly following = new Map<string, Array<NotificationFrame>>();
  private readonly served = new Map<string, number>();
  private readonly seen = new Map<string, number>();
  private serverSides: Transport[] = [];

  constructor(recording?: RecordedSession, options: { autoplay?: boolean } = {}) {
    this.autoplay = options.autoplay ?? true;
    const sent = new Map<string, number>();
    let lastRequest = '';
    recording?.frames.forEach((frame, index) => {
      if ('request' in frame) {
        const count = sent.get(frame.request) ?? 0;
        sent.set(frame.request, count + 1);
        lastRequest = `${frame.request}#${count}`;
      } else if ('response' in frame) {
        const queue = this.queues.get(frame.response) ?? [];
        queue.push({ index, frame });
        this.queues.set(frame.response, queue);
      } else {
        const list = this.following.get(lastRequest) ?? [];
        list.push(frame);
        this.following.set(lastRequest, list);
      }
    });
  }

  /** Every recorded notification, in order (for tests that play them one by one). */
  static notifications(recording: RecordedSession, method?: string): NotificationFrame[] {
    return recording.frames.filter(
      (frame): frame is NotificationFrame =>
        'notification' in frame && (method === undefined || frame.notification === method),
    );
  }

  readonly factory: TransportFactory = (context) => {
    if (this.refuse) return Promise.reject(new Error('connection refused'));
    const [client, server] = createInMemoryTransportPair();
    const channel = context.channel ?? 'tui-demo';
    this.serverSides.push(server);
    server.start({ onMessage: (frame) => this.answer(server, channel, frame), onClose: () => {} });
    return Promise.resolve(client);
  };

  /** Pushes a notification to the client (channel events also go into the log). */
  notify(method: string, params: unknown): void {
    this.remember(method, params);
    const server = this.serverSides.at(-1);
    if (!server) throw new Error('No connection to notify.');
    server.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /** Adds events to the log without sending them (what a client misses while it is away). */
  append(event: StreamEvent): void {
    const events = this.log.get(event.sessionId) ?? [];
    events.push(event);
    this.log.set(event.sessionId, events);
  }

  /** Breaks the current connection (the client reconnects). */
  drop(): void {
    this.serverSides.at(-1)?.close(1006, 'dropped');
  }

  count(method: string): number {
    return this.requests.filter((request) => request.method === method).length;
  }

  private remember(method: string, params: unknown): void {
    if (method !== 'channel_message') return;
    const { event } = params as { event: StreamEvent };
    const events = this.log.get(event.sessionId) ?? [];
    if (!events.some((known) => known.seq === event.seq)) events.push(event);
    this.log.set(event.sessionId, events);
  }

  private answer(server: Transport, channel: string, frame: string): void {
    const request = JSON.parse(frame) as { id: number; method: string; params?: Record<string, unknown> };
    const params = request.params ?? {};
    this.requests.push({ method: request.method, params });
    const nth = this.seen.get(request.method) ?? 0;
    this.seen.set(request.method, nth + 1);
    const send = (body: Record<string, unknown>) =>
      server.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, ...body }));
    const custom = this.handlers.get(request.method);
    if (custom) {
      const reply = (value: unknown) => {
        if (value instanceof Error)
          return send({ error: { code: -32001, message: value.message, data: { code: 'NOT_FOUND' } } });
        if (typeof value === 'object' && value !== null && 'error' in value)
          return send(value as Record<string, unknown>);
        return send({ result: value });
      };
      const value = custom(params);
      if (value instanceof Promise) void value.then(reply, reply);
      else reply(value);
      return;
    }
    if (request.method === 'server_info') {
      send({
        result: {
          name: 'parley',
          version: '0.1.0',
          protocolVersion: 1,
          channelId: channel,
          connectionId: String(this.serverSides.length),
          projectRoot: '/home/user/demo-project',
          methods: [],
        },
      });
    } else if (request.method === 'get_events') {
      const afterSeq = typeof params['afterSeq'] === 'number' ? params['afterSeq'] : -1;
      const events = (this.log.get(String(params['sessionId'])) ?? [])
        .filter((event) => event.seq > afterSeq)
        .sort((a, b) => a.seq - b.seq);
      send({ result: { events, lastSeq: events.at(-1)?.seq ?? afterSeq, hasMore: false } });
    } else {
      const queue = this.queues.get(request.method);
      if (!queue || queue.length === 0)
        return send({
          error: {
            code: -32601,
            message: `No recorded answer for ${request.method}.`,
            data: { code: 'METHOD_NOT_FOUND' },
          },
        });
      const served = this.served.get(request.method) ?? 0;
      this.served.set(request.method, served + 1);
      const entry = queue[Math.min(served, queue.length - 1)]!;
      const adjust = this.adjust.get(request.method);
      if (adjust && entry.frame.error === undefined) {
        void Promise.resolve(adjust(entry.frame.result, params)).then((value) => {
          const failed = typeof value === 'object' && value !== null && 'error' in value;
          send(failed ? (value as Record<string, unknown>) : { result: value });
          if (!failed) this.playFollowing(server, `${request.method}#${nth}`);
        });
        return;
      }
      send(entry.frame.error !== undefined ? { error: entry.frame.error } : { result: entry.frame.result });
    }
    this.playFollowing(server, `${request.method}#${nth}`);
  }

  /** What the request set off in the recording follows its answer, once. */
  private playFollowing(server: Transport, request: string): void {
    if (!this.autoplay) return;
    for (const notification of this.following.get(request) ?? []) {
      this.remember(notification.notification, notification.params);
      server.send(JSON.stringify({ jsonrpc: '2.0', method: notification.notification, params: notification.params }));
    }
  }
}
