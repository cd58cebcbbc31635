import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type WebSocket from 'ws';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import {
  ProtocolClientError,
  RpcError,
  RpcErrorCode,
  ServerFileSchema,
  type NotificationParams,
  type ProtocolClient,
} from '../../src/protocol/index.js';
import { collect, gate, rawCall, startTestServer, upgradeStatus, type TestServer } from './helpers.js';

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

let project = '';

async function setup(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  harness = await startTestServer(options);
  project = harness.project;
  return harness;
}

function errorOf(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => {
      if (!(error instanceof RpcError)) throw error;
      return error;
    },
  );
}

/** Collects the channel's events until a `draft_status` says the turn ended. */
function turnEvents(client: ProtocolClient): {
  events: StreamEvent[];
  done: Promise<NotificationParams<'draft_status'>>;
} {
  const events: StreamEvent[] = [];
  client.on('channel_message', (message) => events.push(message.event));
  const done = new Promise<NotificationParams<'draft_status'>>((resolve) => {
    const off = client.on('draft_status', (status) => {
      off();
      resolve(status);
    });
  });
  return { events, done };
}

describe('parley serve: start, server.json, token', () => {
  it('writes server.json and the token with mode 0600, reuses the token after a restart and removes server.json on close', async () => {
    const { dataDir, server } = await setup();
    const file = ServerFileSchema.parse(JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')));
    expect(file).toMatchObject({
      port: server.port,
      token: server.token,
      pid: process.pid,
      wsUrl: server.wsUrl,
      host: '127.0.0.1',
    });
    expect(file.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
    expect((await stat(join(dataDir, 'server.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'token'))).mode & 0o777).toBe(0o600);
    const token = server.token;
    await harness!.restart();
    expect(harness!.server.token).toBe(token);
    await harness!.server.close();
    await expect(stat(join(dataDir, 'server.json'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe("the web UI's files", () => {
  it('are served from the web root, without a way out of it', async () => {
    const webRoot = await mkdtemp(join(tmpdir(), 'parley-web-'));
    await writeFile(join(webRoot, 'index.html'), '<!doctype html><title>Parley</title>');
    await writeFile(join(webRoot, 'app.js'), 'console.log(1)');
    await writeFile(join(webRoot, '..', `${webRoot.split('/').at(-1)}-secret.txt`), 'secret');
    try {
      const { server } = await setup({ webRoot });
      const base = `http://127.0.0.1:${server.port}`;
      const index = await fetch(`${base}/?token=${server.token}`);
      expect(index.status).toBe(200);
      expect(index.headers.get('content-type')).toContain('text/html');
      expect(await index.text()).toContain('<title>Parley</title>');
      const script = await fetch(`${base}/app.js`);
      expect(script.headers.get('content-type')).toContain('javascript');
      expect((await fetch(`${base}/missing.js`)).status).toBe(404);
      for (const path of [
        `/../${webRoot.split('/').at(-1)}-secret.txt`,
        `/%2e%2e/${webRoot.split('/').at(-1)}-secret.txt`,
        '/%2e%2e%2fetc%2fpasswd',
        '/..%5c..%5cetc',
      ]) {
        const response = await fetch(`${base}${path}`);
        expect([400, 404], path).toContain(response.status);
        expect(await response.text()).not.toContain('secret');
      }
      expect((await fetch(`${base}/rpc`)).status).toBe(426);
      expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405);
    } finally {
      await rm(webRoot, { recursive: true, force: true });
      await rm(`${webRoot}-secret.txt`, { force: true });
    }
  });
});

describe('security of the upgrade', () => {
  it('refuses a missing or wrong token with 401, takes a Bearer header or the query parameter', async () => {
    const { server } = await setup();
    expect(await upgradeStatus(server.wsUrl)).toBe(401);
    expect(await upgradeStatus(`${server.wsUrl}?token=${'0'.repeat(64)}`)).toBe(401);
    expect(await upgradeStatus(server.wsUrl, { Authorization: 'Bearer wrong' })).toBe(401);
    expect(await upgradeStatus(server.wsUrl, { Authorization: `Bearer ${server.token}` })).toBe(101);
    expect(await upgradeStatus(`${server.wsUrl}?token=${server.token}`)).toBe(101);
  });

  it("refuses a foreign browser origin with 403 and accepts the server's own", async () => {
    const { server } = await setup();
    const url = `${server.wsUrl}?token=${server.token}`;
    expect(await upgradeStatus(url, { Origin: 'http://evil.example' })).toBe(403);
    expect(await upgradeStatus(url, { Origin: `http://127.0.0.1:${server.port + 1}` })).toBe(403);
    expect(await upgradeStatus(url, { Origin: `http://127.0.0.1:${server.port}` })).toBe(101);
    expect(await upgradeStatus(url, { Origin: `http://localhost:${server.port}` })).toBe(101);
  });

  it('refuses other paths (404) and a channel that is not a valid id (400)', async () => {
    const { server } = await setup();
    expect(await upgradeStatus(`ws://127.0.0.1:${server.port}/other?token=${server.token}`)).toBe(404);
    expect(await upgradeStatus(`${server.wsUrl}?token=${server.token}&channel=${encodeURIComponent('../x')}`)).toBe(
      400,
    );
  });

  it('closes a connection that sends a frame over the size limit with 1009, and keeps serving others', async () => {
    const test = await setup({ maxMessageBytes: 64 * 1024 });
    const big = await test.raw();
    const other = await test.client();
    const closed = new Promise<number>((resolve) => big.once('close', (code) => resolve(code)));
    big.send(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'submit_prompt', params: { content: 'x'.repeat(65 * 1024) } }),
    );
    expect(await closed).toBe(1009);
    await expect(other.request('server_info')).resolves.toMatchObject({ name: 'parley' });
  });

  it('answers requests over the rate with RATE_LIMITED errors, not a crash, and recovers', async () => {
    const test = await setup({ rateLimit: { capacity: 5, perSecond: 1 } });
    const socket = await test.raw();
    const answers = collect(socket, 8);
    for (let id = 1; id <= 8; id += 1) socket.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'server_info' }));
    const results = (await answers) as Array<{
      id: number;
      result?: unknown;
      error?: { code: number; data: { retryAfterMs: number } };
    }>;
    expect(results.filter((answer) => answer.result !== undefined)).toHaveLength(5);
    const limited = results.filter((answer) => answer.error?.code === RpcErrorCode.RATE_LIMITED);
    expect(limited).toHaveLength(3);
    expect(limited[0]!.error!.data.retryAfterMs).toBeGreaterThan(0);
    // Another connection has its own bucket.
    const other = await test.client();
    await expect(other.request('server_info')).resolves.toMatchObject({ name: 'parley' });
  });
});

describe('JSON-RPC errors', () => {
  it('answers malformed frames, envelopes, unknown methods and bad params with the standard codes', async () => {
    const socket = await (await setup()).raw();
    const parse = await rawCall(socket, '{"jsonrpc":');
    expect(parse).toMatchObject({ id: null, error: { code: -32700 } });
    expect(await rawCall(socket, JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'server_info' }))).toMatchObject({
      id: 1,
      error: { code: -32600 },
    });
    expect(
      await rawCall(socket, JSON.stringify({ jsonrpc: '2.0', id: { a: 1 }, method: 'server_info' })),
    ).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await rawCall(socket, '[]')).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await rawCall(socket, '42')).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await rawCall(socket, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'nope' }))).toMatchObject({
      id: 2,
      error: { code: -32601, data: { method: 'nope' } },
    });
    const bad = (await rawCall(
      socket,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'get_events',
        params: { sessionId: '../../etc', afterSeq: 'x' },
      }),
    )) as {
      error: { code: number; message: string; data: { issues: string[] } };
    };
    expect(bad.error.code).toBe(-32602);
    expect(bad.error.data.issues.some((issue) => issue.startsWith('sessionId:'))).toBe(true);
    expect(bad.error.data.issues.some((issue) => issue.startsWith('afterSeq:'))).toBe(true);
    expect(bad.error.message).toContain('get_events');
    expect(
      await rawCall(socket, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'server_info', params: [1] })),
    ).toMatchObject({ id: 4, error: { code: -32602 } });
    expect(
      await rawCall(socket, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'undraft', params: { extra: true } })),
    ).toMatchObject({ id: 5, error: { code: -32602 } });
  });

  it('answers a batch with one answer per request and none for a notification', async () => {
    const socket = await (await setup()).raw();
    const answer = await rawCall(
      socket,
      JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'server_info' },
        { jsonrpc: '2.0', method: 'server_info' },
        { jsonrpc: '2.0', id: 'b', method: 'nope' },
      ]),
    );
    expect(Array.isArray(answer)).toBe(true);
    const answers = answer as unknown as Array<{ id: string; result?: unknown; error?: { code: number } }>;
    expect(answers.map((entry) => entry.id)).toEqual(['a', 'b']);
    expect(answers[1]!.error!.code).toBe(-32601);
  });

  it('maps typed errors to their codes: NOT_FOUND, NO_ACTIVE_DRAFT, DRAFT_ALREADY_ACTIVE, INVALID_STATE, UNSUPPORTED', async () => {
    const test = await setup();
    const client = await test.client();
    const missing = await errorOf(client.request('get_session', { sessionId: 'no-such-session' }));
    expect(missing.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(missing.reason).toBe('SESSION_NOT_FOUND');
    expect(missing.message).toContain('no-such-session');
    expect((await errorOf(client.request('undraft'))).code).toBe(-32005);
    expect(await client.request('cancel')).toEqual({ cancelled: false });
    expect((await errorOf(client.request('draft', { role: 'dev', project, task: 'no-task' }))).code).toBe(
      RpcErrorCode.NOT_FOUND,
    );
    expect((await errorOf(client.request('draft', { role: 'nobody', project, task: 'first-task' }))).code).toBe(
      RpcErrorCode.NOT_FOUND,
    );
    await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const twice = await errorOf(client.request('draft', { role: 'qa', project, task: 'first-task' }));
    expect(twice.code).toBe(-32004);
    expect(twice.reason).toBe('DRAFT_ALREADY_ACTIVE');
    const { sessionId } = (await client.request('get_draft_status')).session!;
    const notAWorker = await errorOf(client.request('kill_agent', { agentId: sessionId }));
    expect(notAWorker.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(notAWorker.message).toContain('undraft');
    await client.request('archive_session', { sessionId });
    const archived = await errorOf(client.request('clear_messages', { sessionId }));
    expect(archived.code).toBe(RpcErrorCode.INVALID_STATE);
    expect(archived.reason).toBe('SESSION_ARCHIVED');
  });
});

