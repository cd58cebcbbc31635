import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import type { ApprovalMode, CodexOptions, SandboxMode, ThreadEvent, ThreadOptions } from '@openai/codex-sdk';
import type { TurnMetadata, UnsequencedEvent } from '../../conversation/index.js';
import type {
  AgentBackend,
  AgentProfile,
  AgentTurn,
  BackendDescription,
  ExecuteRequest,
  ModelInfo,
} from '../agent-backend.js';
import { describeFailure, tail, type BackendFailure } from '../failures.js';
import { computeCost, KNOWN_MODELS, lookupModel } from '../pricing.js';
import { counterIds, TurnEvents } from '../turn-events.js';
import { CodexEventMapper, toUsage, turnUsage, type CodexTotals } from './event-mapper.js';
import { recentPatches } from './file-diffs.js';
import { findRollout, readRollout, readRolloutTotals, rememberRollout, writeRollout } from './rollouts.js';
import { writeCodexRollout } from '../transcripts/index.js';
import {
  cachedCodexLoader,
  CODEX_INSTALL_COMMAND,
  codexResolvable,
  CodexNotInstalledError,
  importCodexSdk,
  type CodexSdk,
  type CodexSdkLoader,
  CODEX_SDK_VERSION,
} from './sdk-loader.js';
import { inheritedEnv } from '../child-env.js';
import { observeNativeTools } from '../native-tool-hooks.js';
import {
  CODEX_MCP_TOKEN_VARIABLE,
  CODEX_PARLEY_MCP_SERVER,
  startMcpBridge,
  type McpBridge,
} from './mcp-bridge-face.js';
import { findCodexBinary } from './codex-binary.js';
import { runAppServerTurn } from './app-server-turn.js';
import type { AppServerApprovalPolicy } from './app-server-protocol.js';

/** The registry name of the Codex back end. */
export const CODEX_BACKEND_NAME = 'codex';
export const CODEX_DEFAULT_MODEL = 'gpt-5-codex';
/** The model provider Parley defines in Codex's configuration when a base URL is set. */
export const CODEX_PROVIDER_ID = 'parley';
/** The variable the child reads the key from when Parley defines the provider. */
const PROVIDER_KEY_VARIABLE = 'PARLEY_CODEX_API_KEY';

/** Options of `createCodexBackend`: endpoint, key, Codex's home, the CLI to run. */
export interface CodexBackendOptions {
  name?: string;
  /** The OpenAI (or compatible Responses API) key. Without one, each turn ends with an authentication error. */
  apiKey?: string;
  /** A Responses API endpoint (ends in `/v1`); Parley defines a model provider for it. Default: OpenAI's. */
  baseUrl?: string;
  model?: string;
  models?: ModelInfo[];
  /** CODEX_HOME of the child: its config, rollouts (`sessions/`) and state. */
  codexHome?: string;
  /** The Codex CLI binary; default: the one in the installed @openai/codex platform package. */
  codexPath?: string;
  /** Codex's own retries of a failed request or stream (default: Codex's). */
  maxRetries?: number;
  /** Extra environment for the child (after the allowlist, before Parley's own variables). */
  env?: Record<string, string>;
  /** Replaces the dynamic import of @openai/codex-sdk (tests of a machine without it). */
  loadSdk?: CodexSdkLoader;
  clock?: () => number;
  idPrefix?: string;
}

/** What Codex is told of a role's permission mode: when to ask, and where it may write. */
export interface CodexPolicy {
  approvalPolicy: ApprovalMode;
  sandboxMode: SandboxMode;
}

/**
 * A role's permission mode as Codex's approval policy and sandbox. `codex exec`, which the SDK
 * runs, has no one to ask: a request for approval is refused, so the policy is always `never` and
 * the sandbox is what keeps a role inside its bounds (a command the sandbox stops fails, and the
 * model reads why). `plan` reads only; `default` and `acceptEdits` write in the workspace (Codex
 * has no mode that edits but runs nothing); `bypassPermissions` has the whole machine.
 */
const PERMISSION_POLICIES: Record<NonNullable<AgentProfile['permissionMode']>, CodexPolicy> = {
  default: { approvalPolicy: 'never', sandboxMode: 'workspace-write' },
  acceptEdits: { approvalPolicy: 'never', sandboxMode: 'workspace-write' },
  bypassPermissions: { approvalPolicy: 'never', sandboxMode: 'danger-full-access' },
  plan: { approvalPolicy: 'never', sandboxMode: 'read-only' },
};

