import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';
import { defaultNotificationSettings, parseNotificationSettings, type NotificationSettings } from './notifications.js';

/**
 * Hooks are configured as Claude Code configures them, so a `hooks` object copied from
 * `.claude/settings.json` works here: `{ "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks":
 * [{ "type": "command", "command": "./check.sh", "timeout": 30 }] }] } }`. Parley adds the `http`
 * type: a signed POST of the same JSON.
 */
export const HOOK_EVENTS = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'PreCompact',
  'PostCompact',
  'Stop',
  'Notification',
  'RunUpdate',
  'WorkerEnd',
] as const;
/** The events a hook can run on. */
export type HookEventName = (typeof HOOK_EVENTS)[number];

/** Seconds a hook may run when its entry names no `timeout` (Claude Code's default too). */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 60;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A shell command given the event's JSON on standard input. */
export const CommandHookSchema = z
  .object({
    type: z.literal('command'),
    command: z.string().trim().min(1, 'must be a non-empty shell command'),
    /** Seconds before the command is killed and counted as failed. */
    timeout: z.number().positive().max(3600).optional(),
  })
  .strict();

/** A POST of the event's JSON, signed with an HMAC-SHA256 of a secret kept in an environment variable. */
export const HttpHookSchema = z
  .object({
    type: z.literal('http'),
    url: z.url().refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL'),
    /** The environment variable holding the signing secret (secrets never go in the file). */
    secretEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    timeout: z.number().positive().max(3600).optional(),
  })
  .strict();

/** One hook: a command or a webhook. */
export const HookSchema = z.discriminatedUnion('type', [CommandHookSchema, HttpHookSchema]);
/** One configured hook. */
export type HookDefinition = z.infer<typeof HookSchema>;

/** A group of hooks under one matcher (a regular expression over tool names; none or `*` matches all). */
export const HookMatcherSchema = z
  .object({
    matcher: z
      .string()
      .optional()
      .refine(
        (value) => value === undefined || compileMatcher(value) !== undefined,
        'is not a valid regular expression',
      ),
    hooks: z.array(z.unknown()).min(1, 'must list at least one hook'),
  })
  .strict();

/** One hook as it runs: the event, the matcher, the hook, and the file that configured it. */
export interface ConfiguredHook {
  event: HookEventName;
  /** Compiled from the entry's `matcher`; undefined matches everything. */
  matcher: RegExp | undefined;
  hook: HookDefinition;
  /** The file and field, for messages: `parley.config.json hooks.PreToolUse[0].hooks[1]`. */
  source: string;
}

/** What reading a `hooks` object gives: the hooks that parsed, and one line per entry left out. */
export interface HooksConfig {
  hooks: ConfiguredHook[];
  /** Each bad entry: the file, the field and what is wrong. The rest of the file still applies. */
  problems: string[];
  /** `notifications` of the same files (`loadHooksConfig` reads them; the project's scalars win). */
  notifications?: NotificationSettings;
}

/**
 * Reads a `hooks` object leniently: each bad entry is reported in `problems` (naming the file and
 * the field) and left out, so one typo costs one hook, not the session.
 */
export function parseHooksConfig(value: unknown, file: string): HooksConfig {
  const result: HooksConfig = { hooks: [], problems: [] };
  if (value === undefined) return result;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    result.problems.push(
      `${file}: hooks: must be an object of events (${HOOK_EVENTS.join(', ')}); no hook from it runs.`,
    );
    return result;
  }
  for (const [event, groups] of Object.entries(value)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      result.problems.push(`${file}: hooks.${event}: is not an event; use one of ${HOOK_EVENTS.join(', ')}.`);
      continue;
    }
    if (!Array.isArray(groups)) {
      result.problems.push(`${file}: hooks.${event}: must be a list of { matcher, hooks } entries.`);
      continue;
    }
    groups.forEach((group: unknown, groupIndex) => {
      const field = `hooks.${event}[${groupIndex}]`;
      const parsedGroup = HookMatcherSchema.safeParse(group);
      if (!parsedGroup.success) {
        result.problems.push(`${file}: ${prefixIssues(field, parsedGroup.error.issues)}; this entry is left out.`);
        return;
      }
      const matcher = parsedGroup.data.matcher === undefined ? undefined : compileMatcher(parsedGroup.data.matcher);
      parsedGroup.data.hooks.forEach((hook, hookIndex) => {
        const hookField = `${field}.hooks[${hookIndex}]`;
        const parsedHook = HookSchema.safeParse(hook);
        if (!parsedHook.success) {
          result.problems.push(`${file}: ${prefixIssues(hookField, parsedHook.error.issues)}; this hook is left out.`);
          return;
        }
        result.hooks.push({
          event: event as HookEventName,
          matcher,
          hook: parsedHook.data,
          source: `${file} ${hookField}`,
        });
      });
    });
  }
  return result;
}