describe('drafts over the wire (seed 000)', () => {
  it('draft, submit_prompt streams channel_message events the reducer rebuilds, draft_status after the turn, undraft', async () => {
    const test = await setup();
    const client = await test.client();
    const drafted = await client.request('draft', { role: 'product-analyst', project, task: 'first-task' });
    expect(drafted).toMatchObject({ taskSlug: 'first-task', project });
    const status = await client.request('get_draft_status');
    expect(status).toMatchObject({
      active: true,
      session: { sessionId: drafted.sessionId, role: 'product-analyst', turnCount: 0 },
    });
    const { events, done } = turnEvents(client);
    const accepted = await client.request('submit_prompt', { content: 'Hello there' });
    expect(accepted).toEqual({
      mode: 'draft',
      accepted: true,
      sessionId: drafted.sessionId,
      seq: expect.any(Number) as number,
    });
    const finished = await done;
    expect(finished).toMatchObject({
      sessionId: drafted.sessionId,
      role: 'product-analyst',
      turnCount: 1,
      channelId: client.channelId,
    });
    await vi.waitFor(async () => {
      const log = await client.request('get_events', { sessionId: drafted.sessionId });
      expect(events.map((event) => event.seq)).toEqual(log.events.map((event) => event.seq));
    });
    const conversation = applyEvents(emptyConversation(drafted.sessionId), events);
    expect(conversation.blocks.map((block) => block.type)).toEqual(['user_message', 'assistant_text']);
    expect(conversation.blocks[1]).toMatchObject({ content: 'Echo: Hello there' });
    const summary = await client.request('undraft');
    expect(summary).toMatchObject({ sessionId: drafted.sessionId, taskSlug: 'first-task', turns: 1, cost: 0 });
    expect(await client.request('get_draft_status')).toEqual({ active: false });
  });

  it('submit_prompt without a draft takes the dispatch path and answers with the structured result', async () => {
    const client = await (await setup()).client();
    const answer = await client.request('submit_prompt', { content: 'do it', role: 'dev' });
    expect(answer.mode).toBe('dispatch');
    if (answer.mode !== 'dispatch') return;
    expect(answer.result).toMatchObject({
      role: 'dev',
      status: 'completed',
      timedOut: false,
      sessionId: answer.sessionId,
    });
    // The scripted back end answers an output schema with a sample of it; the draft layer parsed it.
    expect(answer.result.output).toMatchObject({
      status: expect.any(String) as string,
      summary: expect.any(String) as string,
    });
    const session = await client.request('get_session', { sessionId: answer.sessionId });
    expect(session.lastSeq).toBeGreaterThan(0);
  });

  it('a second submit_prompt while the turn runs is TURN_IN_PROGRESS; cancel ends the turn cleanly', async () => {
    const test = await setup();
    const hold = gate();
    test.backend.enqueue([step.text('partial answer'), step.wait(hold.promise), step.text('never')]);
    const client = await test.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const { events, done } = turnEvents(client);
    await client.request('submit_prompt', { content: 'long job' });
    await vi.waitFor(() => expect(events.some((event) => event.type === 'text_delta')).toBe(true));
    expect((await errorOf(client.request('submit_prompt', { content: 'again' }))).code).toBe(-32006);
    expect(await client.request('cancel')).toEqual({ cancelled: true });
    await done;
    const conversation = applyEvents(
      emptyConversation(sessionId),
      (await client.request('get_events', { sessionId })).events,
    );
    expect(conversation.blocks.some((block) => block.type === 'system' && block.subtype === 'aborted')).toBe(true);
    expect(JSON.stringify(conversation.blocks)).not.toContain('never');
    hold.open();
  });

  it('a session the back end cannot resume: draft_closed is pushed, the channel leaves draft mode, the history stays readable', async () => {
    const test = await setup();
    test.backend.enqueue([step.error('No conversation found with that session id.', { code: 'RESUME_FAILED' })]);
    const client = await test.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const closed = new Promise<NotificationParams<'draft_closed'>>((resolve) => client.on('draft_closed', resolve));
    await client.request('submit_prompt', { content: 'Continue where we left off' });
    expect(await closed).toMatchObject({ channelId: client.channelId, sessionId, reason: 'native_resume_failed' });
    expect(await client.request('get_draft_status')).toEqual({ active: false });
    const messages = await client.request('get_messages', { sessionId });
    expect(messages.messages.map((message) => message.content)).toEqual(['Continue where we left off']);
    // Drafting again starts fresh.
    const again = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    expect(again.sessionId).not.toBe(sessionId);
  });

  it('two clients on two channels have two drafts and each sees only its own stream', async () => {
    const test = await setup();
    const alice = await test.client({ channel: 'alice' });
    const bob = await test.client({ channel: 'bob' });
    await bob.request('create_task', { project, title: 'Second task', slug: 'second-task' });
    const a = await alice.request('draft', { role: 'dev', project, task: 'first-task' });
    const b = await bob.request('draft', { role: 'qa', project, task: 'second-task' });
    expect(a.sessionId).not.toBe(b.sessionId);
    const aliceTurn = turnEvents(alice);
    const bobTurn = turnEvents(bob);
    await Promise.all([
      alice.request('submit_prompt', { content: 'from alice' }),
      bob.request('submit_prompt', { content: 'from bob' }),
    ]);
    await Promise.all([aliceTurn.done, bobTurn.done]);
    expect(new Set(aliceTurn.events.map((event) => event.sessionId))).toEqual(new Set([a.sessionId]));
    expect(new Set(bobTurn.events.map((event) => event.sessionId))).toEqual(new Set([b.sessionId]));
    expect((await alice.request('get_draft_status')).session?.role).toBe('dev');
    expect((await bob.request('get_draft_status')).session?.role).toBe('qa');
    expect((await alice.request('list_agents')).agents.map((agent) => agent.sessionId)).toEqual([a.sessionId]);
    expect((await alice.request('list_agents', { all: true })).agents).toHaveLength(2);
  });

  it('a connection without a channel gets one of its own; a reconnect on the same channel gets its draft back', async () => {
    const test = await setup();
    const first = await test.client();
    const second = await test.client();
    expect(first.channelId).toBeDefined();
    expect(first.channelId).not.toBe(second.channelId);
    const { sessionId } = await first.request('draft', { role: 'dev', project, task: 'first-task' });
    expect(await second.request('get_draft_status')).toEqual({ active: false });
    const channel = first.channelId!;
    first.close();
    const again = await test.client({ channel });
    expect(again.channelId).toBe(channel);
    expect(await again.request('get_draft_status')).toMatchObject({ active: true, session: { sessionId } });
  });

  it('the client reconnects after a dropped link and, with get_events, misses and doubles nothing mid-turn', async () => {
    const test = await setup();
    const hold = gate();
    test.backend.enqueue([
      step.text('first half of the answer'),
      step.wait(hold.promise),
      step.text('second half of the answer'),
    ]);
    const sockets: WebSocket[] = [];
    const client = await test.client({ sockets });
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const { events, done } = turnEvents(client);
    await client.request('submit_prompt', { content: 'stream please' });
    await vi.waitFor(() => expect(events.some((event) => event.type === 'text_delta')).toBe(true));
    const states: string[] = [];
    client.onStateChange((state) => states.push(state));
    sockets[0]!.terminate();
    await vi.waitFor(() => expect(states).toContain('reconnecting'));
    hold.open();
    await done;
    await vi.waitFor(() => expect(client.state).toBe('connected'));
    const log = (await client.request('get_events', { sessionId })).events;
    await vi.waitFor(() => expect(events.map((event) => event.seq)).toEqual(log.map((event) => event.seq)));
    const rebuilt = applyEvents(emptyConversation(sessionId), events);
    expect(
      rebuilt.blocks
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content)
        .join('|'),
    ).toContain('second half');
  });
});

