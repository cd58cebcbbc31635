import {
  hookSink,
  HookRunner,
  loadHooksConfig,
  Notifier,
  settingsSinks,
  type NotificationSettings,
} from '../hooks/index.js';

/**
 * The hooks of the user's file and the project's `parley.config.json`, as a runner for the session
 * manager; undefined when none is configured. Each bad entry is reported through `warn` and left
 * out: a typo in one hook never stops Parley.
 */
export async function loadProjectHooks(
  projectRoot: string,
  warn: (line: string) => void,
): Promise<HookRunner | undefined> {
  return (await loadProjectAutomation(projectRoot, warn)).hooks;
}

/** The hooks, and the notifier their files' `notifications` ask for (`parley serve`). */
export async function loadProjectAutomation(
  projectRoot: string,
  warn: (line: string) => void,
  env: Record<string, string | undefined> = process.env,
): Promise<{ hooks: HookRunner | undefined; notifier: Notifier }> {
  const config = await loadHooksConfig({ projectDir: projectRoot, env });
  for (const problem of config.problems) warn(`hooks: ${problem}`);
  const hooks =
    config.hooks.length > 0 ? new HookRunner({ hooks: config.hooks, projectDir: projectRoot, env }) : undefined;
  const settings = config.notifications ?? { webhooks: [], desktop: true };
  return { hooks, notifier: notifierFor(settings, hooks, projectRoot, warn, env) };
}

/** A notifier whose sinks are the settings' webhooks, the desktop, and people's `Notification` hooks. */
export function notifierFor(
  settings: NotificationSettings,
  hooks: HookRunner | undefined,
  projectRoot: string,
  warn: (line: string) => void,
  env: Record<string, string | undefined> = process.env,
): Notifier {
  const sinks = settingsSinks(settings, { env });
  if (hooks?.has('Notification')) sinks.push(hookSink(hooks, projectRoot, warn));
  // The values behind the variables a webhook names are secrets: none may leave in a message.
  const secrets = settings.webhooks
    .flatMap((webhook) => [webhook.urlEnv, webhook.secretEnv])
    .map((name) => (name ? env[name] : undefined))
    .filter((value): value is string => value !== undefined && value.length > 0);
  return new Notifier({
    sinks,
    secrets,
    ...(settings.delaySeconds !== undefined ? { delayMs: settings.delaySeconds * 1000 } : {}),
    ...(settings.coalesceSeconds !== undefined ? { coalesceMs: settings.coalesceSeconds * 1000 } : {}),
    ...(settings.webUrl ? { webUrl: settings.webUrl } : {}),
    onProblem: warn,
  });
}
