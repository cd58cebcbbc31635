import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import type { UnsequencedEvent, TurnMetadata } from '../../conversation/index.js';
import type {
  AgentBackend,
  AgentProfile,
  AgentTurn,
  BackendDescription,
  ExecuteRequest,
  ModelInfo,
  ParsedTranscripts,
  RawTranscripts,
  Workspace,
} from '../agent-backend.js';
import { describeFailure, type BackendFailure } from '../failures.js';
import { computeCost, KNOWN_MODELS, lookupModel } from '../pricing.js';
import { parseGeminiTranscript, writeGeminiSession } from '../transcripts/index.js';
import { counterIds, TurnEvents } from '../turn-events.js';
import { CliProcess } from './cli-process.js';
import { cleanStderr, describeCliFailure, isResumeFailure, type ProcessOutcome } from './failures.js';
import { GeminiCliNotInstalledError, locateGeminiCli } from './locate.js';
import { GeminiCliStorage } from './storage.js';
import { GeminiStreamMapper, parseStreamLine } from './stream-json.js';
import { inheritedEnv } from '../child-env.js';
import { observeNativeTools } from '../native-tool-hooks.js';

/** The registry name of the Gemini CLI back end. */
export const GEMINI_CLI_BACKEND_NAME = 'gemini-cli';
export const GEMINI_DEFAULT_MODEL = 'gemini-2.5-flash';
export const GEMINI_DEFAULT_ENDPOINT = 'https://generativelanguage.googleapis.com';

/** Options of `createGeminiCliBackend`: model, the CLI to run and its environment. */
export interface GeminiCliOptions {
  name?: string;
  /** GEMINI_API_KEY. Without one, each turn ends with an authentication error and no process is started. */
  apiKey?: string;
  /** GOOGLE_GEMINI_BASE_URL: the only endpoint the CLI may call. Default: Google's. */
  baseUrl?: string;
  /** Passed as `-m` on every run (no model router call). Default gemini-2.5-flash. */
  model?: string;
  /** GEMINI_CLI_HOME of the child: settings, project registry and session files live under `<cliHome>/.gemini`. */
  cliHome?: string;
  /** The CLI's entry script; default: the installed @google/gemini-cli. */
  cliPath?: string;
  /** The Node.js binary that runs it; default: this process's. */
  nodePath?: string;
  /** The CLI's own retries of 429/5xx (default 1: no retry; its backoff can hang a turn for minutes). */
  maxAttempts?: number;
  /** Extra environment for the child (after the allowlist, before Parley's own variables). */
  env?: Record<string, string>;
  models?: ModelInfo[];
  /** Milliseconds between SIGTERM and SIGKILL when a turn is aborted. Default 2000. */
  killGraceMs?: number;
  clock?: () => number;
  idPrefix?: string;
  /** Replaces the Gemini transcript parser (src/backends/transcripts/gemini-cli.ts). */
  parseTranscripts?: (transcripts: RawTranscripts) => ParsedTranscripts;
}