describe('sessions over the wire', () => {
  it('list_sessions filters, get_session, get_messages, get_checkpoint, get_events after a seq, clear_messages, archive_session', async () => {
    const test = await setup();
    const client = await test.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const turn = turnEvents(client);
    await client.request('submit_prompt', { content: 'one' });
    await turn.done;
    await client.request('undraft');
    const other = await client.request('draft', { role: 'qa', project, task: 'first-task' });

    const all = await client.request('list_sessions');
    expect(all.sessions.map((session) => session.sessionId).sort()).toEqual([sessionId, other.sessionId].sort());
    expect(
      (await client.request('list_sessions', { agentType: 'qa' })).sessions.map((session) => session.sessionId),
    ).toEqual([other.sessionId]);
    expect(
      (await client.request('list_sessions', { backend: 'scripted', taskId: 'first-task', scopeKind: 'draft' }))
        .sessions,
    ).toHaveLength(2);
    expect(
      (await client.request('list_sessions', { search: sessionId.slice(0, 8).toUpperCase() })).sessions.map(
        (session) => session.sessionId,
      ),
    ).toEqual([sessionId]);
    expect((await client.request('list_sessions', { status: 'archived' })).sessions).toEqual([]);
    expect((await client.request('list_sessions', { limit: 1 })).sessions).toHaveLength(1);

    const got = await client.request('get_session', { sessionId });
    expect(got.session).toMatchObject({
      sessionId,
      agentType: 'dev',
      status: 'active',
      scope: { kind: 'draft', taskSlug: 'first-task' },
    });
    expect(got.lastSeq).toBeGreaterThan(0);
    const messages = await client.request('get_messages', { sessionId });
    expect(messages.messages.map((message) => [message.role, message.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'Echo: one'],
    ]);
    expect(await client.request('get_checkpoint', { sessionId })).toEqual({ current: null, versions: [] });

    const whole = await client.request('get_events', { sessionId });
    expect(whole.hasMore).toBe(false);
    expect(whole.lastSeq).toBe(got.lastSeq);
    const after = await client.request('get_events', { sessionId, afterSeq: 1 });
    expect(after.events).toEqual(whole.events.filter((event) => event.seq > 1));
    const page = await client.request('get_events', { sessionId, afterSeq: -1, limit: 2 });
    expect(page.events.map((event) => event.seq)).toEqual([0, 1]);
    expect(page.hasMore).toBe(true);

    const cleared = await client.request('clear_messages', { sessionId });
    expect(cleared.session.clearedThroughSeq).toBeGreaterThan(got.lastSeq);
    expect((await client.request('get_messages', { sessionId })).messages).toEqual([]);
    expect((await client.request('get_messages', { sessionId, includeCleared: true })).messages).toHaveLength(2);

    const archived = await client.request('archive_session', { sessionId });
    expect(archived.session.status).toBe('archived');
    expect(
      (await client.request('list_sessions', { status: 'archived' })).sessions.map((session) => session.sessionId),
    ).toEqual([sessionId]);
  });

  it('subscribe delivers the session events to subscribers only; unsubscribe stops them', async () => {
    const test = await setup();
    const drafter = await test.client();
    const watcher = await test.client();
    const bystander = await test.client();
    const { sessionId } = await drafter.request('draft', { role: 'dev', project, task: 'first-task' });
    const updates: Array<NotificationParams<'session_updated'>> = [];
    const events: StreamEvent[] = [];
    watcher.on('session_updated', (update) => updates.push(update));
    watcher.on('session_event', (message) => events.push(message.event));
    let bystanderSaw = 0;
    bystander.on('session_event', () => (bystanderSaw += 1));
    expect(await watcher.subscribe([sessionId])).toEqual({
      all: false,
      sessionIds: [sessionId],
      notices: { all: false, sessionIds: [] },
    });
    // A session list (or the TUI, which has its draft's events as channel_message) asks for notices only.
    const quiet = await test.client();
    const quietUpdates: string[] = [];
    let quietEvents = 0;
    quiet.on('session_updated', (update) => quietUpdates.push(update.action));
    quiet.on('session_event', () => (quietEvents += 1));
    expect(await quiet.subscribe([sessionId], { events: false })).toEqual({
      all: false,
      sessionIds: [],
      notices: { all: false, sessionIds: [sessionId] },
    });
    const turn = turnEvents(drafter);
    await drafter.request('submit_prompt', { content: 'watch me' });
    await turn.done;
    await vi.waitFor(() => expect(events.length).toBe(turn.events.length));
    expect(events.map((event) => event.seq)).toEqual(turn.events.map((event) => event.seq));
    expect(updates.some((update) => update.action === 'message_added' && update.session.sessionId === sessionId)).toBe(
      true,
    );
    expect(bystanderSaw).toBe(0);
    await vi.waitFor(() => expect(quietUpdates).toContain('message_added'));
    expect(quietEvents).toBe(0);
    expect(await watcher.unsubscribe()).toEqual({
      all: false,
      sessionIds: [],
      notices: { all: false, sessionIds: [] },
    });
    expect((await errorOf(watcher.request('subscribe', { sessionIds: ['missing-session'] }))).code).toBe(
      RpcErrorCode.NOT_FOUND,
    );
    const everything = await test.client();
    expect(await everything.subscribe()).toEqual({
      all: true,
      sessionIds: [],
      notices: { all: false, sessionIds: [] },
    });
    const created: string[] = [];
    everything.on('session_updated', (update) => update.action === 'created' && created.push(update.sessionId));
    await drafter.request('undraft');
    const next = await drafter.request('draft', { role: 'qa', project, task: 'first-task' });
    await vi.waitFor(() => expect(created).toEqual([next.sessionId]));
  });

  it('a burst of appends made in one turn (written to each socket as one batch) reaches every subscriber once, in seq order', async () => {
    const test = await setup();
    const drafter = await test.client();
    const { sessionId } = await drafter.request('draft', { role: 'dev', project, task: 'first-task' });
    const watchers = await Promise.all([test.client(), test.client(), test.client()]);
    const received = watchers.map(() => [] as number[]);
    watchers.forEach((watcher, index) =>
      watcher.on(
        'session_event',
        (message) => message.event.type === 'text_delta' && received[index]!.push(message.event.seq),
      ),
    );
    for (const watcher of watchers) await watcher.subscribe([sessionId]);
    const appends: Array<Promise<StreamEvent[]>> = [];
    for (let append = 0; append < 50; append += 1) {
      const drafts = Array.from({ length: 20 }, (_, index) => ({
        type: 'text_delta' as const,
        conversationId: 'main',
        blockId: 'burst',
        delta: `${append}.${index} `,
      }));
      appends.push(test.server.manager.appendEvents(sessionId, drafts));
    }
    const expected = (await Promise.all(appends)).flat().map((event) => event.seq);
    expect(expected).toHaveLength(1_000);
    await vi.waitFor(() => expect(received.map((seqs) => seqs.length)).toEqual([1_000, 1_000, 1_000]));
    for (const seqs of received) expect(seqs).toEqual(expected);
  });

  it('force_compact writes a checkpoint version and tells subscribers; preview_request shows the next request', async () => {
    const summary = {
      completed: ['greeted the user'],
      inProgress: [],
      pending: ['write the tests'],
      decisions: [],
      blockers: [],
    };
    const test = await setup({ summarize: () => Promise.resolve(JSON.stringify(summary)) });
    const client = await test.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    expect((await errorOf(client.request('force_compact', { sessionId }))).code).toBe(RpcErrorCode.INVALID_STATE);
    for (let index = 0; index < 6; index += 1) {
      const turn = turnEvents(client);
      await client.request('submit_prompt', { content: `step ${index}: ${'lorem ipsum dolor sit amet '.repeat(300)}` });
      await turn.done;
    }
    await client.subscribe([sessionId]);
    const started: unknown[] = [];
    const compactedNotices: Array<NotificationParams<'context_compacted'>> = [];
    client.on('context_compacted', (notice) => compactedNotices.push(notice));
    const completed: Array<NotificationParams<'compaction_completed'>> = [];
    client.on('compaction_started', (payload) => started.push(payload));
    client.on('compaction_completed', (payload) => completed.push(payload));
    const compacted = await client.request('force_compact', { sessionId, instructions: 'keep the plan' });
    expect(compacted.compacted).toBe(true);
    expect(compacted.checkpoint).toMatchObject({
      sessionId,
      version: 1,
      trigger: 'manual',
      summary: { pending: ['write the tests'] },
    });
    await vi.waitFor(() =>
      expect(completed).toEqual([expect.objectContaining({ sessionId, trigger: 'manual', version: 1 })]),
    );
    expect(started).toHaveLength(1);
    // Seed 000: the draft's channel hears of it as context_compacted.
    await vi.waitFor(() =>
      expect(compactedNotices).toEqual([
        expect.objectContaining({ channelId: client.channelId, sessionId, trigger: 'manual' }),
      ]),
    );
    expect(compactedNotices[0]!.preTokens).toBeGreaterThan(0);
    const checkpoints = await client.request('get_checkpoint', { sessionId });
    expect(checkpoints.current?.version).toBe(1);
    expect(checkpoints.versions.map((checkpoint) => checkpoint.version)).toEqual([1]);
    const preview = await client.request('preview_request', { sessionId, prompt: 'what next?' });
    expect(preview.userPrompt).toContain('what next?');
    expect(preview.systemPrompt).toContain('write the tests');
    expect(preview.totalTokens).toBeGreaterThan(0);
  });

  it('a failed compaction answers with its typed code and subscribers get compaction_failed', async () => {
    const client = await (await setup({ summarize: () => Promise.resolve('I would rather not.') })).client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    for (let index = 0; index < 4; index += 1) {
      const turn = turnEvents(client);
      await client.request('submit_prompt', { content: `step ${index}: ${'lorem ipsum dolor sit amet '.repeat(300)}` });
      await turn.done;
    }
    await client.subscribe([sessionId]);
    const failed = new Promise<NotificationParams<'compaction_failed'>>((resolve) =>
      client.on('compaction_failed', resolve),
    );
    const error = await errorOf(client.request('force_compact', { sessionId }));
    expect(error.code).toBe(RpcErrorCode.SERVER_ERROR);
    expect(error.reason).toBe('COMPACTION_INVALID_OUTPUT');
    expect(error.fault).toBe('model');
    expect(await failed).toMatchObject({ sessionId, trigger: 'manual', code: 'COMPACTION_INVALID_OUTPUT' });
    expect((await client.request('get_checkpoint', { sessionId })).versions).toEqual([]);
  });

  it('force_compact without a model builds the checkpoint structurally, and says so', async () => {
    const client = await (await setup({ summarize: false })).client();
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    for (let index = 0; index < 4; index += 1) {
      const turn = turnEvents(client);
      await client.request('submit_prompt', { content: `step ${index}: ${'lorem ipsum dolor sit amet '.repeat(300)}` });
      await turn.done;
    }
    await client.subscribe([sessionId]);
    const completed = new Promise<NotificationParams<'compaction_completed'>>((resolve) =>
      client.on('compaction_completed', resolve),
    );
    const compacted = await client.request('force_compact', { sessionId });
    expect(compacted.checkpoint).toMatchObject({
      sessionId,
      version: 1,
      trigger: 'manual',
      summarizer: { kind: 'structural' },
    });
    expect(await completed).toMatchObject({
      sessionId,
      trigger: 'manual',
      version: 1,
      summarizer: { kind: 'structural' },
    });
    expect((await client.request('get_checkpoint', { sessionId })).current?.summarizer).toEqual({ kind: 'structural' });
  });

  it('a client that connects while a compaction runs learns of it from get_session and get_compaction_status, then hears it complete', async () => {
    const summary = { completed: ['greeted the user'], inProgress: [], pending: [], decisions: [], blockers: [] };
    const release = gate();
    const asked = gate();
    const test = await setup({
      summarize: async () => {
        asked.open();
        await release.promise;
        return JSON.stringify(summary);
      },
    });
    const first = await test.client();
    const { sessionId } = await first.request('draft', { role: 'dev', project, task: 'first-task' });
    for (let index = 0; index < 4; index += 1) {
      const turn = turnEvents(first);
      await first.request('submit_prompt', { content: `step ${index}: ${'lorem ipsum dolor sit amet '.repeat(300)}` });
      await turn.done;
    }
    const idle = await first.request('get_compaction_status', { sessionId });
    expect(idle).toEqual({
      running: false,
      consecutiveFailures: 0,
      autoCompactionStopped: false,
      structuralFallback: false,
    });
    expect((await first.request('get_session', { sessionId })).compaction).toBeUndefined();
    const compacting = first.request('force_compact', { sessionId });
    await asked.promise;

    // A second client, connected after compaction_started was sent.
    const second = await test.client();
    const session = await second.request('get_session', { sessionId });
    expect(session.compaction).toEqual({
      startedAt: expect.any(String),
      trigger: 'manual',
      tokensBefore: expect.any(Number),
      summarizer: { kind: 'model' },
    });
    expect(Number.isNaN(Date.parse(session.compaction!.startedAt))).toBe(false);
    expect(session.compaction!.tokensBefore).toBeGreaterThan(0);
    const status = await second.request('get_compaction_status', { sessionId });
    expect(status).toEqual({
      running: true,
      ...session.compaction,
      consecutiveFailures: 0,
      autoCompactionStopped: false,
      structuralFallback: false,
    });
    await second.subscribe([sessionId]);
    const completed = new Promise<NotificationParams<'compaction_completed'>>((resolve) =>
      second.on('compaction_completed', resolve),
    );
    release.open();
    expect(await completed).toMatchObject({ sessionId, trigger: 'manual', version: 1 });
    expect((await compacting).compacted).toBe(true);
    expect((await second.request('get_session', { sessionId })).compaction).toBeUndefined();
    expect((await second.request('get_compaction_status', { sessionId })).running).toBe(false);
    expect((await errorOf(second.request('get_compaction_status', { sessionId: 'no-such-session' }))).code).toBe(
      RpcErrorCode.NOT_FOUND,
    );
  });
});

