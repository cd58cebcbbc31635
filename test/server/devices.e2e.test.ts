import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { RpcError, type ProtocolClient } from '../../src/protocol/index.js';
import { startServer } from '../../src/server/index.js';
import { startTestServer, upgradeStatus, type TestServer } from './helpers.js';

/**
 * Pairing a phone and its device token, over real HTTP and WebSocket connections: a code works
 * once, expires (an injected clock), is rate limited, and every refusal reads the same; a revoked
 * device's open connection closes at once and its token is refused after.
 */

let running: TestServer | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const REFUSED =
  'This pairing link is not valid: it is wrong, was used already, or expired. Run `parley pair` for a new one.';

async function pair(
  server: TestServer,
  code: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(new URL('/pair', server.server.url.replace(/\/\?.*$/, '/')), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ code, name: 'Test phone' }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function newCode(owner: ProtocolClient): Promise<string> {
  return (await owner.request('create_pairing')).code;
}

function closed(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
}

describe('pairing a device', () => {
  it('a code gives one device token; used again, or wrong, it is refused with the same reply', async () => {
    running = await startTestServer();
    const server = running;
    const owner = await server.client();
    const pairing = await owner.request('create_pairing');
    expect(pairing.links[0]).toBe(`${server.server.url.replace(/\/\?.*$/, '')}/#pair=${pairing.code}`);
    expect(pairing.reachable).toBe(false);

    const first = await pair(server, pairing.code);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ name: 'Test phone', deviceId: expect.stringMatching(/^dev-[0-9a-f]{12}$/) });
    const token = first.body['token'] as string;
    const device = await server.client({ token });
    expect((await device.request('server_info')).name).toBe('parley');

    const again = await pair(server, pairing.code);
    const wrong = await pair(server, 'A'.repeat(22));
    expect(again).toEqual({ status: 401, body: { error: REFUSED } });
    expect(wrong).toEqual(again);

    // Kept hashed, only its owner may read the file; neither the token nor the code is in a log line.
    const file = await readFile(join(server.dataDir, 'devices.json'), 'utf8');
    expect(file).not.toContain(token);
    expect((await stat(join(server.dataDir, 'devices.json'))).mode & 0o777).toBe(0o600);
    const logged = JSON.stringify(server.logs);
    expect(logged).not.toContain(token);
    expect(logged).not.toContain(pairing.code);
  });

  it('a code expires: after its minutes it reads as a wrong one', async () => {
    const clock = { now: 1_000_000 };
    running = await startTestServer({ now: () => clock.now, pairing: { codeTtlMs: 5 * 60_000 } });
    const owner = await running.client();
    const late = await newCode(owner);
    const inTime = await newCode(owner);
    clock.now += 4 * 60_000;
    expect((await pair(running, inTime)).status).toBe(200);
    clock.now += 60_000;
    expect(await pair(running, late)).toEqual({ status: 401, body: { error: REFUSED } });
  });

  it('a flood of attempts is refused before any code is looked at, a valid one too, until the rate allows again', async () => {
    const clock = { now: 0 };
    running = await startTestServer({
      now: () => clock.now,
      pairing: { attempts: { capacity: 3, perSecond: 1 / 60 } },
    });
    const owner = await running.client();
    const code = await newCode(owner);
    for (let attempt = 0; attempt < 3; attempt++) expect((await pair(running, `guess-${attempt}`)).status).toBe(401);
    const limited = await pair(running, code);
    expect(limited.status).toBe(429);
    expect(limited.body['error']).toMatch(/^Too many pairing attempts\. Try again in 60 s\.$/);
    // The valid code was not spent by the refused attempt.
    clock.now += 60_000;
    expect((await pair(running, code)).status).toBe(200);
  });

  it('refuses another origin, a body that is not JSON, and a method other than POST', async () => {
    running = await startTestServer();
    const owner = await running.client();
    const code = await newCode(owner);
    expect((await pair(running, code, { Origin: 'https://evil.example' })).status).toBe(403);
    const base = running.server.url.replace(/\/\?.*$/, '');
    expect((await fetch(`${base}/pair`)).status).toBe(405);
    const text = await fetch(`${base}/pair`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: code });
    expect(text.status).toBe(415);
    const broken = await fetch(`${base}/pair`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"code":',
    });
    expect(broken.status).toBe(400);
    // None of these spent the code.
    expect((await pair(running, code)).status).toBe(200);
  });
});

