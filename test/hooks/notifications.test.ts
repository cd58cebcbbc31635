import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  desktopSink,
  hookSink,
  HookRunner,
  loadHooksConfig,
  Notifier,
  parseHooksConfig,
  parseNotificationSettings,
  settingsSinks,
  signBody,
  summarize,
  webhookRequest,
  webhookSink,
} from '../../src/hooks/index.js';
import { item, ManualClock, recordingSink, startReceiver } from './notification-helpers.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-notify-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

function notifierWith(clock: ManualClock, options: { delayMs?: number; coalesceMs?: number; secrets?: string[] } = {}) {
  const sink = recordingSink();
  const notifier = new Notifier({
    sinks: [sink],
    clock,
    delayMs: options.delayMs ?? 10_000,
    coalesceMs: options.coalesceMs ?? 30_000,
    webUrl: 'http://127.0.0.1:7420/?token=secret-token-value',
    ...(options.secrets ? { secrets: options.secrets } : {}),
  });
  return { notifier, sink };
}

describe('the notifier', () => {
  it('sends an item once its grace delay is over, with a link that carries no token', async () => {
    const clock = new ManualClock();
    const { notifier, sink } = notifierWith(clock);
    notifier.notify(item('npm-test'));
    clock.advance(9_999);
    expect(sink.sent).toEqual([]);
    clock.advance(1);
    await notifier.idle();
    expect(sink.sent).toHaveLength(1);
    expect(sink.sent[0]).toMatchObject({
      kind: 'permission_request',
      title: 'Approval needed: npm-test',
      link: 'http://127.0.0.1:7420/#approval=session-1/npm-test',
    });
    expect(JSON.stringify(sink.sent)).not.toContain('secret-token-value');
    // The same key again (a client re-announcing it) is not a second notification.
    notifier.notify(item('npm-test'));
    clock.advance(60_000);
    await notifier.idle();
    expect(sink.sent).toHaveLength(1);
  });

  it('sends nothing for an item answered within the grace delay', async () => {
    const clock = new ManualClock();
    const { notifier, sink } = notifierWith(clock);
    notifier.notify(item('a'));
    clock.advance(5_000);
    notifier.resolve('a');
    clock.advance(60_000);
    await notifier.idle();
    expect(sink.sent).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('turns a burst into one notification, and holds the next one for the coalescing window', async () => {
    const clock = new ManualClock();
    const { notifier, sink } = notifierWith(clock);
    for (const key of ['a', 'b', 'c']) {
      notifier.notify(item(key));
      clock.advance(1_000);
    }
    notifier.resolve('b');
    clock.advance(7_000);
    await notifier.idle();
    expect(sink.sent).toHaveLength(1);
    expect(sink.sent[0]!.title).toBe('2 things wait for you in Parley');
    expect(sink.sent[0]!.items.map((entry) => entry.key)).toEqual(['a', 'c']);
    expect(sink.sent[0]!.message).toContain('Approval needed: c');

    notifier.notify(item('d'));
    notifier.notify(item('e'));
    clock.advance(10_000);
    await notifier.idle();
    expect(sink.sent).toHaveLength(1);
    clock.advance(20_000);
    await notifier.idle();
    expect(sink.sent).toHaveLength(2);
    expect(sink.sent[1]!.items.map((entry) => entry.key)).toEqual(['d', 'e']);
  });

  it('keeps secrets out of what it sends and of the problems it reports', async () => {
    const clock = new ManualClock();
    const problems: string[] = [];
    const notifier = new Notifier({
      clock,
      delayMs: 0,
      secrets: ['hunter2-secret'],
      onProblem: (line) => problems.push(line),
      sinks: [
        {
          name: 'failing',
          send: () => Promise.reject(new Error('refused hunter2-secret')),
        },
      ],
    });
    const sink = recordingSink();
    notifier.addSink(sink);
    notifier.notify(item('x', { message: 'Run `curl -H "token: hunter2-secret"`' }));
    clock.advance(0);
    await notifier.idle();
    expect(JSON.stringify(sink.sent)).not.toContain('hunter2-secret');
    expect(sink.sent[0]!.message).toContain('[redacted]');
    expect(problems).toEqual(['notifications: failing failed: refused [redacted]']);
  });

  it('sends nothing after close', async () => {
    const clock = new ManualClock();
    const { notifier, sink } = notifierWith(clock);
    notifier.notify(item('a'));
    await notifier.close();
    clock.advance(60_000);
    expect(sink.sent).toEqual([]);
  });
});

describe('webhook bodies', () => {
  const one = summarize(
    [item('npm-test', { title: 'Approval needed: Run `npm test` — ünïcode' })],
    'http://127.0.0.1:7420/',
  );

  it('ntfy: the message as text, the title and the link as headers', () => {
    const request = webhookRequest(one, 'ntfy');
    expect(request.body).toBe('The reviewer wants to run npm-test.\nreviewer · demo / fix-login');
    expect(request.headers['click']).toBe('http://127.0.0.1:7420/#approval=session-1/npm-test');
    expect(request.headers['priority']).toBe('high');
    // Not Latin-1: sent as RFC 2047 encoded UTF-8.
    const title = request.headers['title']!;
    expect(title).toMatch(/^=\?UTF-8\?B\?.+\?=$/);
    expect(Buffer.from(title.slice(10, -2), 'base64').toString('utf8')).toBe(
      'Approval needed: Run `npm test` — ünïcode',
    );
  });

  it('slack: one mrkdwn text with the link', () => {
    const body = JSON.parse(webhookRequest(summarize([item('a<b>&')]), 'slack').body) as { text: string };
    expect(body.text).toBe(
      '*Approval needed: a&lt;b&gt;&amp;*\nThe reviewer wants to run a&lt;b&gt;&amp;.\nreviewer · demo / fix-login',
    );
    const linked = JSON.parse(webhookRequest(one, 'slack').body) as { text: string };
    expect(linked.text.endsWith('<http://127.0.0.1:7420/#approval=session-1/npm-test|Open in Parley>')).toBe(true);
  });

  it('discord: content and an embed with the link, mentions off', () => {
    const body = JSON.parse(webhookRequest(one, 'discord').body) as Record<string, unknown>;
    expect(body).toEqual({
      content: '**Approval needed: Run `npm test` — ünïcode**',
      embeds: [
        {
          title: 'Approval needed: Run `npm test` — ünïcode',
          description: 'The reviewer wants to run npm-test.\nreviewer · demo / fix-login',
          url: 'http://127.0.0.1:7420/#approval=session-1/npm-test',
        },
      ],
      allowed_mentions: { parse: [] },
    });
  });

  it('json: the notification, signed when a secret is given', () => {
    const request = webhookRequest(one, 'json', 'shh');
    expect(JSON.parse(request.body)).toEqual(one);
    expect(request.headers['x-parley-signature']).toBe(signBody(request.body, 'shh'));
  });

  it('a webhook posts to a local receiver; a failure names the origin only', async () => {
    const receiver = await startReceiver();
    const failing = await startReceiver(500);
    try {
      await webhookSink({ url: `${receiver.url}/my-topic`, format: 'ntfy' }).send(one);
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0]).toMatchObject({ path: '/my-topic' });
      const sink = webhookSink(
        { urlEnv: 'SECRET_HOOK_URL' },
        { env: { SECRET_HOOK_URL: `${failing.url}/T000/B000/XXXX` } },
      );
      expect(sink.name).toBe(`webhook ${failing.url}`);
      await expect(sink.send(one)).rejects.toThrow('answered 500');
      await expect(webhookSink({ urlEnv: 'UNSET_HOOK_URL' }, { env: {} }).send(one)).rejects.toThrow(
        'its URL variable UNSET_HOOK_URL is not set',
      );
    } finally {
      await receiver.close();
      await failing.close();
    }
  });
});