/** The approval policy and sandbox a role's permission mode gives a Codex turn. */
export function codexPolicyOf(permissionMode: AgentProfile['permissionMode']): CodexPolicy {
  return PERMISSION_POLICIES[permissionMode ?? 'default'];
}

/**
 * The approval policy of a turn that can ask (the caller gave `askApproval`): `default` and
 * `acceptEdits` run through `codex app-server` with `untrusted`, so Codex asks before every
 * command it does not know to be read-only and before every patch (under `acceptEdits` Parley
 * accepts patches itself and asks only for commands). `plan` and `bypassPermissions` ask nothing:
 * undefined, and the turn runs through the SDK as before.
 */
export function codexApprovalPolicyOf(
  permissionMode: AgentProfile['permissionMode'],
): AppServerApprovalPolicy | undefined {
  const mode = permissionMode ?? 'default';
  return mode === 'default' || mode === 'acceptEdits' ? 'untrusted' : undefined;
}

/** An MCP server in Codex's configuration (`mcp_servers.<name>`). */
export type CodexMcpServer = Record<string, string | number | boolean | string[] | Record<string, string>>;

/**
 * The MCP servers of a turn as Codex's configuration: the role's own, and Parley's tools through
 * the bridge, with exactly the tools the request carries enabled and approved in advance.
 */
export function mcpServersOf(
  profile: AgentProfile | undefined,
  bridge: { url: string } | undefined,
  tools: readonly { name: string }[],
): Record<string, CodexMcpServer> {
  const servers: Record<string, CodexMcpServer> = {};
  for (const [serverName, server] of Object.entries(profile?.mcpServers ?? {})) {
    if (serverName === CODEX_PARLEY_MCP_SERVER) continue;
    if (server.url) servers[serverName] = { url: server.url };
    else if (server.command)
      servers[serverName] = {
        command: server.command,
        ...(server.args ? { args: server.args } : {}),
        ...(server.env ? { env: server.env } : {}),
      };
  }
  if (bridge)
    servers[CODEX_PARLEY_MCP_SERVER] = {
      url: bridge.url,
      bearer_token_env_var: CODEX_MCP_TOKEN_VARIABLE,
      enabled_tools: tools.map((tool) => tool.name),
      // Codex's default asks before each call, and a headless turn cannot answer: every call would be refused.
      default_tools_approval_mode: 'approve',
      startup_timeout_sec: 20,
      // A tool such as a worker's dispatch runs as long as the worker.
      tool_timeout_sec: 3600,
    };
  return servers;
}

/**
 * A native back end over the Codex CLI, driven by @openai/codex-sdk (which runs `codex exec
 * --experimental-json`, one process per turn): `startThread` on the first turn, `resumeThread`
 * with the stored thread id after. Parley's own CODEX_HOME and configuration keep Codex to the
 * configured endpoint: plugin sync and analytics off, no inherited OpenAI variables.
 */
