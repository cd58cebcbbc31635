import { promises as fs } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { Notifier, webhookSink } from '../../src/hooks/index.js';
import type { AttentionNeeded } from '../../src/protocol/index.js';
import { ManualClock, startReceiver } from '../hooks/notification-helpers.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * Notifications over a real server: an approval that waits with no client attached reaches a local
 * webhook receiver once; one answered from another client within the grace delay is never sent.
 * The notifier's clock is a manual one, so the grace delay passes without waiting.
 */

let running: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
afterEach(async () => {
  await running?.stop();
  if (running) await fs.rm(running.root, { recursive: true, force: true });
  await receiver?.close();
  running = undefined;
  receiver = undefined;
});

describe('notifications of what waits', () => {
  it('an approval with no client attached reaches the webhook once; one answered elsewhere first is not sent', async () => {
    receiver = await startReceiver();
    const clock = new ManualClock();
    const notifier = new Notifier({
      sinks: [webhookSink({ url: `${receiver.url}/parley-topic`, format: 'json' })],
      clock,
      delayMs: 10_000,
      coalesceMs: 0,
    });
    const backend = createScriptedBackend();
    running = await startTestServer({ backend, notifier });
    const server = running;
    const requested: string[] = [];
    server.server.drafts.on('permission_requested', ({ request }) => requested.push(request.requestId));

    const first = await server.client({ channel: 'ui' });
    const { sessionId } = await first.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    backend.enqueue([
      step.tool('run_command', { command: 'echo one' }),
      step.tool('run_command', { command: 'echo two' }),
      step.text('Done.'),
    ]);
    await first.request('submit_prompt', { content: 'Run the two commands.' });
    await first.close();

    // 1. Nobody is attached: after the grace delay, one POST with what waits and a link to it.
    await vi.waitFor(() => expect(requested).toHaveLength(1));
    const firstKey = `permission:${sessionId}:${requested[0]}`;
    await vi.waitFor(() => expect(notifier.isPending(firstKey)).toBe(true));
    clock.advance(10_000);
    await notifier.idle();
    expect(receiver.requests).toHaveLength(1);
    const sent = JSON.parse(receiver.requests[0]!.body) as AttentionNeeded;
    expect(sent).toMatchObject({
      kind: 'permission_request',
      title: 'Approval needed: Run `echo one`',
      link: `http://127.0.0.1:${server.server.port}/#approval=${sessionId}/${requested[0]}`,
      items: [{ who: 'dev', where: `${server.project} / first-task`, sessionId, channelId: 'ui' }],
    });
    expect(receiver.requests[0]!.body).not.toContain(server.server.token);

    // 2. Another client answers; the next request is answered there too, within the delay.
    const phone = await server.client({ channel: 'ui' });
    const attention: AttentionNeeded[] = [];
    phone.on('attention_needed', (params) => attention.push(params));
    await phone.request('answer_permission', { sessionId, requestId: requested[0]!, decision: 'allow_once' });
    await vi.waitFor(() => expect(requested).toHaveLength(2));
    const secondKey = `permission:${sessionId}:${requested[1]}`;
    await vi.waitFor(() => expect(notifier.isPending(secondKey)).toBe(true));
    clock.advance(4_000);
    await phone.request('answer_permission', { sessionId, requestId: requested[1]!, decision: 'allow_once' });
    expect(notifier.isPending(secondKey)).toBe(false);
    clock.advance(60_000);
    await notifier.idle();
    await server.server.drafts.settled({ channelId: 'ui' });
    expect(receiver.requests).toHaveLength(1);
    expect(attention).toEqual([]);
  });

  it('the web UI sink tells every connection, and a turn that ended unwatched is notified', async () => {
    const clock = new ManualClock();
    const notifier = new Notifier({ sinks: [], clock, delayMs: 1_000, coalesceMs: 0 });
    const backend = createScriptedBackend();
    running = await startTestServer({ backend, notifier });
    const server = running;
    const drafter = await server.client({ channel: 'cli' });
    const { sessionId } = await drafter.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    backend.enqueue([step.text('All done.')]);
    // A client on another channel that follows no session: the turn ends unwatched.
    const watcher = await server.client({ channel: 'elsewhere' });
    const attention: AttentionNeeded[] = [];
    watcher.on('attention_needed', (params) => attention.push(params));
    await drafter.close();
    await vi.waitFor(() => expect(server.server.connections).toBe(1));
    await server.server.drafts.submitPrompt({ channelId: 'cli', content: 'Finish up.' });
    await server.server.drafts.settled({ channelId: 'cli' });
    await vi.waitFor(() => expect(notifier.isPending(`turn:${sessionId}:1`)).toBe(true));
    clock.advance(1_000);
    await notifier.idle();
    await vi.waitFor(() => expect(attention).toHaveLength(1));
    expect(attention[0]).toMatchObject({
      kind: 'turn_ended',
      title: 'dev finished its turn',
      link: `http://127.0.0.1:${server.server.port}/#session=${sessionId}`,
    });
  });

  it('get_notification_settings names the sinks without secrets; send_test_notification reaches each at once', async () => {
    receiver = await startReceiver();
    const notifier = new Notifier({
      sinks: [
        webhookSink({ urlEnv: 'TOPIC_URL', format: 'ntfy' }, { env: { TOPIC_URL: `${receiver.url}/secret-topic` } }),
      ],
      clock: new ManualClock(),
    });
    running = await startTestServer({ notifier });
    const client = await running.client({ channel: 'settings' });
    const settings = await client.request('get_notification_settings', {});
    expect(settings).toEqual({
      enabled: true,
      delaySeconds: 10,
      coalesceSeconds: 30,
      webUrl: `http://127.0.0.1:${running.server.port}/`,
      sinks: [`webhook ${receiver.url}`, 'web UI'],
    });
    expect(JSON.stringify(settings)).not.toContain('secret-topic');
    const attention: AttentionNeeded[] = [];
    client.on('attention_needed', (params) => attention.push(params));
    const tested = await client.request('send_test_notification', {});
    expect(tested.sinks).toEqual([
      { name: `webhook ${receiver.url}`, ok: true },
      { name: 'web UI', ok: true },
    ]);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]).toMatchObject({
      path: '/secret-topic',
      body: expect.stringContaining('reach you here'),
    });
    await vi.waitFor(() => expect(attention).toHaveLength(1));
  });
});
