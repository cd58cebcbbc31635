import * as z from 'zod';

/** What waits for a person, as `attention_needed` carries it (the hooks layer's `Notification`). */
export const AttentionKindSchema = z.enum([
  'permission_request',
  'run_question',
  'turn_ended',
  'worker_failed',
  'run_failed',
  'schedule_failed',
  'compaction_fallback',
  'goal_ended',
]);

/** One thing that waits: what, who, where, and the web UI's route to it. */
export const AttentionItemWireSchema = z.object({
  key: z
    .string()
    .describe('Identifies it: `permission:<session>:<request>`, `question:<run>:<prompt>`, `turn:<session>:<n>` …'),
  kind: AttentionKindSchema,
  title: z.string(),
  message: z.string(),
  who: z.string().describe('The role, worker or workflow that waits.'),
  where: z.string().describe('The project and task, or the run.'),
  sessionId: z.string().optional(),
  runId: z.string().optional(),
  scheduleId: z.string().optional(),
  channelId: z.string().optional(),
  route: z
    .string()
    .describe(
      'The web UI fragment that opens it: `#session=<id>`, `#run=<id>`, `#schedule=<id>`, `#approval=<session>/<request>`.',
    ),
  link: z.string().optional().describe("The web UI's address with the route (never the token)."),
});

/** `attention_needed`: one notification, of one item or of a burst gathered into one. */
export const AttentionNeededSchema = z.object({
  kind: AttentionKindSchema.describe("The first item's kind."),
  title: z.string(),
  message: z.string(),
  link: z.string().optional(),
  items: z.array(AttentionItemWireSchema),
});
/** A notification that something waits for a person. */
export type AttentionNeeded = z.infer<typeof AttentionNeededSchema>;

/** `get_notification_settings`: no params. */
export const GetNotificationSettingsParamsSchema = z.object({}).strict();
/** Where this server's notifications go: never a webhook's path or a secret, only what names it. */
export const GetNotificationSettingsResultSchema = z.object({
  enabled: z.boolean().describe('False on a server started without a notifier (a library caller that gave none).'),
  delaySeconds: z
    .number()
    .nonnegative()
    .describe('The grace delay: an answer on any client within it cancels the notification.'),
  coalesceSeconds: z
    .number()
    .nonnegative()
    .describe('The least time between two notifications; what comes meanwhile goes out as one.'),
  webUrl: z.string().optional().describe("The address links use (the server's own unless configured)."),
  sinks: z
    .array(z.string())
    .describe(
      'Each sink by name: `webhook https://ntfy.sh` (the origin only), `desktop (notify-send)`, `Notification hooks`, `web UI`.',
    ),
});

/** `send_test_notification`: no params. */
export const SendTestNotificationParamsSchema = z.object({}).strict();
/** What each sink did with a test notification sent at once (no grace delay, no coalescing). */
export const SendTestNotificationResultSchema = z.object({
  sinks: z.array(
    z.object({
      name: z.string(),
      ok: z.boolean(),
      error: z.string().optional().describe('Why it failed, secrets removed.'),
    }),
  ),
});