export function createCodexBackend(options: CodexBackendOptions = {}): AgentBackend {
  const name = options.name ?? CODEX_BACKEND_NAME;
  const defaultModel = options.model ?? CODEX_DEFAULT_MODEL;
  const extraModels = options.models ?? [];
  const clock = options.clock ?? Date.now;
  const newId = counterIds(options.idPrefix ?? 'codex');
  const codexHome = resolve(options.codexHome ?? join(tmpdir(), `parley-codex-${process.getuid?.() ?? 'user'}`));
  const loadSdk = cachedCodexLoader(options.loadSdk ?? importCodexSdk);
  const endpoint = options.baseUrl ?? 'https://api.openai.com/v1';
  // Running totals of threads this process has run, so a resumed turn's own usage is known without reading the rollout.
  const totals = new Map<string, CodexTotals>();
  // Threads whose rollout path is noted (see `rememberRollout`), so a turn notes it at most once per process.
  const noted = new Set<string>();
  const note = async (threadId: string, path: string | undefined): Promise<void> => {
    if (noted.has(threadId)) return;
    const found = path ?? (await findRollout(codexHome, threadId));
    if (!found) return;
    try {
      await rememberRollout(codexHome, threadId, found);
      noted.add(threadId);
    } catch {
      // Only a rewrite after the rollout is deleted needs the note; the turn does not.
    }
  };

  function codexOptions(
    turn: { mcpServers?: Record<string, CodexMcpServer>; env?: Record<string, string> } = {},
    how: { alwaysDefineProvider?: boolean } = {},
  ): CodexOptions & { env: Record<string, string>; config: NonNullable<CodexOptions['config']> } {
    const env: Record<string, string> = inheritedEnv();
    Object.assign(env, options.env, turn.env, { CODEX_HOME: codexHome, NO_COLOR: '1' });
    const config: NonNullable<CodexOptions['config']> = {
      // Without these Codex looks up chatgpt.com and github.com at start.
      features: { plugins: false },
      analytics: { enabled: false },
    };
    if (turn.mcpServers && Object.keys(turn.mcpServers).length > 0) config['mcp_servers'] = turn.mcpServers;
    // The app server reads no key from the SDK's variable: it always gets Parley's provider.
    if (options.baseUrl || how.alwaysDefineProvider) {
      if (options.apiKey) env[PROVIDER_KEY_VARIABLE] = options.apiKey;
      const provider: Record<string, string | number> = {
        name: 'Parley',
        base_url: endpoint,
        wire_api: 'responses',
        env_key: PROVIDER_KEY_VARIABLE,
      };
      if (options.maxRetries !== undefined) {
        provider['request_max_retries'] = options.maxRetries;
        provider['stream_max_retries'] = options.maxRetries;
      }
      config['model_provider'] = CODEX_PROVIDER_ID;
      config['model_providers'] = { [CODEX_PROVIDER_ID]: provider };
    }
    return {
      env,
      config,
      ...(options.codexPath ? { codexPathOverride: options.codexPath } : {}),
      // Without a provider of Parley's, the SDK hands the key to Codex's built-in OpenAI provider.
      ...(!options.baseUrl && options.apiKey ? { apiKey: options.apiKey } : {}),
    };
  }

  function windowOf(model: string): TurnMetadata {
    const info = lookupModel(model, extraModels);
    return {
      ...(info?.contextWindow ? { contextWindow: info.contextWindow } : {}),
      ...(info?.maxOutputTokens ? { maxOutputTokens: info.maxOutputTokens } : {}),
    };
  }

  const backend: AgentBackend = {
    describe(): BackendDescription {
      const models = new Map<string, ModelInfo>();
      models.set(defaultModel, lookupModel(defaultModel, extraModels) ?? { id: defaultModel });
      for (const model of extraModels) models.set(model.id, model);
      for (const model of KNOWN_MODELS) if (model.id.startsWith('gpt-5')) models.set(model.id, model);
      return {
        name,
        continuity: 'native',
        models: [...models.values()],
        defaultModel,
        summary: `Codex CLI via @openai/codex-sdk, talking to ${endpoint}; resumes its own threads.`,
      };
    },

    async checkAvailability() {
      if (!options.loadSdk && !options.codexPath && !codexResolvable())
        return { available: false, detail: `not installed: ${CODEX_INSTALL_COMMAND}` };
      if (!options.apiKey) return { available: false, detail: 'no API key' };
      return { available: true, detail: `Codex installed; endpoint ${endpoint}` };
    },

    execute(request): AgentTurn {
      return { events: observeNativeTools(runTurn(request), request.toolHooks, request.signal) };
    },

    writeSessionTranscripts: writeCodexRollout,

    async setupSessionTranscripts(nativeSessionId, transcripts) {
      await writeRollout(codexHome, nativeSessionId, transcripts.main);
      // A rewritten thread starts its running total again: the cached one would be subtracted from it.
      totals.delete(nativeSessionId);
    },

    async readSessionTranscripts(nativeSessionId) {
      const main = await readRollout(codexHome, nativeSessionId);
      return main === undefined ? undefined : { main };
    },
  };
  return backend;

  async function* runTurn(request: ExecuteRequest): AsyncGenerator<UnsequencedEvent> {
    const events = new TurnEvents({ clock, newId });
    const started = clock();
    const model = request.model ?? request.profile?.model ?? defaultModel;
    const finalMetadata = (metadata: TurnMetadata): UnsequencedEvent =>
      events.metadata({
        model,
        ...windowOf(model),
        ...metadata,
        durationMs: Math.max(0, clock() - started),
        turnComplete: true,
      });
    const fail = function* (failure: BackendFailure, metadata: TurnMetadata = {}): Generator<UnsequencedEvent> {
      yield* events.system('error', describeFailure(failure), { data: failure });
      yield finalMetadata({ costUsd: 0, ...metadata, stopReason: 'error' });
    };

    if (!options.apiKey) {
      yield* fail({
        backend: name,
        code: 'AUTHENTICATION_FAILED',
        message: 'No API key is configured for Codex.',
        advice:
          'Set CODEX_API_KEY (or OPENAI_API_KEY), and CODEX_BASE_URL for another Responses API endpoint, or choose another back end.',
        retryable: false,
      });
      return;
    }
    let sdk;
    try {
      sdk = await loadSdk();
    } catch (error) {
      yield* fail({
        backend: name,
        code: 'NOT_INSTALLED',
        message: 'Codex (@openai/codex-sdk and @openai/codex) is not installed, so no turn ran.',
        advice: `Install it with: ${CODEX_INSTALL_COMMAND}`,
        retryable: false,
        ...(error instanceof CodexNotInstalledError ? { detail: error.message } : {}),
      });
      return;
    }

    // A new session's id is Parley's; Codex names its threads itself, and the metadata reports that name.
    let threadId = request.isNewSession === true ? undefined : request.nativeSessionId;
    let before: CodexTotals | undefined;
    let rolloutPath: string | undefined;
    let context: string | undefined =
      request.systemPrompt ?? (request.profile ? renderAgentsMd(request.profile) : undefined);
    if (threadId) {
      const rollout = await findRollout(codexHome, threadId);
      if (rollout) {
        rolloutPath = rollout;
        before = totals.get(threadId) ?? (await readRolloutTotals(rollout));
        context = undefined;
        await note(threadId, rollout);
      } else if (request.systemPrompt) {
        yield* events.system(
          'info',
          `Codex has no thread ${threadId} in ${codexHome}, so Parley continued in a new Codex thread with the conversation so far as context.`,
          { data: { code: 'RESUME_FALLBACK', nativeSessionId: threadId } },
        );
        threadId = undefined;
      } else {
        yield* fail(
          {
            backend: name,
            code: 'NATIVE_RESUME_FAILED',
            message: `Codex has no thread ${threadId} in ${codexHome} (its rollout was deleted or moved).`,
            advice: 'Parley will continue from its own log; nothing of the session is lost.',
            retryable: false,
          },
          { nativeSessionId: threadId },
        );
        return;
      }
    }

    try {
      await mkdir(codexHome, { recursive: true });
    } catch (error) {
      yield* fail({
        backend: name,
        code: 'PROCESS_FAILED',
        message: `Codex's home ${codexHome} could not be created: ${error instanceof Error ? error.message : String(error)}.`,
        advice: "Set the codex back end's codexHome to a writable folder.",
        retryable: false,
      });
      return;
    }
    let bridge: McpBridge | undefined;
    if (request.tools && request.tools.length > 0) {
      try {
        bridge = await startMcpBridge(request.tools, {
          ...(request.signal ? { signal: request.signal } : {}),
          ...(request.traceContext ? { traceContext: request.traceContext } : {}),
        });
      } catch (error) {
        yield* fail({
          backend: name,
          code: 'PROCESS_FAILED',
          message: `Parley could not serve its tools to Codex on 127.0.0.1: ${error instanceof Error ? error.message : String(error)}.`,
          advice: 'Send the message again; if it keeps failing, check that the machine allows local ports.',
          retryable: true,
        });
        return;
      }
    }
    try {
      yield* runThread(sdk, bridge);
    } finally {
      await bridge?.close();
    }

    /** The turn through `codex app-server`, with the same home, provider and MCP servers as the SDK's. */
    function appServerTurn(
      approvalPolicy: AppServerApprovalPolicy,
      askApproval: NonNullable<ExecuteRequest['askApproval']>,
      turn: { mcpServers: Record<string, CodexMcpServer>; env?: Record<string, string> },
      cwd: string,
      input: string,
    ): AsyncGenerator<ThreadEvent> {
      const binary = options.codexPath ? { executablePath: options.codexPath, pathDirs: [] } : findCodexBinary();
      const { env, config } = codexOptions(turn, { alwaysDefineProvider: true });
      if (binary.pathDirs.length > 0) env['PATH'] = [...binary.pathDirs, env['PATH'] ?? ''].join(delimiter);
      const { features: _features, analytics: _analytics, ...threadConfig } = config;
      const permissionMode = request.profile?.permissionMode ?? 'default';
      return runAppServerTurn({
        executablePath: binary.executablePath,
        // Process-wide, as for `codex exec`: no plugin sync or analytics (they reach chatgpt.com and github.com).
        args: ['-c', 'features.plugins=false', '-c', 'analytics.enabled=false'],
        env,
        ...(threadId ? { threadId } : {}),
        settings: {
          model,
          cwd,
          approvalPolicy,
          sandbox: codexPolicyOf(permissionMode).sandboxMode,
          config: threadConfig,
        },
        input,
        ...(request.outputSchema ? { outputSchema: request.outputSchema } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        approve: askApproval,
        answersItself: (kind) => permissionMode === 'acceptEdits' && kind !== 'command',
        clientVersion: CODEX_SDK_VERSION,
      });
    }

    async function* runThread(sdk: CodexSdk, bridge: McpBridge | undefined): AsyncGenerator<UnsequencedEvent> {
      const mcpServers = mcpServersOf(request.profile, bridge, request.tools ?? []);
      const turnSettings = {
        mcpServers,
        ...(bridge ? { env: { [CODEX_MCP_TOKEN_VARIABLE]: bridge.token } } : {}),
      };
      const cwd = resolve(request.cwd ?? process.cwd());
      const mapper = new CodexEventMapper(events, {
        model,
        cwd,
        patches: () => (rolloutPath ? recentPatches(rolloutPath) : []),
        readFile: (path) => {
          try {
            return readFileSync(resolve(cwd, path), 'utf8');
          } catch {
            return undefined;
          }
        },
      });
      const input = context ? `<context>\n${context}\n</context>\n\n${request.prompt}` : request.prompt;
      // A turn that can ask a person runs through the app server; one that asks nobody, through the SDK.
      const approvalPolicy = request.askApproval ? codexApprovalPolicyOf(request.profile?.permissionMode) : undefined;
      let sdkThreadId: () => string | null | undefined = () => undefined;
      const turnEvents = async function* (): AsyncGenerator<ThreadEvent> {
        if (request.signal?.aborted) throw new Error('aborted before start');
        if (approvalPolicy && request.askApproval) {
          yield* appServerTurn(approvalPolicy, request.askApproval, turnSettings, cwd, input);
          return;
        }
        const codex = new sdk.Codex(codexOptions(turnSettings));
        const threadOptions: ThreadOptions = {
          model,
          skipGitRepoCheck: true,
          ...codexPolicyOf(request.profile?.permissionMode),
          ...(request.cwd ? { workingDirectory: resolve(request.cwd) } : {}),
        };
        const thread = threadId ? codex.resumeThread(threadId, threadOptions) : codex.startThread(threadOptions);
        sdkThreadId = () => thread.id;
        const streamed = await thread.runStreamed(input, {
          ...(request.signal ? { signal: request.signal } : {}),
          ...(request.outputSchema ? { outputSchema: request.outputSchema } : {}),
        });
        yield* streamed.events as AsyncGenerator<ThreadEvent>;
      };
      let processError: unknown;
      try {
        for await (const event of turnEvents()) {
          // A file change's diff comes from the patch in the rollout; a new thread's rollout is found at its first.
          if (event.type === 'item.completed' && event.item.type === 'file_change' && !rolloutPath && mapper.threadId)
            rolloutPath = await findRollout(codexHome, mapper.threadId);
          yield* mapper.map(event);
        }
      } catch (error) {
        processError = error;
      }
      yield* mapper.finish(request.signal?.aborted ? 'The tool call was aborted.' : 'The tool call did not finish.');

      const resolvedThread = mapper.threadId ?? sdkThreadId() ?? threadId;
      const metadata: TurnMetadata = resolvedThread ? { nativeSessionId: resolvedThread } : {};
      if (resolvedThread) await note(resolvedThread, undefined);
      if (mapper.reportedUsage) {
        const reported: CodexTotals = {
          input_tokens: mapper.reportedUsage.input_tokens,
          cached_input_tokens: mapper.reportedUsage.cached_input_tokens,
          output_tokens: mapper.reportedUsage.output_tokens,
        };
        if (resolvedThread) totals.set(resolvedThread, reported);
        const usage = toUsage(turnUsage(reported, before));
        metadata.usage = usage;
        Object.assign(metadata, computeCost(lookupModel(model, extraModels)?.pricing, usage));
      } else {
        Object.assign(metadata, mapper.produced ? { costUnknown: true } : { costUsd: 0 });
      }

      if (request.signal?.aborted) {
        yield* events.system('aborted', 'The turn was aborted; Codex was stopped, and its thread can be resumed.');
        yield finalMetadata({ ...metadata, stopReason: 'aborted' });
        return;
      }
      if (mapper.failure !== undefined || processError !== undefined) {
        const failure = describeCodexFailure(name, endpoint, model, mapper.failure, processError);
        yield* events.system('error', describeFailure(failure), { data: { ...failure, ...metadata } });
        yield finalMetadata({ ...metadata, stopReason: 'error' });
        return;
      }
      yield finalMetadata({ ...metadata, stopReason: 'end_turn' });
    }
  }
}

/** A failed Codex turn as Parley's failure codes: rate limit, server error, key refused, or the process. */
export function describeCodexFailure(
  backend: string,
  endpoint: string,
  model: string,
  reported: string | undefined,
  processError: unknown,
): BackendFailure {
  const processText = cleanProcessError(
    processError instanceof Error ? processError.message : processError ? String(processError) : '',
  );
  const text = `${reported ?? ''}\n${processText}`;
  const status = /\b(4\d\d|5\d\d)\b/.exec(text)?.[1];
  const detail = tail(processText || (reported ?? ''), 1500);
  const base = { backend, ...(status ? { status: Number(status) } : {}), ...(detail ? { detail } : {}) };
  if (/thread\/resume failed|failed to resolve rollout path|no rollout found/i.test(text))
    return {
      ...base,
      code: 'NATIVE_RESUME_FAILED',
      message: `Codex could not resume its thread: ${firstLine(processText || (reported ?? ''))}.`,
      advice: 'Parley will continue from its own log; nothing of the session is lost.',
      retryable: false,
    };
  if (/\b429\b|rate.?limit|too many requests|quota/i.test(text))
    return {
      ...base,
      code: 'RATE_LIMITED',
      message: `${endpoint} refused the request: rate limited (${firstLine(reported ?? processText)}).`,
      advice: 'Wait and send the message again, or choose another model or back end.',
      retryable: true,
    };
  if (/\b401\b|\b403\b|unauthori[sz]ed|invalid api key|incorrect api key/i.test(text))
    return {
      ...base,
      code: 'AUTHENTICATION_FAILED',
      message: `${endpoint} refused the API key.`,
      advice: 'Check CODEX_API_KEY (or the variable named by apiKeyEnv) and the base URL.',
      retryable: false,
    };
  if (/\b5\d\d\b|server error|internal error|stream disconnected|retry limit/i.test(text))
    return {
      ...base,
      code: 'SERVER_ERROR',
      message: `${endpoint} failed the request for ${model}: ${firstLine(reported ?? processText)}.`,
      advice: 'Send the message again; if it keeps failing, check the endpoint or choose another back end.',
      retryable: true,
    };
  if (reported !== undefined)
    return {
      ...base,
      code: 'UNKNOWN',
      message: `Codex ended the turn with an error: ${firstLine(reported)}.`,
      advice: 'Send the message again, or choose another back end.',
      retryable: false,
    };
  return {
    ...base,
    code: 'PROCESS_FAILED',
    message: `The Codex CLI failed: ${firstLine(processText)}.`,
    advice: 'Check that @openai/codex is installed with its platform package, and that CODEX_HOME is writable.',
    retryable: false,
  };
}

/** The SDK's error text without its prefix and the CLI's start-up chatter. */
function cleanProcessError(text: string): string {
  return text
    .replace(/^Codex Exec exited with (code \d+|signal \w+): /, '')
    .split('\n')
    .filter(
      (line) =>
        !/^(WARNING: proceeding|Reading additional input from stdin|Reading prompt from stdin)/.test(line.trim()),
    )
    .join('\n')
    .trim();
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/** The profile as context for a thread's first turn (Codex reads AGENTS.md the same way). */
export function renderAgentsMd(profile: AgentProfile): string {
  const lines = [`# ${profile.name}`, ''];
  if (profile.description) lines.push(profile.description, '');
  lines.push(profile.instructions.trim(), '');
  if (profile.allowedTools?.length) lines.push('## Tools', '', ...profile.allowedTools.map((tool) => `- ${tool}`), '');
  return lines.join('\n');
}
