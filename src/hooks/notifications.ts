import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';

/**
 * Notifications tell a person that something waits for them: an approval, a run's question, a
 * draft's turn that ended while nobody watched, a worker that failed, a compaction that fell back,
 * a goal that ended (met, out of budget, stuck, failed).
 * A `Notifier` holds each one for a short grace delay (an answer on any client cancels it), turns a
 * burst into one notification, and hands it to its sinks (hooks, webhooks, the desktop, the web UI).
 */

/** What waits: the kinds of notification, as `notification_type` in a hook's input. */
export const NOTIFICATION_KINDS = [
  'permission_request',
  'run_question',
  'turn_ended',
  'worker_failed',
  'run_failed',
  'schedule_failed',
  'compaction_fallback',
  'goal_ended',
] as const;
/** The kind of thing that waits for a person. */
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** One thing that waits for a person. */
export interface AttentionItem {
  /** Identifies it: the same key notified twice is one notification; `resolve(key)` cancels it. */
  key: string;
  kind: NotificationKind;
  /** One line: "Approval needed: Run `npm test`". */
  title: string;
  /** What waits, in a sentence or two. */
  message: string;
  /** The agent or workflow that waits: a role, a worker, a run's harness. */
  who: string;
  /** Where: the project and task, or the run. */
  where: string;
  sessionId?: string;
  runId?: string;
  scheduleId?: string;
  channelId?: string;
  /** The web UI's route that opens it, a fragment: `#session=<id>`, `#run=<id>`, `#approval=<session>/<request>`. */
  route: string;
}

/** One notification as the sinks get it: one item, or a burst of them summed up. */
export interface Notification {
  kind: NotificationKind;
  title: string;
  message: string;
  /** The web UI's address that opens what waits (the first item's, for a burst); absent without a known web address. */
  link?: string;
  /** Every item it stands for, in the order they came. */
  items: Array<AttentionItem & { link?: string }>;
}

/** Where notifications go. `send` may fail (its error is reported, never thrown to a turn). */
export interface NotificationSink {
  /** For messages: `webhook https://ntfy.sh`, `desktop`, `hooks`. Never holds a secret. */
  readonly name: string;
  send(notification: Notification): Promise<void>;
}

/** Time as the notifier sees it: injected so tests advance it instead of sleeping. */
export interface NotifierClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock; timers do not keep the process alive. */
export const systemClock: NotifierClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Options of a `Notifier`. */
export interface NotifierOptions {
  sinks: NotificationSink[];
  /** How long an item waits before it is sent, so an answer on another client can cancel it (default 10 s). */
  delayMs?: number;
  /** After a notification, the next waits at least this long, gathering what came meanwhile into one (default 30 s). */
  coalesceMs?: number;
  /** The web UI's address (no token): links are this plus an item's route. */
  webUrl?: string;
  /** Values that must never leave in a notification (tokens, webhook secrets): replaced by `[redacted]`. */
  secrets?: readonly string[];
  clock?: NotifierClock;
  /** Where a sink's failure is reported (a log line naming the sink, never its secret). */
  onProblem?: (line: string) => void;
}

/** Default grace delay before a notification goes out. */
export const DEFAULT_NOTIFICATION_DELAY_MS = 10_000;
/** Default coalescing window between two notifications. */
export const DEFAULT_NOTIFICATION_COALESCE_MS = 30_000;
/** Keys remembered as sent, so the same thing is not notified twice; older ones are forgotten. */
const REMEMBERED_KEYS = 2_000;

/**
 * Holds, gathers and sends notifications. `notify` an item when something starts waiting and
 * `resolve` its key when it was answered: an item answered within the grace delay is never sent.
 * When the first item's delay is over, everything waiting then goes out as one notification; the
 * next one waits until the coalescing window after it has passed.
 */
