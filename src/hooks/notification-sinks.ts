import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import {
  summarize,
  webhookFormat,
  type Notification,
  type NotificationSettings,
  type NotificationSink,
  type NotificationWebhook,
  type WebhookFormat,
} from './notifications.js';
import { EVENT_HEADER, signBody, SIGNATURE_HEADER, type HookRunner } from './runner.js';

/** A webhook request as it is sent: for tests and for `webhookSink`. */
export interface WebhookRequest {
  headers: Record<string, string>;
  body: string;
}

/**
 * The body of a notification in a webhook's style:
 * - `ntfy`: the message as plain text, `Title`, `Click` (the link), `Tags` and `Priority` headers,
 *   as ntfy's topic URLs take them (also a Gotify- or Apprise-style plain text receiver);
 * - `slack`: `{ text }` in Slack's mrkdwn, the link as `<url|Open in Parley>`;
 * - `discord`: `{ content, embeds: [{ title, description, url }] }`, mentions disabled;
 * - `json`: the notification itself, signed like an HTTP hook when a secret is given.
 */
export function webhookRequest(notification: Notification, format: WebhookFormat, secret?: string): WebhookRequest {
  switch (format) {
    case 'ntfy': {
      const headers: Record<string, string> = {
        'content-type': 'text/plain; charset=utf-8',
        title: headerValue(notification.title),
        tags: notification.kind === 'permission_request' || notification.kind === 'run_question' ? 'bell' : 'robot',
        priority:
          notification.kind === 'permission_request' || notification.kind === 'run_question' ? 'high' : 'default',
      };
      if (notification.link) headers['click'] = notification.link;
      return { headers, body: notification.message };
    }
    case 'slack': {
      const lines = [`*${slackEscape(notification.title)}*`, slackEscape(notification.message)];
      if (notification.link) lines.push(`<${notification.link}|Open in Parley>`);
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: lines.join('\n') }) };
    }
    case 'discord': {
      const embed = {
        title: notification.title.slice(0, 256),
        description: notification.message.slice(0, 4000),
        ...(notification.link ? { url: notification.link } : {}),
      };
      return {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          content: `**${notification.title}**`.slice(0, 2000),
          embeds: [embed],
          allowed_mentions: { parse: [] },
        }),
      };
    }
    case 'json': {
      const body = JSON.stringify(notification);
      const headers: Record<string, string> = { 'content-type': 'application/json', [EVENT_HEADER]: 'Notification' };
      if (secret) headers[SIGNATURE_HEADER] = signBody(body, secret);
      return { headers, body };
    }
  }
}

/** A header carries Latin-1 only: other text goes as RFC 2047 encoded UTF-8, which ntfy decodes. */
function headerValue(text: string): string {
  const line = text.replace(/[\r\n]+/g, ' ');
  return /^[\x20-\x7e]*$/.test(line) ? line : `=?UTF-8?B?${Buffer.from(line, 'utf8').toString('base64')}?=`;
}

function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Options of the built-in sinks: the environment (URLs and secrets kept in variables, `PATH`). */
export interface SinkOptions {
  env?: Record<string, string | undefined>;
}

/**
 * A built-in webhook. Its name (in failure messages) is the URL's origin only: a Slack or Discord
 * webhook's path, or an ntfy topic, is its secret.
 */
