import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import {
  DEFAULT_HOOK_TIMEOUT_SECONDS,
  type ConfiguredHook,
  type HookDefinition,
  type HookEventName,
} from './config.js';

/** The header an HTTP hook's signature is in: `sha256=<hex HMAC-SHA256 of the body>`. */
export const SIGNATURE_HEADER = 'x-parley-signature';
/** The header naming the event of an HTTP hook's POST. */
export const EVENT_HEADER = 'x-parley-event';

/**
 * What every hook's input carries, in Claude Code's field names so its scripts read it unchanged;
 * each event adds its own fields (`prompt`, `tool_name`, `tool_input`, `tool_response`, ...).
 */
export interface HookInput {
  session_id: string;
  /** Where the session's history is (Parley's log, or the native transcript of a native back end). */
  transcript_path?: string;
  cwd: string;
  hook_event_name: HookEventName;
  [field: string]: unknown;
}

/** A hook that did not do its job: which one, and why. The turn goes on. */
export interface HookFailure {
  /** The file and field that configured it. */
  source: string;
  /** The command or URL. */
  target: string;
  reason: string;
}

/** What the hooks of one event decided. */
export interface HookOutcome {
  /** Set when a hook blocked (exit code 2, or `"decision": "block"`): its reason, from its standard error. */
  blocked?: { reason: string; source: string };
  /** Text the hooks added for the model (exit 0 standard output, or `additionalContext`), in order. */
  context: string[];
  failures: HookFailure[];
}

/** Options of a `HookRunner`: the hooks, the environment their commands and secrets come from. */
export interface HookRunnerOptions {
  hooks: readonly ConfiguredHook[];
  /** Default: `process.env`. Commands inherit it; HTTP hooks read their secrets from it. */
  env?: Record<string, string | undefined>;
  /** The project folder: commands run in it and get it as `PARLEY_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR`). */
  projectDir?: string;
}

/** Options of one `run`: the tool name a matcher selects by, and an `AbortSignal`. */
export interface HookRunOptions {
  /** What the matcher is tested against (the tool name for tool events, the trigger for compaction). */
  matchValue?: string;
  signal?: AbortSignal;
}

/** Cap on what a hook's output may be: more is cut, so a runaway script cannot fill memory. */
const MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * Runs the configured hooks of an event. A hook that exits non-zero (other than 2), hangs past
 * its timeout, cannot start or prints unreadable JSON is a `failure`, never a thrown error: the
 * caller reports it and goes on. The hooks of one event run at once, as Claude Code runs them.
 */
export class HookRunner {
  private readonly env: Record<string, string | undefined>;

  constructor(private readonly options: HookRunnerOptions) {
    this.env = options.env ?? process.env;
  }

  /** Whether any hook is configured for `event` (callers skip building inputs otherwise). */
  has(event: HookEventName, matchValue?: string): boolean {
    return this.select(event, matchValue).length > 0;
  }

  async run(input: HookInput, options: HookRunOptions = {}): Promise<HookOutcome> {
    const selected = this.select(input.hook_event_name, options.matchValue);
    const outcome: HookOutcome = { context: [], failures: [] };
    if (selected.length === 0) return outcome;
    const body = JSON.stringify(input);
    const results = await Promise.all(selected.map((configured) => this.runOne(configured, body, options.signal)));
    for (const [index, result] of results.entries()) {
      const configured = selected[index]!;
      if (result.failure)
        outcome.failures.push({ source: configured.source, target: target(configured.hook), reason: result.failure });
      if (result.context) outcome.context.push(result.context);
      if (result.block !== undefined && !outcome.blocked)
        outcome.blocked = { reason: result.block, source: configured.source };
    }
    return outcome;
  }

