import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SessionUpdateThrottle } from '../../src/server/update-throttle.js';
import type { SessionManagerEvents, SessionUpdateAction } from '../../src/sessions/index.js';

type Update = SessionManagerEvents['session:updated'];

function update(sessionId: string, action: SessionUpdateAction, totalMessages: number): Update {
  return { sessionId, action, session: { sessionId, stats: { totalMessages } } as unknown as Update['session'] };
}

describe('SessionUpdateThrottle', () => {
  let clock = 0;
  let sent: Array<[string, string, number]>;
  let throttle: SessionUpdateThrottle;
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 1_000;
    sent = [];
    throttle = new SessionUpdateThrottle(
      (value) => sent.push([value.sessionId, value.action, value.session.stats.totalMessages]),
      250,
      () => clock,
    );
  });
  afterEach(() => {
    throttle.close();
    vi.useRealTimers();
  });
  const advance = (ms: number) => {
    clock += ms;
    vi.advanceTimersByTime(ms);
  };

  it('sends the first update of appended events at once and then the newest at most once per interval', () => {
    throttle.offer(update('a', 'events_appended', 1));
    expect(sent).toEqual([['a', 'events_appended', 1]]);
    for (let index = 2; index <= 50; index++) {
      throttle.offer(update('a', 'events_appended', index));
      advance(2);
    }
    expect(sent).toHaveLength(1);
    advance(250);
    expect(sent).toEqual([
      ['a', 'events_appended', 1],
      ['a', 'events_appended', 50],
    ]);
    advance(1_000);
    expect(sent).toHaveLength(2);
  });

  it('sends any other update at once, and it replaces a waiting one', () => {
    throttle.offer(update('a', 'events_appended', 1));
    throttle.offer(update('a', 'events_appended', 2));
    throttle.offer(update('a', 'archived', 2));
    advance(1_000);
    expect(sent).toEqual([
      ['a', 'events_appended', 1],
      ['a', 'archived', 2],
    ]);
  });

  it('keeps sessions apart', () => {
    throttle.offer(update('a', 'events_appended', 1));
    throttle.offer(update('b', 'events_appended', 1));
    throttle.offer(update('a', 'events_appended', 2));
    expect(sent.map(([sessionId]) => sessionId)).toEqual(['a', 'b']);
    advance(250);
    expect(sent.map(([sessionId, , total]) => `${sessionId}${total}`)).toEqual(['a1', 'b1', 'a2']);
  });

  it('sends nothing after close', () => {
    throttle.offer(update('a', 'events_appended', 1));
    throttle.offer(update('a', 'events_appended', 2));
    throttle.close();
    advance(1_000);
    expect(sent).toHaveLength(1);
  });
});