describe('the desktop sink', () => {
  it('calls notify-send from PATH with the title and the message', async () => {
    const bin = join(folder, 'bin');
    await mkdir(bin);
    const log = join(folder, 'calls.txt');
    await writeFile(join(bin, 'notify-send'), `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done >> "${log}"\n`);
    await chmod(join(bin, 'notify-send'), 0o755);
    const sink = desktopSink({ env: { PATH: bin } });
    expect(sink).toBeDefined();
    await sink!.send(summarize([item('a')]));
    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    expect(lines.slice(0, 4)).toEqual(['--app-name=Parley', '--urgency=critical', '--', 'Approval needed: a']);
    expect(lines[4]).toBe('The reviewer wants to run a.');
  });

  it('is left out cleanly where notify-send is not installed', () => {
    expect(desktopSink({ env: { PATH: folder } })).toBeUndefined();
    expect(settingsSinks({ webhooks: [], desktop: true }, { env: { PATH: folder } })).toEqual([]);
  });

  it('reports a notify-send that fails', async () => {
    const bin = join(folder, 'bin');
    await mkdir(bin);
    await writeFile(join(bin, 'notify-send'), '#!/bin/sh\necho "no display" >&2\nexit 1\n');
    await chmod(join(bin, 'notify-send'), 0o755);
    await expect(desktopSink({ env: { PATH: bin } })!.send(summarize([item('a')]))).rejects.toThrow('no display');
  });
});

