import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { Connection, Hub } from '../../src/server/hub.js';

/**
 * A connection over a stream standing in for the TCP socket: `accepting` says whether the peer
 * takes what is written (a write completes at once) or stalls (it never completes). The stand-in
 * WebSocket writes each frame to the stream and reports its unsent bytes, as `ws` does.
 */
function connectionOver(accepting: boolean): { connection: Connection; writes: string[][] } {
  const writes: string[][] = [];
  const stream = new Writable({
    highWaterMark: 1,
    writev(chunks, done) {
      writes.push(chunks.map(({ chunk }) => String(chunk)));
      if (accepting) done();
    },
    write(chunk, _encoding, done) {
      writes.push([String(chunk)]);
      if (accepting) done();
    },
  });
  const socket = {
    OPEN: 1,
    readyState: 1,
    get bufferedAmount() {
      return stream.writableLength;
    },
    send(frame: Buffer | string) {
      stream.write(frame);
    },
  };
  return {
    connection: new Connection('connection', 'channel', socket as unknown as WebSocket, undefined, stream),
    writes,
  };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Hub writes', () => {
  it('sends what one turn writes to a connection as one write, in order', async () => {
    const hub = new Hub({ maxBufferedBytes: 1 << 20 });
    const { connection, writes } = connectionOver(true);
    hub.add(connection);
    hub.write(connection, 'one');
    hub.write(connection, 'two');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['one', 'two']]);
  });

  it('a burst in one turn past the limit is not taken for a slow client when the client keeps up', async () => {
    const slow: Connection[] = [];
    const hub = new Hub({ maxBufferedBytes: 10, onSlowConnection: (connection) => slow.push(connection) });
    const { connection, writes } = connectionOver(true);
    hub.add(connection);
    const frames = Array.from({ length: 10 }, (_, index) => `frame-${index}`);
    for (const frame of frames) hub.write(connection, frame);
    await nextTurn();
    expect(slow).toEqual([]);
    expect(writes.flat()).toEqual(frames);
  });

  it('a client that takes nothing is disconnected once its unsent bytes pass the limit', async () => {
    const slow: Connection[] = [];
    const hub = new Hub({ maxBufferedBytes: 10, onSlowConnection: (connection) => slow.push(connection) });
    const { connection } = connectionOver(false);
    hub.add(connection);
    for (let index = 0; index < 10; index += 1) hub.write(connection, `frame-${index}`);
    await nextTurn();
    expect(slow).toEqual([connection]);
    expect(connection.closed).toBe(true);
  });

  it('flush sends what the turn holds at once', () => {
    const hub = new Hub({ maxBufferedBytes: 1 << 20 });
    const { connection, writes } = connectionOver(true);
    hub.add(connection);
    hub.write(connection, 'last words');
    hub.flush();
    expect(writes).toEqual([['last words']]);
  });
});

describe('Hub followers', () => {
  const delivered = (writes: string[][]) =>
    writes.flat().map((frame) => (JSON.parse(frame) as { method: string }).method);
  const event = {
    sessionId: 's1',
    event: { type: 'text_delta', sessionId: 's1', conversationId: 'main', seq: 0, at: 0, blockId: 'b', delta: 'x' },
  } as never;
  const updated = { sessionId: 's1' } as never;

  it('a notices-only follower gets notices but no session_event; one with events gets both, once', async () => {
    const hub = new Hub({ maxBufferedBytes: 1 << 20 });
    const quiet = connectionOver(true);
    const full = connectionOver(true);
    const both = connectionOver(true);
    for (const { connection } of [quiet, full, both]) hub.add(connection);
    hub.subscribe(quiet.connection, ['s1'], false);
    hub.subscribe(full.connection, ['s1']);
    hub.subscribe(both.connection, undefined, false);
    hub.subscribe(both.connection, ['s1']);
    expect(hub.hasFollowers('s1')).toBe(true);
    hub.toFollowers('s1', 'session_event', event);
    hub.toFollowers('s1', 'session_updated', updated);
    await nextTurn();
    expect(delivered(quiet.writes)).toEqual(['session_updated']);
    expect(delivered(full.writes)).toEqual(['session_event', 'session_updated']);
    expect(delivered(both.writes)).toEqual(['session_event', 'session_updated']);
  });

  it("asking for notices only does not take a session's events away; asking for events moves it up; unsubscribe ends both", () => {
    const hub = new Hub({ maxBufferedBytes: 1 << 20 });
    const { connection } = connectionOver(true);
    hub.add(connection);
    hub.subscribe(connection, ['s1']);
    hub.subscribe(connection, ['s1', 's2'], false);
    expect([...connection.subscriptions.sessionIds]).toEqual(['s1']);
    expect([...connection.subscriptions.notices.sessionIds]).toEqual(['s2']);
    hub.subscribe(connection, ['s2']);
    expect([...connection.subscriptions.sessionIds]).toEqual(['s1', 's2']);
    expect([...connection.subscriptions.notices.sessionIds]).toEqual([]);
    hub.subscribe(connection, undefined, false);
    hub.unsubscribe(connection);
    expect(connection.subscriptions).toEqual({
      all: false,
      sessionIds: new Set(),
      notices: { all: false, sessionIds: new Set() },
    });
    expect(hub.hasFollowers('s1')).toBe(false);
  });
});