const PERMISSION_TO_APPROVAL: Record<NonNullable<AgentProfile['permissionMode']>, string> = {
  default: 'default',
  acceptEdits: 'auto_edit',
  bypassPermissions: 'yolo',
  plan: 'plan',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A native back end over the Gemini CLI run headless (`-p`, `--output-format stream-json`), one
 * process per turn: `--session-id` starts a session under an id Parley chooses, `--resume` continues
 * it. Settings written to its own home keep it to the configured endpoint: API-key auth, usage
 * statistics and telemetry off, no update checks, no retries.
 */
export function createGeminiCliBackend(options: GeminiCliOptions = {}): AgentBackend {
  const name = options.name ?? GEMINI_CLI_BACKEND_NAME;
  const defaultModel = options.model ?? GEMINI_DEFAULT_MODEL;
  const extraModels = options.models ?? [];
  const clock = options.clock ?? Date.now;
  const newId = counterIds(options.idPrefix ?? 'gemini');
  const cliHome = resolve(options.cliHome ?? join(tmpdir(), `parley-gemini-cli-${process.getuid?.() ?? 'user'}`));
  const storage = new GeminiCliStorage(cliHome);
  const endpoint = options.baseUrl ?? GEMINI_DEFAULT_ENDPOINT;
  let settingsReady: Promise<void> | undefined;

  function ensureSettings(): Promise<void> {
    settingsReady ??= storage
      .ensureSettings({
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: {
          enableAutoUpdate: false,
          enableAutoUpdateNotification: false,
          maxAttempts: options.maxAttempts ?? 1,
        },
      })
      .catch((error: unknown) => {
        settingsReady = undefined;
        throw error;
      });
    return settingsReady;
  }

  function cliPath(): string {
    return options.cliPath ?? locateGeminiCli().path;
  }

  function childEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = inheritedEnv();
    Object.assign(env, options.env);
    Object.assign(env, {
      GEMINI_API_KEY: options.apiKey,
      GEMINI_CLI_HOME: cliHome,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      // One process per turn: skip the CLI's self-relaunch (saves ~0.5 s and a second process).
      GEMINI_CLI_NO_RELAUNCH: 'true',
      // API error reports are written to the temp folder: keep them in the CLI's home.
      TMPDIR: join(cliHome, 'tmp'),
      NO_COLOR: '1',
    });
    if (options.baseUrl) env['GOOGLE_GEMINI_BASE_URL'] = options.baseUrl;
    return env;
  }

  function describe(): BackendDescription {
    const models = new Map<string, ModelInfo>();
    models.set(defaultModel, lookupModel(defaultModel, extraModels) ?? { id: defaultModel });
    for (const model of extraModels) models.set(model.id, model);
    for (const model of KNOWN_MODELS) if (model.id.startsWith('gemini-')) models.set(model.id, model);
    return {
      name,
      continuity: 'native',
      models: [...models.values()],
      defaultModel,
      summary: `Gemini CLI (@google/gemini-cli) run headless against ${endpoint}.`,
    };
  }

  const backend: AgentBackend = {
    describe,

    async checkAvailability(check = {}) {
      try {
        locateGeminiCli();
      } catch (error) {
        return { available: false, detail: error instanceof Error ? error.message : String(error) };
      }
      if (!options.apiKey) return { available: false, detail: 'GEMINI_API_KEY is not set.' };
      try {
        const signal = AbortSignal.any([AbortSignal.timeout(3_000), ...(check.signal ? [check.signal] : [])]);
        const response = await fetch(`${endpoint.replace(/\/+$/, '')}/v1beta/models`, {
          headers: { 'x-goog-api-key': options.apiKey },
          signal,
        });
        if (response.status === 401 || response.status === 403)
          return { available: false, detail: `${endpoint} refused the API key (HTTP ${response.status}).` };
        return { available: true, detail: `${endpoint} answered (HTTP ${response.status})` };
      } catch (error) {
        return {
          available: false,
          detail: `Could not reach ${endpoint}: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
    },

    async setupAgentProfile(profile, workspace) {
      await workspace.writeFile('GEMINI.md', renderGeminiMd(profile));
      if (profile.mcpServers || profile.allowedTools) {
        const path = join(workspace.cwd, '.gemini', 'settings.json');
        let settings: Record<string, unknown> = {};
        try {
          settings = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
        } catch {
          // No project settings yet.
        }
        if (profile.mcpServers)
          settings['mcpServers'] = { ...(settings['mcpServers'] as object | undefined), ...profile.mcpServers };
        if (profile.allowedTools)
          settings['tools'] = { ...(settings['tools'] as object | undefined), allowed: profile.allowedTools };
        await workspace.writeFile('.gemini/settings.json', `${JSON.stringify(settings, null, 2)}\n`);
      }
    },

    async setupSessionTranscripts(nativeSessionId, transcripts, workspace) {
      await storage.writeSession(workspace.cwd, nativeSessionId, transcripts.main);
    },

    async readSessionTranscripts(nativeSessionId, workspace) {
      const main = await storage.readSession(workspace.cwd, nativeSessionId);
      return main === undefined ? undefined : { main };
    },

    parseTranscripts: options.parseTranscripts ?? parseGeminiTranscripts,

    writeSessionTranscripts: writeGeminiSession,

    execute(request): AgentTurn {
      return { events: observeNativeTools(runTurn(request), request.toolHooks, request.signal) };
    },
  };
  return backend;

  async function* runTurn(request: ExecuteRequest): AsyncGenerator<UnsequencedEvent> {
    const events = new TurnEvents({ clock, newId });
    const started = clock();
    const model = request.model ?? request.profile?.model ?? defaultModel;
    const cwd = resolve(request.cwd ?? process.cwd());
    const failureContext = { backend: name, model, endpoint };
    const finalMetadata = (metadata: TurnMetadata): UnsequencedEvent =>
      events.metadata({
        model,
        ...windowOf(model),
        ...metadata,
        durationMs: Math.max(0, clock() - started),
        turnComplete: true,
      });

    if (!options.apiKey) {
      const failure: BackendFailure = {
        backend: name,
        code: 'AUTHENTICATION_FAILED',
        message: 'No Gemini API key is configured.',
        advice: 'Set GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for another endpoint), or choose another back end.',
        retryable: false,
      };
      yield* events.system('error', describeFailure(failure), { data: failure });
      yield finalMetadata({ costUsd: 0, stopReason: 'error' });
      return;
    }
    let script: string;
    try {
      script = cliPath();
      await ensureSettings();
    } catch (error) {
      const notInstalled = error instanceof GeminiCliNotInstalledError;
      const failure: BackendFailure = {
        backend: name,
        code: notInstalled ? 'NOT_INSTALLED' : 'PROCESS_FAILED',
        message: notInstalled
          ? 'The Gemini CLI is not installed.'
          : `The Gemini CLI could not be prepared: ${error instanceof Error ? error.message : String(error)}.`,
        advice: notInstalled
          ? 'Install it with: npm install @google/gemini-cli@0.61.0'
          : `Check that ${cliHome} is writable.`,
        retryable: false,
      };
      yield* events.system('error', describeFailure(failure), { data: failure });
      yield finalMetadata({ costUsd: 0, stopReason: 'error' });
      return;
    }

    let nativeSessionId = request.nativeSessionId ?? (UUID.test(request.sessionId) ? request.sessionId : randomUUID());
    const stored = await storage.findSessionFile(cwd, nativeSessionId);
    let resume = stored !== undefined;
    // A native first turn carries no built system prompt: the agent is told its role from its profile
    // (as the Claude SDK back end appends it); later turns resume with the CLI's own history.
    let context = resume
      ? undefined
      : (request.systemPrompt ?? (request.profile ? renderGeminiMd(request.profile) : undefined));
    if (!resume && request.isNewSession === false && request.nativeSessionId) {
      // The session should exist but the CLI's storage has no such file (another machine, a wiped home).
      if (!request.systemPrompt) {
        const failure = describeCliFailure(
          { exitCode: 42, signal: null, stderr: 'Invalid session identifier' },
          failureContext,
        );
        yield* events.system('error', describeFailure(failure), { data: { ...failure, nativeSessionId } });
        yield finalMetadata({ costUsd: 0, stopReason: 'error', nativeSessionId });
        return;
      }
      yield* fallbackNotice(events, nativeSessionId);
      nativeSessionId = randomUUID();
      context = request.systemPrompt;
    }

    let attempt = yield* runProcess({
      script,
      request,
      model,
      cwd,
      nativeSessionId,
      resume,
      context,
      events,
      failureContext,
    });
    if (attempt.kind === 'resume_failed' && request.systemPrompt) {
      yield* fallbackNotice(events, nativeSessionId);
      nativeSessionId = randomUUID();
      resume = false;
      attempt = yield* runProcess({
        script,
        request,
        model,
        cwd,
        nativeSessionId,
        resume,
        context: request.systemPrompt,
        events,
        failureContext,
      });
    }

    yield* attempt.mapper.finish(
      attempt.kind === 'aborted' ? 'The tool call was aborted.' : 'The tool call did not finish.',
    );
    const usage = attempt.mapper.usage();
    const metadata: TurnMetadata = { nativeSessionId: attempt.mapper.sessionId ?? nativeSessionId };
    if (attempt.mapper.model) metadata.model = attempt.mapper.model;
    if (usage) {
      metadata.usage = usage;
      Object.assign(metadata, computeCost(lookupModel(model, extraModels)?.pricing, usage));
    } else {
      // A request cut short may have been billed for what it generated: unknown, not zero.
      Object.assign(metadata, attempt.mapper.produced ? { costUnknown: true } : { costUsd: 0 });
    }
    if (attempt.mapper.result?.stats?.tool_calls !== undefined)
      metadata.numTurns = attempt.mapper.result.stats.tool_calls + 1;
    if (attempt.kind === 'aborted') {
      yield* events.system(
        'aborted',
        'The turn was aborted; the Gemini CLI was stopped and the output so far is kept.',
      );
      yield finalMetadata({ ...metadata, stopReason: 'aborted' });
      return;
    }
    if (attempt.kind === 'failed' || attempt.kind === 'resume_failed') {
      const failure = attempt.failure;
      yield* events.system('error', describeFailure(failure), { data: { ...failure, nativeSessionId } });
      yield finalMetadata({ ...metadata, stopReason: 'error' });
      return;
    }
    yield finalMetadata({ ...metadata, stopReason: 'end_turn' });
  }

  function windowOf(model: string): TurnMetadata {
    const info = lookupModel(model, extraModels);
    return {
      ...(info?.contextWindow ? { contextWindow: info.contextWindow } : {}),
      ...(info?.maxOutputTokens ? { maxOutputTokens: info.maxOutputTokens } : {}),
    };
  }

  type Attempt =
    | { kind: 'done'; mapper: GeminiStreamMapper }
    | { kind: 'aborted'; mapper: GeminiStreamMapper }
    | { kind: 'failed' | 'resume_failed'; mapper: GeminiStreamMapper; failure: BackendFailure };

  async function* runProcess(run: {
    script: string;
    request: ExecuteRequest;
    model: string;
    cwd: string;
    nativeSessionId: string;
    resume: boolean;
    context: string | undefined;
    events: TurnEvents;
    failureContext: { backend: string; model: string; endpoint: string };
  }): AsyncGenerator<UnsequencedEvent, Attempt> {
    const { request } = run;
    const mapper = new GeminiStreamMapper(run.events);
    if (request.signal?.aborted) return { kind: 'aborted', mapper };
    const args = [run.script, '--model', run.model, '--output-format', 'stream-json'];
    args.push(...(run.resume ? ['--resume', run.nativeSessionId] : ['--session-id', run.nativeSessionId]));
    const permission = request.profile?.permissionMode;
    if (permission) args.push('--approval-mode', PERMISSION_TO_APPROVAL[permission]);
    // `--prompt=` keeps a prompt that starts with "-" from being read as a flag.
    args.push(`--prompt=${request.prompt}`);
    const child = new CliProcess({
      command: options.nodePath ?? process.execPath,
      args,
      cwd: run.cwd,
      env: childEnv(),
      // Context (a managed-style system prompt) goes in on stdin; the CLI puts it before the prompt.
      ...(run.context ? { stdin: run.context } : {}),
      killGraceMs: options.killGraceMs ?? 2_000,
    });
    const onAbort = (): void => child.stop();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const line of child.lines()) {
        const event = parseStreamLine(line);
        if (event) yield* mapper.map(event);
      }
      const exit = await child.exited;
      if (request.signal?.aborted) return { kind: 'aborted', mapper };
      const outcome: ProcessOutcome = {
        exitCode: exit.exitCode,
        signal: exit.signal,
        stderr: cleanStderr(child.stderr),
        ...(mapper.result?.status === 'error' && mapper.result.error ? { resultError: mapper.result.error } : {}),
        ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
      };
      if (exit.exitCode === 0 && mapper.result?.status === 'success') return { kind: 'done', mapper };
      if (mapper.result?.status === 'error' && !outcome.resultError) outcome.resultError = { message: 'unknown error' };
      const failure = describeCliFailure(outcome, run.failureContext);
      return { kind: isResumeFailure(outcome) ? 'resume_failed' : 'failed', mapper, failure };
    } finally {
      request.signal?.removeEventListener('abort', onAbort);
      // A consumer that stops iterating must not leave the CLI running.
      child.stop();
    }
  }
}

/** The main session file and any subagent session files, each parsed by the Gemini transcript parser. */
export function parseGeminiTranscripts(transcripts: RawTranscripts): ParsedTranscripts {
  const main = parseGeminiTranscript(transcripts.main);
  const subagents = [...main.subagents];
  const warnings = [...main.warnings];
  for (const subagent of transcripts.subagents ?? []) {
    const parsed = parseGeminiTranscript(subagent.rawTranscript, { conversationId: subagent.id });
    const thread = parsed.subagents.find((entry) => entry.id === subagent.id);
    subagents.push({ id: subagent.id, rawTranscript: subagent.rawTranscript, blocks: thread?.blocks ?? parsed.blocks });
    warnings.push(...parsed.warnings);
  }
  return { ...main, subagents, warnings };
}

function* fallbackNotice(events: TurnEvents, nativeSessionId: string): Generator<UnsequencedEvent> {
  yield* events.system(
    'info',
    `The Gemini CLI has no session ${nativeSessionId} for this folder, so Parley continued in a new Gemini session with the conversation so far as context.`,
    { data: { code: 'RESUME_FALLBACK', nativeSessionId } },
  );
}

/** GEMINI.md: the profile as the CLI reads its context file (role, description, instructions, tools). */
export function renderGeminiMd(profile: AgentProfile): string {
  const lines = [`# ${profile.name}`, ''];
  if (profile.description) lines.push(profile.description, '');
  lines.push(profile.instructions.trim(), '');
  if (profile.allowedTools?.length) lines.push('## Tools', '', ...profile.allowedTools.map((tool) => `- ${tool}`), '');
  return lines.join('\n');
}

/** A workspace backed by a folder on disk. */
export function folderWorkspace(cwd: string): Workspace {
  return {
    cwd,
    async writeFile(relativePath, content) {
      const path = resolve(cwd, relativePath);
      if (!path.startsWith(resolve(cwd) + sep)) throw new Error(`${relativePath} is outside the workspace ${cwd}`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, content);
    },
  };
}