  private select(event: HookEventName, matchValue: string | undefined): ConfiguredHook[] {
    const seen = new Set<string>();
    return this.options.hooks.filter((configured) => {
      if (configured.event !== event) return false;
      if (configured.matcher && matchValue !== undefined && !configured.matcher.test(matchValue)) return false;
      // The same command in the user's and the project's file runs once.
      const key = `${configured.hook.type}\u0000${configured.hook.type === 'command' ? configured.hook.command : configured.hook.url}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  private async runOne(configured: ConfiguredHook, body: string, signal: AbortSignal | undefined): Promise<HookResult> {
    const timeoutMs = (configured.hook.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS) * 1000;
    try {
      return configured.hook.type === 'command'
        ? await this.runCommand(configured.hook.command, body, timeoutMs, signal)
        : await this.runHttp(configured.hook, body, timeoutMs, signal);
    } catch (error) {
      return { failure: error instanceof Error ? error.message : String(error) };
    }
  }

  private runCommand(
    command: string,
    body: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HookResult> {
    return new Promise((resolvePromise) => {
      const projectDir = this.options.projectDir;
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: projectDir,
        env: { ...this.env, ...(projectDir ? { PARLEY_PROJECT_DIR: projectDir, CLAUDE_PROJECT_DIR: projectDir } : {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group, so a timeout kills what the script started too.
        detached: true,
      });
      const stdout = new OutputBuffer();
      const stderr = new OutputBuffer();
      child.stdout.on('data', (chunk: Buffer) => stdout.add(chunk));
      child.stderr.on('data', (chunk: Buffer) => stderr.add(chunk));
      let ended: string | undefined;
      const kill = (why: string): void => {
        ended ??= why;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      };
      const timer = setTimeout(() => kill(`did not finish within ${timeoutMs / 1000} s and was stopped`), timeoutMs);
      const onAbort = (): void => kill('was stopped because the turn was cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      // A script that never reads its input must not fail on a closed pipe.
      child.stdin.on('error', () => undefined);
      child.stdin.end(body);
      const finish = (result: HookResult): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolvePromise(result);
      };
      child.on('error', (error) => finish({ failure: `could not start (${error.message})` }));
      child.on('close', (code, killedBy) => {
        if (ended) return finish({ failure: ended });
        const errorText = stderr.text().trim();
        if (code === 2)
          return finish({ block: errorText || 'blocked by a hook (it gave no reason on standard error)' });
        if (code !== 0)
          return finish({
            failure: `exited with ${code === null ? `signal ${killedBy}` : `code ${code}`}${errorText ? `: ${firstLines(errorText)}` : ''}`,
          });
        finish(readOutput(stdout.text()));
      });
    });
  }

  private async runHttp(
    hook: Extract<HookDefinition, { type: 'http' }>,
    body: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HookResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const event = (JSON.parse(body) as HookInput).hook_event_name;
    headers[EVENT_HEADER] = event;
    if (hook.secretEnv) {
      const secret = this.env[hook.secretEnv];
      if (!secret) return { failure: `its secret variable ${hook.secretEnv} is not set, so nothing was sent` };
      headers[SIGNATURE_HEADER] = signBody(body, secret);
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(hook.url, {
        method: 'POST',
        headers,
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        redirect: 'error',
      });
    } catch (error) {
      if (timeout.aborted) return { failure: `did not answer within ${timeoutMs / 1000} s` };
      const cause = (error as { cause?: { message?: string } }).cause?.message;
      return { failure: `could not be reached (${cause ?? (error as Error).message})` };
    }
    const text = (await response.text()).slice(0, MAX_OUTPUT_BYTES);
    if (!response.ok) return { failure: `answered ${response.status} ${response.statusText}`.trim() };
    const contentType = response.headers.get('content-type') ?? '';
    // Only a JSON answer can decide anything; a plain "ok" is success with nothing to add.
    return contentType.includes('json') ? readOutput(text) : {};
  }
}

/** `sha256=<hex>`: the HMAC-SHA256 of the exact body with the secret, as GitHub signs its webhooks. */
export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

interface HookResult {
  block?: string;
  context?: string;
  failure?: string;
}

/**
 * Reads exit-0 output as Claude Code does: JSON (`decision: "block"` with `reason`,
 * `hookSpecificOutput.additionalContext`, `permissionDecision: "deny"`) when it looks like JSON,
 * plain text added as context otherwise. Output that starts as JSON and is not is a failure.
 */
function readOutput(stdout: string): HookResult {
  const text = stdout.trim();
  if (text === '') return {};
  if (!text.startsWith('{')) {
    if (/[\u0000-\u0008\u000e-\u001f]/.test(text))
      return { failure: 'printed output that is not text (control characters); it was ignored' };
    return { context: text };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { failure: `printed output that is not valid JSON (${(error as Error).message}); it was ignored` };
  }
  if (typeof data !== 'object' || data === null) return {};
  const record = data as Record<string, unknown>;
  const specific = (record['hookSpecificOutput'] ?? {}) as Record<string, unknown>;
  const result: HookResult = {};
  const context = specific['additionalContext'];
  if (typeof context === 'string' && context.trim()) result.context = context.trim();
  const reason =
    stringField(specific['permissionDecisionReason']) ?? stringField(record['reason']) ?? 'blocked by a hook';
  if (record['decision'] === 'block' || specific['permissionDecision'] === 'deny') result.block = reason;
  return result;
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

/** What a message names a hook by: its command, or only its URL's origin (a webhook's path is often its secret). */
function target(hook: HookDefinition): string {
  if (hook.type === 'command') return hook.command;
  return `POST ${new URL(hook.url).origin}`;
}

function firstLines(text: string): string {
  const lines = text.split('\n').slice(0, 5).join('\n');
  return lines.length > 500 ? `${lines.slice(0, 500)}…` : lines;
}

class OutputBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  add(chunk: Buffer): void {
    if (this.size >= MAX_OUTPUT_BYTES) return;
    this.chunks.push(chunk.subarray(0, MAX_OUTPUT_BYTES - this.size));
    this.size += chunk.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** One line for a system block: which hook failed and why. */
export function describeFailure(event: HookEventName, failure: HookFailure): string {
  return `The ${event} hook \`${failure.target}\` (${failure.source}) failed: ${failure.reason}. The turn went on without it.`;
}