export class Notifier {
  private readonly clock: NotifierClock;
  private readonly delayMs: number;
  private readonly coalesceMs: number;
  private readonly pending = new Map<string, { item: AttentionItem; dueAt: number }>();
  private readonly sent = new Set<string>();
  private readonly sinks: NotificationSink[];
  private timer: unknown;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private webUrl: string | undefined;
  private closed = false;
  private readonly deliveries = new Set<Promise<void>>();
  private readonly secrets: string[];

  constructor(private readonly options: NotifierOptions) {
    this.clock = options.clock ?? systemClock;
    this.delayMs = options.delayMs ?? DEFAULT_NOTIFICATION_DELAY_MS;
    this.coalesceMs = options.coalesceMs ?? DEFAULT_NOTIFICATION_COALESCE_MS;
    this.sinks = [...options.sinks];
    this.webUrl = options.webUrl;
    this.secrets = (options.secrets ?? []).filter((secret) => secret.length >= 4);
  }

  /** A value that must never leave in a notification (the server's token, known once it started). */
  addSecret(secret: string): void {
    if (secret.length >= 4 && !this.secrets.includes(secret)) this.secrets.push(secret);
  }

  /** Adds a sink (the server adds its web UI's once it listens). */
  addSink(sink: NotificationSink): void {
    this.sinks.push(sink);
  }

  /** The web UI's address, when it is known only once the server listens; a configured one wins. */
  setWebUrl(url: string): void {
    this.webUrl ??= url;
  }

  /** Whether an item is waiting to be sent. */
  isPending(key: string): boolean {
    return this.pending.has(key);
  }

  /** Something waits: it is sent after the grace delay unless `resolve`d first. A key already waiting or sent is ignored. */
  notify(item: AttentionItem): void {
    if (this.closed || this.pending.has(item.key) || this.sent.has(item.key)) return;
    this.pending.set(item.key, { item, dueAt: this.clock.now() + this.delayMs });
    this.schedule();
  }

  /** It was answered (on any client): if it is still waiting, it is not sent. */
  resolve(key: string): void {
    if (!this.pending.delete(key)) return;
    this.schedule();
  }

  /** Resolves every waiting item whose key starts with `prefix` (a session's, a run's). */
  resolvePrefix(prefix: string): void {
    let changed = false;
    for (const key of [...this.pending.keys()])
      if (key.startsWith(prefix)) changed = this.pending.delete(key) || changed;
    if (changed) this.schedule();
  }

  /** Where notifications go, for a settings view: sinks by name (never a secret), delays in seconds. */
  describe(): { delaySeconds: number; coalesceSeconds: number; webUrl?: string; sinks: string[] } {
    return {
      delaySeconds: this.delayMs / 1000,
      coalesceSeconds: this.coalesceMs / 1000,
      ...(this.webUrl ? { webUrl: this.webUrl } : {}),
      sinks: this.sinks.map((sink) => sink.name),
    };
  }

  /** Sends a test notification through every sink now (no delay, no coalescing) and says what each did. */
  async sendTest(): Promise<Array<{ name: string; ok: boolean; error?: string }>> {
    const notification = this.redact(
      summarize(
        [
          {
            key: `test:${this.clock.now()}`,
            kind: 'turn_ended',
            title: 'Parley test notification',
            message: 'Notifications from this Parley server reach you here.',
            who: 'Parley',
            where: 'notification settings',
            route: '',
          },
        ],
        this.webUrl,
      ),
    );
    return Promise.all(
      this.sinks.map((sink) =>
        sink.send(notification).then(
          () => ({ name: sink.name, ok: true }),
          (error: unknown) => ({
            name: sink.name,
            ok: false,
            error: this.redactText(error instanceof Error ? error.message : String(error)),
          }),
        ),
      ),
    );
  }

