import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WriteBatch } from '../../src/server/write-batch.js';

/** A stream that records each system-call-sized write: one entry per `_writev`/`_write`, with its chunks. */
function recordingStream(): { stream: Writable; writes: string[][] } {
  const writes: string[][] = [];
  const stream = new Writable({
    writev(chunks, done) {
      writes.push(chunks.map(({ chunk }) => String(chunk)));
      done();
    },
    write(chunk, _encoding, done) {
      writes.push([String(chunk)]);
      done();
    },
  });
  return { stream, writes };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WriteBatch', () => {
  it('holds what one turn writes to a stream and lets it go as one write, in order, after the turn', async () => {
    const batch = new WriteBatch();
    const { stream, writes } = recordingStream();
    for (const frame of ['a', 'b', 'c']) {
      batch.hold(stream);
      stream.write(frame);
    }
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('corks each stream once per turn and batches every stream written to', async () => {
    const batch = new WriteBatch();
    const first = recordingStream();
    const second = recordingStream();
    batch.hold(first.stream);
    batch.hold(first.stream);
    batch.hold(second.stream);
    expect(first.stream.writableCorked).toBe(1);
    first.stream.write('1');
    second.stream.write('2');
    second.stream.write('3');
    await nextTurn();
    expect(first.writes).toEqual([['1']]);
    expect(second.writes).toEqual([['2', '3']]);
  });

  it('a write in a later turn is a batch of its own', async () => {
    const batch = new WriteBatch();
    const { stream, writes } = recordingStream();
    batch.hold(stream);
    stream.write('first');
    await nextTurn();
    batch.hold(stream);
    stream.write('second');
    await nextTurn();
    expect(writes).toEqual([['first'], ['second']]);
  });

  it('flush lets held writes go at once (before a socket is destroyed)', () => {
    const batch = new WriteBatch();
    const { stream, writes } = recordingStream();
    batch.hold(stream);
    stream.write('last');
    batch.flush();
    expect(writes).toEqual([['last']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('release lets one stream write now and keeps the others held', async () => {
    const batch = new WriteBatch();
    const released = recordingStream();
    const kept = recordingStream();
    batch.hold(released.stream);
    batch.hold(kept.stream);
    released.stream.write('now');
    kept.stream.write('later');
    batch.release(released.stream);
    expect(released.writes).toEqual([['now']]);
    expect(kept.writes).toEqual([]);
    await nextTurn();
    expect(kept.writes).toEqual([['later']]);
  });

  it('a nested cork (the WebSocket corks around each frame) stays inside the batch', async () => {
    const batch = new WriteBatch();
    const { stream, writes } = recordingStream();
    batch.hold(stream);
    stream.cork();
    stream.write('header');
    stream.write('payload');
    stream.uncork();
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['header', 'payload']]);
  });
});