describe('projects, tasks, roles, agents, server_info', () => {
  it("answer with the draft layer's data; a malformed role file is reported by file and field", async () => {
    const test = await setup();
    await mkdir(join(test.dataDir, 'roles'), { recursive: true });
    await writeFile(join(test.dataDir, 'roles', 'broken.md'), '---\npermissions: [fly]\n---\nYou are broken.\n');
    const client = await test.client();
    expect((await client.request('list_projects')).projects).toEqual([
      expect.objectContaining({ name: project, current: true, path: test.root }),
    ]);
    const created = (
      await client.request('create_project', {
        name: 'other-project',
        path: join(test.root, 'other'),
        description: 'x',
      })
    ).project;
    expect(created).toMatchObject({ name: 'other-project', current: false });
    expect((await client.request('list_projects')).projects.map((entry) => entry.name)).toEqual([
      project,
      'other-project',
    ]);
    expect((await client.request('create_task', { project, title: 'Second task' })).task).toMatchObject({
      slug: 'second-task',
      project,
      state: 'open',
    });
    expect((await client.request('list_tasks', { project })).tasks.map((task) => task.slug).sort()).toEqual([
      'first-task',
      'second-task',
    ]);
    expect((await errorOf(client.request('list_tasks', { project: 'nowhere' }))).code).toBe(RpcErrorCode.NOT_FOUND);
    const roles = await client.request('list_roles', {});
    expect(roles.roles.find((role) => role.name === 'product-analyst')?.permissions.sort()).toEqual([
      'agent-converse',
      'agent-draft',
      'files-read',
      'projects-create',
      'projects-list',
    ]);
    expect(roles.roles.map((role) => role.name)).toEqual(expect.arrayContaining(['dev', 'qa']));
    expect(roles.errors).toEqual([
      expect.objectContaining({
        file: expect.stringContaining('broken.md') as string,
        field: expect.stringContaining('permissions') as string,
      }),
    ]);
    expect(await client.request('list_agents')).toEqual({ agents: [] });
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    expect((await client.request('list_agents')).agents).toEqual([
      expect.objectContaining({ kind: 'draft', sessionId, channelId: client.channelId }),
    ]);
    const info = await client.request('server_info');
    expect(info).toMatchObject({
      name: 'parley',
      protocolVersion: 1,
      channelId: client.channelId,
      projectRoot: test.root,
    });
    expect(info.methods).toContain('submit_prompt');
    const invalid = await errorOf(client.request('create_project', { name: '../escape' }));
    expect(invalid.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(invalid.data.issues?.[0]).toMatch(/^name:/);
  });
});

describe('worker agents over the wire', () => {
  it('a drafted analyst drafts two workers and awaits them; the client sees their status, threads and cost', async () => {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = createScriptedBackend({ idPrefix: 'dev' });
    const qa = createScriptedBackend({ idPrefix: 'qa' });
    const test = await setup({
      backend: analyst,
      backendFor: (name) => (name === 'dev-backend' ? dev : name === 'qa-backend' ? qa : analyst),
    });
    await mkdir(join(test.dataDir, 'roles'), { recursive: true });
    await writeFile(
      join(test.dataDir, 'roles', 'dev.md'),
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    await writeFile(
      join(test.dataDir, 'roles', 'qa.md'),
      '---\ndescription: QA reviewer\nbackend: qa-backend\n---\nYou test changes.\n',
    );
    // The script's await_agent inputs are filled in as the workers are dispatched (read when the step plays).
    const ids: Record<string, { agentId: string }> = { dev: { agentId: '' }, qa: { agentId: '' } };
    test.server.drafts.on('agent_status', ({ agent }) => {
      if (agent.kind === 'worker' && ids[agent.role]) ids[agent.role]!.agentId = agent.agentId;
    });
    analyst.enqueue([
      step.text('I will ask a developer and a QA reviewer.'),
      step.tool('draft_agent', { role: 'dev', prompt: 'Implement the login page.' }),
      step.tool('draft_agent', { role: 'qa', prompt: 'Test the login page.' }),
      step.tool('await_agent', ids['dev']),
      step.tool('await_agent', ids['qa']),
      step.text('Both are done.'),
    ]);
    dev.enqueue([step.text('Login page added.'), step.cost(0.02)]);
    qa.enqueue([step.text('No defects found.'), step.cost(0.03)]);

    const client = await test.client();
    const statuses: Array<NotificationParams<'agent_status'>> = [];
    client.on('agent_status', (notice) => statuses.push(notice));
    const { sessionId } = await client.request('draft', { role: 'product-analyst', project, task: 'first-task' });
    const turn = turnEvents(client);
    await client.request('submit_prompt', { content: 'Build a login page and have it tested.' });
    const finished = await turn.done;
    expect(finished.costUsd).toBeCloseTo(0.05, 10);

    const workerStatuses = (role: string) =>
      statuses
        .filter((notice) => notice.agent.kind === 'worker' && notice.agent.role === role)
        .map((notice) => notice.agent.status);
    expect(workerStatuses('dev')).toEqual(['queued', 'running', 'completed']);
    expect(workerStatuses('qa')).toEqual(['queued', 'running', 'completed']);
    expect(statuses.every((notice) => notice.channelId === client.channelId)).toBe(true);
    const agents = (await client.request('list_agents')).agents;
    expect(
      agents
        .filter((agent) => agent.kind === 'worker')
        .map((agent) => [agent.role, agent.status, agent.parentSessionId]),
    ).toEqual([
      ['dev', 'completed', sessionId],
      ['qa', 'completed', sessionId],
    ]);
    // The workers' threads streamed to the channel and rebuild as subagent threads.
    const conversation = applyEvents(emptyConversation(sessionId), turn.events);
    expect(new Set(turn.events.map((event) => event.conversationId))).toEqual(
      new Set(['main', ids['dev']!.agentId, ids['qa']!.agentId]),
    );
    const threads = new Map(conversation.subagents.map((thread) => [thread.id, thread.blocks]));
    expect(
      threads
        .get(ids['dev']!.agentId)
        ?.some((block) => block.type === 'assistant_text' && block.content === 'Login page added.'),
    ).toBe(true);
    expect(
      threads
        .get(ids['qa']!.agentId)
        ?.some((block) => block.type === 'assistant_text' && block.content === 'No defects found.'),
    ).toBe(true);
    const awaited = conversation.blocks.filter((block) => block.type === 'tool_result').slice(2);
    expect(awaited.map((block) => (block as { output?: { status?: string } }).output?.status)).toEqual([
      'completed',
      'completed',
    ]);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'assistant_text', content: 'Both are done.' });
  });
});

describe('shutdown', () => {
  it('ends a running turn cleanly, closes connections and refuses work; the client sees it', async () => {
    const test = await setup();
    const hold = gate();
    test.backend.enqueue([step.text('working'), step.wait(hold.promise)]);
    const client = await test.client({ client: { reconnect: false } });
    const { sessionId } = await client.request('draft', { role: 'dev', project, task: 'first-task' });
    const { events } = turnEvents(client);
    await client.request('submit_prompt', { content: 'go' });
    await vi.waitFor(() => expect(events.some((event) => event.type === 'text_delta')).toBe(true));
    await test.server.close();
    await vi.waitFor(() => expect(client.state).toBe('disconnected'));
    const error = await client.request('server_info').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolClientError);
    await test.restart();
    const reader = await test.client();
    const log = (await reader.request('get_events', { sessionId })).events;
    const conversation = applyEvents(emptyConversation(sessionId), log);
    expect(conversation.blocks.some((block) => block.type === 'system' && block.subtype === 'aborted')).toBe(true);
    hold.open();
  });
});