describe('paired devices', () => {
  it('lists devices with last seen; revoking one closes its open connection at once and refuses its token after', async () => {
    const clock = { now: Date.parse('2026-12-02T06:00:00Z') };
    running = await startTestServer({ now: () => clock.now });
    const server = running;
    const owner = await server.client();
    const paired = await pair(server, await newCode(owner));
    const token = paired.body['token'] as string;
    const deviceId = paired.body['deviceId'] as string;
    expect((await owner.request('list_devices')).devices).toEqual([
      { deviceId, name: 'Test phone', pairedAt: '2026-12-02T06:00:00.000Z', connections: 0 },
    ]);

    clock.now += 60_000;
    const url = new URL(server.server.wsUrl);
    url.searchParams.set('token', token);
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const listed = (await owner.request('list_devices')).devices;
    expect(listed).toEqual([
      expect.objectContaining({ deviceId, lastSeenAt: '2026-12-02T06:01:00.000Z', connections: 1 }),
    ]);

    // A device manages no devices.
    const device = await server.client({ token, client: { reconnect: false } });
    await expect(device.request('list_devices')).rejects.toMatchObject({ code: -32011 });
    await expect(device.request('create_pairing')).rejects.toBeInstanceOf(RpcError);

    const closing = closed(socket);
    const revoked = await owner.request('revoke_device', { deviceId });
    expect(revoked.closedConnections).toBe(2);
    expect(await closing).toEqual({ code: 1008, reason: 'this device was revoked' });
    expect(await upgradeStatus(url.href)).toBe(401);
    expect((await owner.request('list_devices')).devices).toEqual([]);
    await expect(owner.request('revoke_device', { deviceId })).rejects.toMatchObject({ code: -32001 });
    await expect(owner.request('revoke_device', { deviceId: 'phone' })).rejects.toMatchObject({ code: -32602 });
  });

  it('a device token from another origin is refused, as the server token is', async () => {
    running = await startTestServer();
    const owner = await running.client();
    const token = (await pair(running, await newCode(owner))).body['token'] as string;
    const url = new URL(running.server.wsUrl);
    url.searchParams.set('token', token);
    expect(await upgradeStatus(url.href, { Origin: 'https://evil.example' })).toBe(403);
    expect(await upgradeStatus(url.href, { Origin: running.server.url.replace(/\/\?.*$/, '') })).toBe(101);
  });

  it("a device on a channel of its own sees and answers every channel's approvals with get_permissions { all: true }", async () => {
    const backend = createScriptedBackend();
    running = await startTestServer({ backend });
    const server = running;
    const desk = await server.client({ channel: 'desk' });
    const owner = await server.client();
    const token = (await pair(server, await newCode(owner))).body['token'] as string;
    const phone = await server.client({ token, channel: 'phone' });
    expect((await phone.request('get_permissions', { all: true })).requests).toEqual([]);
    const resolved = new Promise<string>((resolve) =>
      phone.on('permission_resolved', (params) => resolve(params.requestId)),
    );
    const requested = new Promise<string>((resolve) =>
      phone.on('permission_requested', (params) => resolve(params.request.requestId)),
    );
    const { sessionId } = await desk.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    backend.enqueue([step.tool('run_command', { command: 'ls' }), step.text('Listed.')]);
    await desk.request('submit_prompt', { content: 'List the files.' });
    const requestId = await requested;
    // Only this channel's, without `all`.
    expect((await phone.request('get_permissions')).requests).toEqual([]);
    expect((await phone.request('get_permissions', { all: true })).requests.map((each) => each.requestId)).toEqual([
      requestId,
    ]);
    await phone.request('answer_permission', { sessionId, requestId, decision: 'allow_once' });
    expect(await resolved).toBe(requestId);
    await server.server.drafts.settled({ channelId: 'desk' });
  });
});

describe('listening beyond loopback', () => {
  it('refuses plain HTTP on a network address without --insecure-http, before listening', async () => {
    const root = await mkdtemp(join(tmpdir(), 'parley-insecure-'));
    try {
      await expect(
        startServer({ projectRoot: root, dataDir: join(root, '.parley'), host: '192.0.2.10', log: () => {} }),
      ).rejects.toMatchObject({
        code: 'INSECURE_HTTP_REFUSED',
        message: expect.stringContaining('--insecure-http'),
      });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
