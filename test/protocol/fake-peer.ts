import { createInMemoryTransportPair, type Transport, type TransportFactory } from '../../src/protocol/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';

/**
 * A small scripted JSON-RPC peer over the in-memory transport, for the client's tests: it answers
 * `server_info`, `subscribe` and `get_events` from an in-memory log, records every request, and
 * lets a test push notifications and drop the link.
 */
export class FakePeer {
  readonly requests: Array<{ connection: number; method: string; params: unknown }> = [];
  readonly log = new Map<string, StreamEvent[]>();
  readonly channels: Array<string | undefined> = [];
  private serverSides: Transport[] = [];
  /** Answers a method instead of the defaults; return undefined to fall through. */
  handler: ((method: string, params: unknown) => unknown) | undefined;
  /** When set, connecting fails. */
  refuse = false;
  /** Requests of these methods get no answer (for timeout tests). */
  readonly silent = new Set<string>();

  readonly factory: TransportFactory = (context) => {
    if (this.refuse) return Promise.reject(new Error('connection refused'));
    const [client, server] = createInMemoryTransportPair();
    const connection = this.serverSides.length;
    const channel = context.channel ?? `channel-${connection}`;
    this.channels.push(context.channel);
    this.serverSides.push(server);
    server.start({
      onMessage: (frame) => this.answer(server, connection, channel, frame),
      onClose: () => {},
    });
    return Promise.resolve(client);
  };

  append(event: StreamEvent): void {
    const events = this.log.get(event.sessionId) ?? [];
    events.push(event);
    this.log.set(event.sessionId, events);
  }

  notify(method: string, params: unknown, connection = this.serverSides.length - 1): void {
    this.serverSides[connection]!.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  sendRaw(frame: string, connection = this.serverSides.length - 1): void {
    this.serverSides[connection]!.send(frame);
  }

  drop(connection = this.serverSides.length - 1): void {
    this.serverSides[connection]!.close(1006, 'dropped');
  }

  get connections(): number {
    return this.serverSides.length;
  }

  private answer(server: Transport, connection: number, channel: string, frame: string): void {
    const request = JSON.parse(frame) as { id: number; method: string; params: Record<string, unknown> };
    this.requests.push({ connection, method: request.method, params: request.params });
    if (this.silent.has(request.method)) return;
    const reply = (body: Record<string, unknown>) =>
      server.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, ...body }));
    const custom = this.handler?.(request.method, request.params);
    if (custom instanceof Error)
      return reply({ error: { code: -32001, message: custom.message, data: { code: 'SESSION_NOT_FOUND' } } });
    if (custom !== undefined) return reply({ result: custom });
    switch (request.method) {
      case 'server_info':
        return reply({
          result: {
            name: 'parley',
            version: '0.1.0',
            protocolVersion: 1,
            channelId: channel,
            connectionId: String(connection),
            projectRoot: '/project',
            methods: [],
          },
        });
      case 'subscribe': {
        const ids = request.params['sessionIds'] as string[] | undefined;
        if (request.params['events'] === false)
          return reply({
            result: { all: false, sessionIds: [], notices: { all: ids === undefined, sessionIds: ids ?? [] } },
          });
        return reply({ result: { all: ids === undefined, sessionIds: ids ?? [] } });
      }
      case 'get_events': {
        const afterSeq = (request.params['afterSeq'] as number | undefined) ?? -1;
        const events = (this.log.get(request.params['sessionId'] as string) ?? []).filter(
          (event) => event.seq > afterSeq,
        );
        const page = events.slice(0, 2);
        const all = this.log.get(request.params['sessionId'] as string) ?? [];
        return reply({
          result: { events: page, lastSeq: all.at(-1)?.seq ?? -1, hasMore: events.length > page.length },
        });
      }
      default:
        return reply({
          error: { code: -32601, message: `Unknown method ${request.method}`, data: { code: 'METHOD_NOT_FOUND' } },
        });
    }
  }
}

export function textDelta(sessionId: string, seq: number, delta = `d${seq}`): StreamEvent {
  return { type: 'text_delta', sessionId, conversationId: 'main', seq, at: 1_000 + seq, blockId: 'b1', delta };
}
