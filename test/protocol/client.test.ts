import { describe, expect, it, vi } from 'vitest';
import {
  ProtocolClient,
  ProtocolClientError,
  RpcError,
  RpcErrorCode,
  type ConnectionState,
  type NotificationParams,
} from '../../src/protocol/index.js';
import { FakePeer, textDelta } from './fake-peer.js';

function waitForState(client: ProtocolClient, state: ConnectionState): Promise<void> {
  if (client.state === state) return Promise.resolve();
  return new Promise((resolve) => {
    const off = client.onStateChange((next) => {
      if (next === state) {
        off();
        resolve();
      }
    });
  });
}

function makeClient(
  peer: FakePeer,
  options: Partial<ConstructorParameters<typeof ProtocolClient>[0]> = {},
): ProtocolClient {
  return new ProtocolClient({
    transport: peer.factory,
    reconnect: { initialDelayMs: 1, maxDelayMs: 5 },
    onError: () => {},
    random: () => 0.5,
    ...options,
  });
}

describe('ProtocolClient', () => {
  it('learns its channel on connect and resolves typed, validated results', async () => {
    const peer = new FakePeer();
    peer.handler = (method) => (method === 'get_draft_status' ? { active: false } : undefined);
    const client = makeClient(peer);
    await client.connect();
    expect(client.state).toBe('connected');
    expect(client.channelId).toBe('channel-0');
    await expect(client.request('get_draft_status')).resolves.toEqual({ active: false });
    client.close();
  });

  it('rebuilds a wire error as an RpcError with its numeric code and stable string code', async () => {
    const peer = new FakePeer();
    peer.handler = (method) => (method === 'get_session' ? new Error('No session "x".') : undefined);
    const client = makeClient(peer);
    await client.connect();
    const error = await client.request('get_session', { sessionId: 'x' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).not.toBeInstanceOf(ProtocolClientError);
    expect((error as RpcError).code).toBe(RpcErrorCode.NOT_FOUND);
    expect((error as RpcError).reason).toBe('SESSION_NOT_FOUND');
    expect((error as RpcError).method).toBe('get_session');
    const unknown = await client.request('list_projects').catch((caught: unknown) => caught);
    expect((unknown as RpcError).codeName).toBe('METHOD_NOT_FOUND');
    client.close();
  });

  it('refuses a result that does not match the method schema with a local INVALID_RESPONSE', async () => {
    const peer = new FakePeer();
    peer.handler = (method) => (method === 'get_draft_status' ? { active: 'yes' } : undefined);
    const client = makeClient(peer);
    await client.connect();
    const error = await client.request('get_draft_status').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolClientError);
    expect((error as ProtocolClientError).code).toBe('INVALID_RESPONSE');
    client.close();
  });

  it('takes a get_events page the schema would return unchanged as it is; the schema completes one with a default missing and refuses one with a malformed event', async () => {
    const event = {
      sessionId: 's',
      conversationId: 'main',
      seq: 0,
      at: 1,
      type: 'block_complete',
      block: { type: 'tool_result', id: 'r', toolUseId: 'c', content: 'ok', isError: true, createdAt: 1 },
    };
    const pages: Record<number, unknown> = {
      0: { events: [event], lastSeq: 0, hasMore: false },
      1: { events: [{ ...event, block: { ...event.block, isError: undefined } }], lastSeq: 0, hasMore: false },
      2: { events: [event, { ...event, seq: -1 }], lastSeq: 1, hasMore: false },
    };
    const peer = new FakePeer();
    peer.handler = (method, params) =>
      method === 'get_events' ? pages[(params as { afterSeq: number }).afterSeq] : undefined;
    const client = makeClient(peer);
    await client.connect();
    await expect(client.request('get_events', { sessionId: 's', afterSeq: 0 })).resolves.toStrictEqual(pages[0]);
    const completed = await client.request('get_events', { sessionId: 's', afterSeq: 1 });
    expect(completed.events[0]).toMatchObject({ block: { isError: false } });
    const error = await client
      .request('get_events', { sessionId: 's', afterSeq: 2 })
      .catch((caught: unknown) => caught);
    expect((error as ProtocolClientError).code).toBe('INVALID_RESPONSE');
    expect((error as ProtocolClientError).message).toMatch(/get_events does not match its schema.*seq/s);
    client.close();
  });

  it('times a request out with a local TIMEOUT error and forgets it', async () => {
    const peer = new FakePeer();
    peer.silent.add('list_projects');
    const client = makeClient(peer);
    await client.connect();
    vi.useFakeTimers();
    try {
      const pending = client.request('list_projects', {}, { timeoutMs: 1_000 }).catch((caught: unknown) => caught);
      await vi.advanceTimersByTimeAsync(1_001);
      const error = await pending;
      expect((error as ProtocolClientError).code).toBe('TIMEOUT');
    } finally {
      vi.useRealTimers();
    }
    client.close();
  });

  it('rejects with ABORTED when the caller aborts', async () => {
    const peer = new FakePeer();
    peer.silent.add('list_projects');
    const client = makeClient(peer);
    await client.connect();
    const controller = new AbortController();
    const pending = client
      .request('list_projects', {}, { signal: controller.signal })
      .catch((caught: unknown) => caught);
    controller.abort();
    expect(((await pending) as ProtocolClientError).code).toBe('ABORTED');
    client.close();
  });

  it('fails a sent request with CONNECTION_CLOSED when the link drops, then reconnects on the same channel', async () => {
    const peer = new FakePeer();
    peer.silent.add('list_projects');
    const client = makeClient(peer);
    const states: ConnectionState[] = [];
    client.onStateChange((state) => states.push(state));
    await client.connect();
    const pending = client.request('list_projects').catch((caught: unknown) => caught);
    await Promise.resolve();
    peer.drop();
    const error = await pending;
    expect((error as ProtocolClientError).code).toBe('CONNECTION_CLOSED');
    await waitForState(client, 'connected');
    expect(states).toEqual(['connecting', 'connected', 'reconnecting', 'connected']);
    expect(peer.channels).toEqual([undefined, 'channel-0']);
    client.close();
    expect(client.state).toBe('disconnected');
  });

  it('queues requests made while reconnecting and sends them in order once connected', async () => {
    const peer = new FakePeer();
    const task = (slug: string) => ({
      project: 'p',
      slug,
      title: 't',
      description: '',
      state: 'open',
      taskDir: `/t/${slug}`,
      createdAt: 'x',
      updatedAt: 'x',
    });
    peer.handler = (method, params) =>
      method === 'list_tasks' ? { tasks: [task((params as { project: string }).project)] } : undefined;
    const client = makeClient(peer);
    await client.connect();
    peer.drop();
    await waitForState(client, 'reconnecting');
    const answers = await Promise.all(['a', 'b', 'c'].map((project) => client.request('list_tasks', { project })));
    expect(answers.map((answer) => answer.tasks[0]!.slug)).toEqual(['a', 'b', 'c']);
    const order = peer.requests.filter((request) => request.connection === 1).map((request) => request.method);
    expect(order).toEqual(['server_info', 'list_tasks', 'list_tasks', 'list_tasks']);
    client.close();
  });

  it('after a reconnect replays what it missed from get_events: nothing missed, nothing doubled, in order', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    const seen: Array<NotificationParams<'channel_message'>> = [];
    client.on('channel_message', (message) => seen.push(message));
    await client.connect();
    for (let seq = 0; seq < 3; seq += 1) {
      peer.append(textDelta('s1', seq));
      peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', seq) });
    }
    // A duplicate of a delivered event is not delivered again.
    peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', 1) });
    await vi.waitFor(() => expect(seen).toHaveLength(3));
    peer.drop();
    for (let seq = 3; seq < 8; seq += 1) peer.append(textDelta('s1', seq));
    // While the replay runs, live events arrive: one already in the replay, one after it.
    let pushed = false;
    peer.handler = (method) => {
      if (method === 'get_events' && !pushed) {
        pushed = true;
        peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', 5) });
        peer.append(textDelta('s1', 8));
        peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', 8) });
      }
      return undefined;
    };
    await waitForState(client, 'connected');
    await vi.waitFor(() => expect(seen).toHaveLength(9));
    expect(seen.map((message) => message.event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(seen.every((message) => message.channelId === 'channel-0')).toBe(true);
    expect(client.lastSeq('s1')).toBe(8);
    const replays = peer.requests
      .filter((request) => request.method === 'get_events')
      .map((request) => (request.params as { afterSeq: number }).afterSeq);
    expect(replays).toEqual([2, 4, 6]);
    client.close();
  });

  it('holds live events that arrive before the replay (even before the handshake ends) and delivers them after it', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    const seen: string[] = [];
    client.on('channel_message', (message) => seen.push(`event ${message.event.seq}`));
    client.on('draft_status', (status) => seen.push(`status ${status.turnCount}`));
    await client.connect();
    peer.append(textDelta('s1', 0));
    peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', 0) });
    await vi.waitFor(() => expect(seen).toEqual(['event 0']));
    peer.drop();
    for (let seq = 1; seq < 4; seq += 1) peer.append(textDelta('s1', seq));
    peer.handler = (method) => {
      if (method === 'server_info' && peer.connections === 2) {
        // The server already streams to the new connection before it answered anything.
        peer.append(textDelta('s1', 4));
        peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's1', event: textDelta('s1', 4) });
        peer.notify('draft_status', {
          sessionId: 's1',
          role: 'dev',
          turnCount: 1,
          costUsd: 0,
          contextPct: null,
          lastActivity: 'now',
        });
      }
      return undefined;
    };
    await waitForState(client, 'connected');
    await vi.waitFor(() => expect(seen).toHaveLength(6));
    expect(seen).toEqual(['event 0', 'event 1', 'event 2', 'event 3', 'event 4', 'status 1']);
    client.close();
  });

  it("follows a new draft's session from its start, so a drop before its first event still resumes it", async () => {
    const peer = new FakePeer();
    peer.handler = (method) => (method === 'draft' ? { sessionId: 's9', taskSlug: 't', project: 'p' } : undefined);
    const client = makeClient(peer);
    const seen: number[] = [];
    client.on('channel_message', (message) => seen.push(message.event.seq));
    await client.connect();
    await client.request('draft', { role: 'dev', project: 'p', task: 't' });
    peer.drop();
    for (let seq = 0; seq < 3; seq += 1) peer.append(textDelta('s9', seq));
    await waitForState(client, 'connected');
    await vi.waitFor(() => expect(seen).toEqual([0, 1, 2]));
    expect(peer.requests.find((request) => request.method === 'get_events')?.params).toEqual({
      sessionId: 's9',
      afterSeq: -1,
    });
    client.close();
  });

  it('renews its subscriptions before replaying after a reconnect', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    const seen: number[] = [];
    client.on('session_event', (message) => seen.push(message.event.seq));
    await client.connect();
    await client.subscribe(['s2']);
    peer.append(textDelta('s2', 0));
    peer.notify('session_event', { sessionId: 's2', event: textDelta('s2', 0) });
    await vi.waitFor(() => expect(seen).toEqual([0]));
    peer.drop();
    peer.append(textDelta('s2', 1));
    await waitForState(client, 'connected');
    await vi.waitFor(() => expect(seen).toEqual([0, 1]));
    const second = peer.requests.filter((request) => request.connection === 1).map((request) => request.method);
    expect(second).toEqual(['server_info', 'subscribe', 'get_events']);
    expect(peer.requests.find((request) => request.connection === 1 && request.method === 'subscribe')!.params).toEqual(
      { sessionIds: ['s2'] },
    );
    client.close();
  });

  it('renews a notices-only subscription as one after a reconnect', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    await client.connect();
    const result = await client.subscribe(['s3'], { events: false });
    expect(result.notices).toEqual({ all: false, sessionIds: ['s3'] });
    expect(peer.requests.find((request) => request.method === 'subscribe')!.params).toEqual({
      sessionIds: ['s3'],
      events: false,
    });
    peer.drop();
    await waitForState(client, 'connected');
    await vi.waitFor(() =>
      expect(
        peer.requests.filter((request) => request.connection === 1 && request.method === 'subscribe'),
      ).toHaveLength(1),
    );
    expect(peer.requests.find((request) => request.connection === 1 && request.method === 'subscribe')!.params).toEqual(
      { sessionIds: ['s3'], events: false },
    );
    client.close();
  });

  it('resumeFrom skips history the caller already loaded', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    const seen: number[] = [];
    client.on('channel_message', (message) => seen.push(message.event.seq));
    await client.connect();
    client.resumeFrom('channel_message', 's3', 4, 'channel-0');
    peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's3', event: textDelta('s3', 4) });
    peer.notify('channel_message', { channelId: 'channel-0', sessionId: 's3', event: textDelta('s3', 5) });
    await vi.waitFor(() => expect(seen).toEqual([5]));
    client.close();
  });

  it('reports a malformed notification instead of delivering it, and keeps working', async () => {
    const peer = new FakePeer();
    const errors: unknown[] = [];
    const client = makeClient(peer, { onError: (error) => errors.push(error) });
    const statuses: unknown[] = [];
    client.on('draft_status', (status) => statuses.push(status));
    await client.connect();
    peer.notify('draft_status', { sessionId: 's', role: 'dev' });
    peer.sendRaw('not json');
    peer.notify('draft_status', {
      sessionId: 's',
      role: 'dev',
      turnCount: 1,
      costUsd: 0,
      contextPct: null,
      lastActivity: '2026-01-01T00:00:00.000Z',
    });
    await vi.waitFor(() => expect(statuses).toHaveLength(1));
    expect(errors).toHaveLength(2);
    expect(errors.every((error) => error instanceof ProtocolClientError && error.code === 'INVALID_RESPONSE')).toBe(
      true,
    );
    client.close();
  });

  it('rejects connect with CONNECT_FAILED when the server cannot be reached', async () => {
    const peer = new FakePeer();
    peer.refuse = true;
    const client = makeClient(peer);
    const error = await client.connect().catch((caught: unknown) => caught);
    expect((error as ProtocolClientError).code).toBe('CONNECT_FAILED');
    expect(client.state).toBe('disconnected');
  });

  it('gives up after maxAttempts: queued requests fail and the state is disconnected', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer, { reconnect: { initialDelayMs: 1, maxDelayMs: 2, maxAttempts: 2 } });
    await client.connect();
    peer.refuse = true;
    peer.drop();
    await waitForState(client, 'reconnecting');
    const queued = client.request('list_projects').catch((caught: unknown) => caught);
    await waitForState(client, 'disconnected');
    expect(((await queued) as ProtocolClientError).code).toBe('CONNECTION_CLOSED');
  });

  it('a closed client refuses new requests with CONNECTION_CLOSED', async () => {
    const peer = new FakePeer();
    const client = makeClient(peer);
    await client.connect();
    client.close();
    const error = await client.request('server_info').catch((caught: unknown) => caught);
    expect((error as ProtocolClientError).code).toBe('CONNECTION_CLOSED');
    expect(peer.connections).toBe(1);
  });
});