export function webhookSink(webhook: NotificationWebhook, options: SinkOptions = {}): NotificationSink {
  const env = options.env ?? process.env;
  const url = webhook.url ?? env[webhook.urlEnv ?? '']?.trim();
  const name = url && URL.canParse(url) ? `webhook ${new URL(url).origin}` : `webhook ${webhook.urlEnv ?? ''}`;
  return {
    name,
    async send(notification) {
      if (!url) throw new Error(`its URL variable ${webhook.urlEnv} is not set, so nothing was sent`);
      if (!URL.canParse(url) || !/^https?:/.test(url))
        throw new Error(`its URL variable ${webhook.urlEnv} does not hold an http(s) URL, so nothing was sent`);
      const secret = webhook.secretEnv ? env[webhook.secretEnv] : undefined;
      if (webhook.secretEnv && !secret)
        throw new Error(`its secret variable ${webhook.secretEnv} is not set, so nothing was sent`);
      const request = webhookRequest(notification, webhookFormat(webhook, url), secret);
      const timeout = AbortSignal.timeout((webhook.timeout ?? 10) * 1000);
      let response: Response;
      try {
        response = await fetch(url, { method: 'POST', ...request, signal: timeout, redirect: 'error' });
      } catch (error) {
        if (timeout.aborted) throw new Error(`did not answer within ${webhook.timeout ?? 10} s`);
        const cause = (error as { cause?: { message?: string } }).cause?.message;
        throw new Error(`could not be reached (${cause ?? (error as Error).message})`);
      }
      await response.body?.cancel();
      if (!response.ok) throw new Error(`answered ${response.status} ${response.statusText}`.trim());
    },
  };
}

/** The first executable `name` on `PATH`, if any. */
export function findOnPath(name: string, env: Record<string, string | undefined> = process.env): string | undefined {
  for (const folder of (env['PATH'] ?? '').split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here: the next folder.
    }
  }
  return undefined;
}

/**
 * The desktop, through `notify-send` (libnotify) when it is on `PATH`; undefined when it is not, so
 * a server without a desktop simply has no such sink. Arguments are passed without a shell.
 */
export function desktopSink(options: SinkOptions = {}): NotificationSink | undefined {
  const env = options.env ?? process.env;
  const command = findOnPath('notify-send', env);
  if (!command) return undefined;
  return {
    name: 'desktop (notify-send)',
    send: (notification) =>
      new Promise((resolve, reject) => {
        const urgency =
          notification.kind === 'permission_request' || notification.kind === 'run_question' ? 'critical' : 'normal';
        const body = notification.link ? `${notification.message}\n${notification.link}` : notification.message;
        execFile(
          command,
          ['--app-name=Parley', `--urgency=${urgency}`, '--', notification.title, body],
          { env: env as NodeJS.ProcessEnv, timeout: 10_000 },
          (error, _stdout, stderr) => {
            if (error) reject(new Error(`notify-send failed (${stderr.trim() || error.message})`));
            else resolve();
          },
        );
      }),
  };
}

/**
 * People's `Notification` hooks. The input has Claude Code's fields (`message`, `title`,
 * `notification_type`) and Parley's (`link`, `items`).
 */
export function hookSink(runner: HookRunner, cwd: string, report?: (line: string) => void): NotificationSink {
  return {
    name: 'Notification hooks',
    async send(sent) {
      // A goal's end runs the Notification hooks itself, as `goal_<reason>` with the goal
      // (draft/goals.ts): told again here, a hook with no matcher would run twice for it.
      const items = sent.items.filter((item) => item.kind !== 'goal_ended');
      if (items.length === 0) return;
      const notification = items.length === sent.items.length ? sent : summarize(items);
      if (!runner.has('Notification', notification.kind)) return;
      const first = notification.items[0];
      const outcome = await runner.run(
        {
          session_id: first?.sessionId ?? '',
          cwd,
          hook_event_name: 'Notification',
          notification_type: notification.kind,
          title: notification.title,
          message: notification.message,
          ...(notification.link ? { link: notification.link } : {}),
          items: notification.items,
        },
        { matchValue: notification.kind },
      );
      for (const failure of outcome.failures)
        report?.(`hooks: the Notification hook \`${failure.target}\` (${failure.source}) failed: ${failure.reason}`);
    },
  };
}

/** The sinks the settings ask for: each webhook, and the desktop when `notify-send` is there. */
export function settingsSinks(settings: NotificationSettings, options: SinkOptions = {}): NotificationSink[] {
  const sinks = settings.webhooks.map((webhook) => webhookSink(webhook, options));
  if (settings.desktop) {
    const desktop = desktopSink(options);
    if (desktop) sinks.push(desktop);
  }
  return sinks;
}
