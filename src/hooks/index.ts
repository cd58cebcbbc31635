/**
 * Hooks: people's own commands and webhooks, run on session events with Claude Code's contract
 * (event JSON on standard input; exit 0 is success, exit 2 blocks with standard error as the
 * reason). Depends only on conversation/, so every layer that has an event to report can run them.
 */
export {
  compileMatcher,
  CommandHookSchema,
  DEFAULT_HOOK_TIMEOUT_SECONDS,
  HOOK_EVENTS,
  HookMatcherSchema,
  HookSchema,
  HttpHookSchema,
  loadHooksConfig,
  parseHooksConfig,
  userConfigPath,
  type ConfiguredHook,
  type HookDefinition,
  type HookEventName,
  type HooksConfig,
  type LoadHooksOptions,
} from './config.js';
export {
  describeFailure,
  EVENT_HEADER,
  HookRunner,
  signBody,
  SIGNATURE_HEADER,
  type HookFailure,
  type HookInput,
  type HookOutcome,
  type HookRunnerOptions,
  type HookRunOptions,
} from './runner.js';
export {
  DEFAULT_NOTIFICATION_COALESCE_MS,
  DEFAULT_NOTIFICATION_DELAY_MS,
  defaultNotificationSettings,
  linkFor,
  NOTIFICATION_KINDS,
  NotificationWebhookSchema,
  Notifier,
  parseNotificationSettings,
  summarize,
  systemClock,
  WEBHOOK_FORMATS,
  webhookFormat,
  type AttentionItem,
  type Notification,
  type NotificationKind,
  type NotificationSettings,
  type NotificationSink,
  type NotificationWebhook,
  type NotifierClock,
  type NotifierOptions,
  type WebhookFormat,
} from './notifications.js';
export {
  desktopSink,
  findOnPath,
  hookSink,
  settingsSinks,
  webhookRequest,
  webhookSink,
  type SinkOptions,
  type WebhookRequest,
} from './notification-sinks.js';