describe('the Notification hook', () => {
  it('fires once with Claude Code fields and Parley links', async () => {
    const out = join(folder, 'input.jsonl');
    const parsed = parseHooksConfig(
      { Notification: [{ hooks: [{ type: 'command', command: `cat >> "${out}"; echo >> "${out}"` }] }] },
      'test.json',
    );
    const runner = new HookRunner({ hooks: parsed.hooks, projectDir: folder });
    const clock = new ManualClock();
    const notifier = new Notifier({
      clock,
      delayMs: 0,
      sinks: [hookSink(runner, folder)],
      webUrl: 'http://127.0.0.1:1/',
    });
    notifier.notify(item('a'));
    // A goal's end ran the hooks itself (as goal_<reason>): the notifier's copy does not run them again.
    notifier.notify(item('goal', { kind: 'goal_ended', title: 'Goal met: x' }));
    clock.advance(0);
    await notifier.idle();
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      session_id: 'session-1',
      cwd: folder,
      hook_event_name: 'Notification',
      notification_type: 'permission_request',
      title: 'Approval needed: a',
      message: 'The reviewer wants to run a.\nreviewer · demo / fix-login',
      link: 'http://127.0.0.1:1/#approval=session-1/a',
      items: [{ ...item('a'), link: 'http://127.0.0.1:1/#approval=session-1/a' }],
    });
  });
});

describe('notification settings', () => {
  it('keeps good settings, names the file, line and field of each bad one', async () => {
    const file = join(folder, 'parley.config.json');
    await writeFile(
      file,
      JSON.stringify(
        {
          backend: 'scripted',
          hooks: { Stop: [{ hooks: [{ type: 'command', command: 'true' }] }] },
          notifications: {
            webhooks: [
              { url: 'https://ntfy.sh/parley-topic' },
              { format: 'slack' },
              { urlEnv: 'DISCORD_URL', format: 'discord' },
            ],
            desktop: 'yes',
            delaySeconds: 5,
            loudness: 11,
          },
        },
        null,
        2,
      ),
    );
    const config = await loadHooksConfig({ projectDir: folder, skipUserConfig: true });
    expect(config.hooks).toHaveLength(1);
    expect(config.notifications).toEqual({
      webhooks: [{ url: 'https://ntfy.sh/parley-topic' }, { urlEnv: 'DISCORD_URL', format: 'discord' }],
      desktop: true,
      delaySeconds: 5,
    });
    expect(config.problems).toEqual([
      `${file} (line 16): notifications.webhooks[1]: needs exactly one of url or urlEnv; this webhook is left out.`,
      `${file} (line 28): notifications.desktop: Invalid input: expected boolean, received string; it is ignored.`,
      `${file} (line 30): notifications.loudness: is not a setting; use webhooks, desktop, delaySeconds, coalesceSeconds or webUrl.`,
    ]);
  });

  it("the project's file adds webhooks to the user's and its scalars win", () => {
    const user = parseNotificationSettings({ webhooks: [{ url: 'https://ntfy.sh/a' }], delaySeconds: 3 }, 'user.json');
    const both = parseNotificationSettings(
      { webhooks: [{ url: 'https://ntfy.sh/a' }, { url: 'https://ntfy.sh/b' }], delaySeconds: 7 },
      'parley.config.json',
      user.settings,
    );
    expect(both.settings.webhooks.map((webhook) => webhook.url)).toEqual(['https://ntfy.sh/a', 'https://ntfy.sh/b']);
    expect(both.settings.delaySeconds).toBe(7);
  });
});