  /** Stops: nothing waiting is sent; resolves once deliveries under way have ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.pending.clear();
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.deliveries]);
  }

  /** Resolves once every delivery started so far has ended (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.deliveries.size > 0) await Promise.allSettled([...this.deliveries]);
  }

  private schedule(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0 || this.closed) return;
    let firstDue = Number.POSITIVE_INFINITY;
    for (const { dueAt } of this.pending.values()) firstDue = Math.min(firstDue, dueAt);
    const at = Math.max(firstDue, this.lastSentAt + this.coalesceMs);
    this.timer = this.clock.setTimeout(() => this.flush(), Math.max(0, at - this.clock.now()));
  }

  private flush(): void {
    this.timer = undefined;
    if (this.closed || this.pending.size === 0) return;
    const items = [...this.pending.values()].map(({ item }) => item);
    this.pending.clear();
    for (const item of items) this.remember(item.key);
    this.lastSentAt = this.clock.now();
    const notification = this.redact(summarize(items, this.webUrl));
    for (const sink of this.sinks) {
      const delivery = sink.send(notification).then(
        () => undefined,
        (error: unknown) =>
          this.options.onProblem?.(
            `notifications: ${sink.name} failed: ${this.redactText(error instanceof Error ? error.message : String(error))}`,
          ),
      );
      this.deliveries.add(delivery);
      void delivery.finally(() => this.deliveries.delete(delivery));
    }
  }

  private remember(key: string): void {
    this.sent.add(key);
    if (this.sent.size > REMEMBERED_KEYS) this.sent.delete(this.sent.values().next().value!);
  }

  private redact(notification: Notification): Notification {
    if (this.secrets.length === 0) return notification;
    return JSON.parse(this.redactText(JSON.stringify(notification))) as Notification;
  }

  private redactText(text: string): string {
    let result = text;
    for (const secret of this.secrets) {
      // Secrets are opaque strings: JSON escaping leaves these characters as they are.
      result = result.split(secret).join('[redacted]');
    }
    return result;
  }
}

/** The web UI's link for a route, from the server's address without its query (the token stays out). */
export function linkFor(webUrl: string | undefined, route: string): string | undefined {
  if (!webUrl) return undefined;
  const url = new URL(webUrl);
  url.search = '';
  url.hash = route.startsWith('#') ? route.slice(1) : route;
  return url.toString();
}

/** One item as it is; a burst as "3 things wait for you" with a line each. */
export function summarize(items: readonly AttentionItem[], webUrl?: string): Notification {
  const linked = items.map((item) => {
    const link = linkFor(webUrl, item.route);
    return { ...item, ...(link ? { link } : {}) };
  });
  const first = linked[0]!;
  if (linked.length === 1)
    return {
      kind: first.kind,
      title: first.title,
      message: `${first.message}\n${first.who} · ${first.where}`,
      ...(first.link ? { link: first.link } : {}),
      items: linked,
    };
  const shown = linked.slice(0, 8).map((item) => `• ${item.title} (${item.who} · ${item.where})`);
  if (linked.length > shown.length) shown.push(`… and ${linked.length - shown.length} more`);
  return {
    kind: first.kind,
    title: `${linked.length} things wait for you in Parley`,
    message: shown.join('\n'),
    ...(first.link ? { link: first.link } : {}),
    items: linked,
  };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The body styles of the built-in webhook. */
export const WEBHOOK_FORMATS = ['ntfy', 'slack', 'discord', 'json'] as const;
/** How a webhook's body is shaped: ntfy's topic URLs, Slack's or Discord's incoming webhooks, or Parley's JSON. */
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** One built-in webhook: its URL (or the variable holding it: Slack and Discord URLs are secrets) and its style. */
export const NotificationWebhookSchema = z
  .object({
    url: z
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL')
      .optional(),
    /** The environment variable holding the URL, for URLs that are themselves secrets. */
    urlEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    /** Default: from the URL (hooks.slack.com: slack; discord.com/api/webhooks: discord; else ntfy). */
    format: z.enum(WEBHOOK_FORMATS).optional(),
    /** `json` only: the variable holding the HMAC secret for `x-parley-signature`. */
    secretEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    timeout: z.number().positive().max(300).optional(),
  })
  .strict()
  .refine((value) => (value.url === undefined) !== (value.urlEnv === undefined), {
    message: 'needs exactly one of url or urlEnv',
  });
/** One configured webhook sink. */
export type NotificationWebhook = z.infer<typeof NotificationWebhookSchema>;

/** What `notifications` in parley.config.json or the user's config.json says. */
export interface NotificationSettings {
  webhooks: NotificationWebhook[];
  /** Desktop notifications through `notify-send` (default true; skipped when it is not installed). */
  desktop: boolean;
  delaySeconds?: number;
  coalesceSeconds?: number;
  /** The web UI's address links use (e.g. the https address a phone reaches); default: the server's own. */
  webUrl?: string;
}

const SCALARS = {
  desktop: z.boolean(),
  delaySeconds: z.number().min(0).max(3600),
  coalesceSeconds: z.number().min(0).max(3600),
  webUrl: z.url().refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL'),
} as const;

/** The settings with nothing configured. */
export function defaultNotificationSettings(): NotificationSettings {
  return { webhooks: [], desktop: true };
}

/**
 * Reads a `notifications` object leniently, like `hooks`: each bad field or webhook is reported in
 * `problems` (file and field) and left out; the rest applies. `base` is what an earlier file said.
 */
export function parseNotificationSettings(
  value: unknown,
  file: string,
  base: NotificationSettings = defaultNotificationSettings(),
): { settings: NotificationSettings; problems: string[] } {
  const settings: NotificationSettings = { ...base, webhooks: [...base.webhooks] };
  const problems: string[] = [];
  if (value === undefined) return { settings, problems };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(
      `${file}: notifications: must be an object ({ webhooks, desktop, delaySeconds, coalesceSeconds, webUrl }).`,
    );
    return { settings, problems };
  }
  for (const [key, field] of Object.entries(value)) {
    if (key === 'webhooks') {
      if (!Array.isArray(field)) {
        problems.push(`${file}: notifications.webhooks: must be a list of { url | urlEnv, format } entries.`);
        continue;
      }
      field.forEach((entry: unknown, index) => {
        const parsed = NotificationWebhookSchema.safeParse(entry);
        if (!parsed.success) {
          const issues = parsed.error.issues.map((issue) => ({
            ...issue,
            path: [`notifications.webhooks[${index}]`, ...issue.path],
          }));
          problems.push(`${file}: ${describeIssues(issues)}; this webhook is left out.`);
          return;
        }
        const same = settings.webhooks.some(
          (known) => known.url === parsed.data.url && known.urlEnv === parsed.data.urlEnv,
        );
        if (!same) settings.webhooks.push(parsed.data);
      });
      continue;
    }
    if (!(key in SCALARS)) {
      problems.push(
        `${file}: notifications.${key}: is not a setting; use webhooks, desktop, delaySeconds, coalesceSeconds or webUrl.`,
      );
      continue;
    }
    const parsed = SCALARS[key as keyof typeof SCALARS].safeParse(field);
    if (!parsed.success) {
      problems.push(
        `${file}: notifications.${key}: ${parsed.error.issues[0]?.message ?? 'is not valid'}; it is ignored.`,
      );
      continue;
    }
    (settings as unknown as Record<string, unknown>)[key] = parsed.data;
  }
  return { settings, problems };
}

/** The webhook's style: the configured one, else guessed from the URL's host. */
export function webhookFormat(webhook: NotificationWebhook, url: string): WebhookFormat {
  if (webhook.format) return webhook.format;
  const parsed = new URL(url);
  if (parsed.hostname === 'hooks.slack.com') return 'slack';
  if (/(^|\.)discord(app)?\.com$/.test(parsed.hostname) && parsed.pathname.startsWith('/api/webhooks'))
    return 'discord';
  return 'ntfy';
}