/** Options of `loadHooksConfig`: the project folder and where the user's own file is. */
export interface LoadHooksOptions {
  /** The folder holding `parley.config.json`. */
  projectDir?: string;
  /** An explicit project config file instead of `<projectDir>/parley.config.json`. */
  configFile?: string;
  /** Default: `process.env` (for `PARLEY_CONFIG_HOME`, `XDG_CONFIG_HOME`, `HOME`). */
  env?: Record<string, string | undefined>;
  /** Skip the user's file (tests, a server that must see only its project's hooks). */
  skipUserConfig?: boolean;
}

/**
 * The user's own config file: `$PARLEY_CONFIG_HOME/config.json`, else
 * `$XDG_CONFIG_HOME/parley/config.json`, else `~/.config/parley/config.json`.
 */
export function userConfigPath(env: Record<string, string | undefined> = process.env): string {
  if (env['PARLEY_CONFIG_HOME']?.trim()) return join(resolve(env['PARLEY_CONFIG_HOME']), 'config.json');
  const base = env['XDG_CONFIG_HOME']?.trim()
    ? resolve(env['XDG_CONFIG_HOME'])
    : join(env['HOME'] ?? homedir(), '.config');
  return join(base, 'parley', 'config.json');
}

/**
 * Reads the hooks of the user's file and then the project's `parley.config.json` (both run; the
 * user's first, as Claude Code runs user settings before project ones). A file that is missing has
 * no hooks; one that does not parse is reported in `problems` and contributes none.
 */
export async function loadHooksConfig(options: LoadHooksOptions = {}): Promise<HooksConfig> {
  const env = options.env ?? process.env;
  const files: string[] = [];
  if (!options.skipUserConfig) files.push(userConfigPath(env));
  files.push(
    options.configFile ? resolve(options.configFile) : join(resolve(options.projectDir ?? '.'), 'parley.config.json'),
  );
  const merged: HooksConfig = { hooks: [], problems: [], notifications: defaultNotificationSettings() };
  for (const file of files) {
    const read = await readHooksFile(file, merged.notifications);
    merged.hooks.push(...read.hooks);
    merged.problems.push(...read.problems);
    if (read.notifications) merged.notifications = read.notifications;
  }
  return merged;
}

async function readHooksFile(file: string, notifications?: NotificationSettings): Promise<HooksConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks: [], problems: [] };
    return { hooks: [], problems: [`${file}: cannot be read (${(error as Error).message}); no hook from it runs.`] };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return {
      hooks: [],
      problems: [`${file}: is not valid JSON (${jsonErrorWhere(text, error)}); no hook from it runs.`],
    };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { hooks: [], problems: [] };
  const parsed = parseHooksConfig((data as Record<string, unknown>)['hooks'], file);
  const settings = parseNotificationSettings((data as Record<string, unknown>)['notifications'], file, notifications);
  return {
    hooks: parsed.hooks,
    problems: [...parsed.problems, ...settings.problems].map((problem) => withLine(problem, text)),
    notifications: settings.settings,
  };
}

/** Adds the line of the entry's key (an event, a notification setting), so a person finds it in a long file. */
function withLine(problem: string, text: string): string {
  // After the file's name, which may itself contain "hooks".
  const match = /^(hooks|notifications)(?:\.([A-Za-z]+))?/.exec(problem.slice(problem.indexOf(': ') + 2));
  const key = match?.[2] ?? match?.[1];
  if (!key) return problem;
  const index = text.indexOf(`"${key}"`);
  if (index === -1) return problem;
  const line = text.slice(0, index).split('\n').length;
  return problem.replace(/^([^:]+): /, `$1 (line ${line}): `);
}

/** JSON.parse's message with the line it points at, when it names a position. */
function jsonErrorWhere(text: string, error: unknown): string {
  const full = (error as Error).message;
  // V8 quotes short inputs whole in its message: keep it to a line's length.
  const message = full.length > 200 ? `${full.slice(0, 200)}…` : full;
  const position = /position (\d+)/.exec(full)?.[1];
  if (position === undefined) return message;
  const line = text.slice(0, Number(position)).split('\n').length;
  return `line ${line}: ${message}`;
}

function prefixIssues(
  field: string,
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>,
): string {
  return describeIssues(issues.map((issue) => ({ ...issue, path: [field, ...issue.path] })));
}

/** A matcher as Claude Code reads it: empty or `*` matches every tool, anything else is an anchored regular expression. */
export function compileMatcher(matcher: string): RegExp | undefined {
  const trimmed = matcher.trim();
  if (trimmed === '' || trimmed === '*') return /^/;
  try {
    return new RegExp(`^(?:${trimmed})$`);
  } catch {
    return undefined;
  }
}
