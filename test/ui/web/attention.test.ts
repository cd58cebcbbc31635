import { describe, expect, it } from 'vitest';
import type { AttentionNeeded } from '../../../src/protocol/index.js';
import { AttentionNotifications, parseRoute, type AttentionEnvironment } from '../../../src/ui/web/attention.js';

function fakeEnvironment(state: { hidden: boolean; permission: NotificationPermission | undefined; hash?: string }) {
  const shown: Array<{ title: string; body: string; tag: string; click: () => void }> = [];
  const gestures: Array<() => void> = [];
  const hashListeners: Array<() => void> = [];
  let requested = 0;
  let hash = state.hash ?? '';
  const environment: AttentionEnvironment = {
    hidden: () => state.hidden,
    permission: () => state.permission,
    requestPermission: async () => {
      requested++;
      state.permission = 'granted';
      return 'granted';
    },
    show: (title, options, onClick) => shown.push({ title, ...options, click: onClick }),
    onFirstGesture: (listener) => gestures.push(listener),
    hash: () => hash,
    onHashChange: (listener) => hashListeners.push(listener),
    setHash: (value) => {
      hash = value;
      for (const listener of hashListeners) listener();
    },
    focus: () => undefined,
  };
  return { environment, shown, gestures, requests: () => requested };
}

function fakeClient() {
  let handler: ((params: AttentionNeeded) => void) | undefined;
  return {
    on: ((name: string, listener: (params: AttentionNeeded) => void) => {
      if (name === 'attention_needed') handler = listener;
      return () => (handler = undefined);
    }) as never,
    send: (params: AttentionNeeded) => handler?.(params),
  };
}

const approval: AttentionNeeded = {
  kind: 'permission_request',
  title: 'Approval needed: Run `npm test`',
  message: 'dev wants to run `npm test`.',
  items: [
    {
      key: 'permission:s1:r1',
      kind: 'permission_request',
      title: 'Approval needed: Run `npm test`',
      message: 'dev wants to run `npm test`.',
      who: 'dev',
      where: 'demo / login',
      sessionId: 's1',
      route: '#approval=s1/r1',
    },
  ],
};

describe('web UI notifications', () => {
  it('asks permission on the first gesture, shows a notification only while hidden, and a click opens the session', () => {
    const state = { hidden: false, permission: 'default' as NotificationPermission | undefined };
    const { environment, shown, gestures, requests } = fakeEnvironment(state);
    const client = fakeClient();
    const opened: string[] = [];
    new AttentionNotifications({ client, environment, openSession: (id) => opened.push(id) }).start();
    expect(requests()).toBe(0);
    gestures[0]!();
    expect(requests()).toBe(1);

    client.send(approval);
    expect(shown).toEqual([]);
    state.hidden = true;
    client.send(approval);
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({ title: approval.title, body: approval.message, tag: 'permission:s1:r1' });
    shown[0]!.click();
    expect(opened).toEqual(['s1']);
    // The same link clicked again opens it again, though the fragment did not change.
    shown[0]!.click();
    expect(opened).toEqual(['s1', 's1']);
  });

  it('shows nothing where the browser refused or has no notifications', () => {
    for (const permission of ['denied', undefined] as const) {
      const { environment, shown, gestures } = fakeEnvironment({ hidden: true, permission });
      const client = fakeClient();
      new AttentionNotifications({ client, environment, openSession: () => undefined }).start();
      client.send(approval);
      expect(shown).toEqual([]);
      expect(gestures).toEqual([]);
    }
  });

  it("opens a link's fragment when the page loads", () => {
    const { environment } = fakeEnvironment({ hidden: false, permission: 'granted', hash: '#session=abc%2F1' });
    const opened: string[] = [];
    const runs: string[] = [];
    new AttentionNotifications({
      client: fakeClient(),
      environment,
      openSession: (id) => opened.push(id),
      openRun: (id) => runs.push(id),
    }).start();
    expect(opened).toEqual(['abc/1']);
    environment.setHash('#run=run-7');
    expect(runs).toEqual(['run-7']);
  });

  it('reads routes, and nothing else', () => {
    expect(parseRoute('#approval=s%201/r1')).toEqual({ kind: 'approval', sessionId: 's 1', requestId: 'r1' });
    expect(parseRoute('#session=s1')).toEqual({ kind: 'session', sessionId: 's1' });
    expect(parseRoute('#approval=s1')).toBeUndefined();
    expect(parseRoute('#token=abc')).toBeUndefined();
    expect(parseRoute('#session=%E0%A4%A')).toBeUndefined();
  });
});
