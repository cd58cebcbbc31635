import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type {
  HookCallbackMatcher,
  HookEvent,
  McpServerConfig as SdkMcpServerConfig,
  Options,
  SettingSource,
} from '@anthropic-ai/claude-agent-sdk';
import type { UnsequencedEvent } from '../../conversation/index.js';
import type {
  AgentBackend,
  AgentProfile,
  AgentTurn,
  BackendDescription,
  ExecuteRequest,
  ModelInfo,
  NativeToolHooks,
  ParsedTranscripts,
  RawTranscripts,
  Workspace,
} from '../agent-backend.js';
import { tail, TurnNotRunningError, type BackendFailure } from '../failures.js';
import { KNOWN_MODELS } from '../pricing.js';
import { InputChannel } from './input-channel.js';
import { mcpToolName, parleyMcpServer, PARLEY_MCP_SERVER } from './mcp-tools.js';
import {
  defaultConfigDir,
  findTranscript,
  nativeIdFor,
  readCostState,
  readTranscripts,
  restoreTranscripts,
} from './native-storage.js';
import { writeAgentProfile } from './profile.js';
import { cachedLoader, ClaudeSdkNotInstalledError, importClaudeAgentSdk, type SdkLoader } from './sdk-loader.js';
import { CLAUDE_SDK_BACKEND_NAME, ClaudeTurnMapper } from './turn-mapper.js';
import { parseClaudeSdkTranscripts } from './transcripts.js';
import { writeClaudeCodeTranscript } from '../transcripts/index.js';

/** Claude Code's own default when no model is named. */
export const CLAUDE_SDK_DEFAULT_MODEL = 'claude-opus-5-5';
/** After `interrupt()`, how long the CLI gets to end the turn before its process is closed. */
const DEFAULT_INTERRUPT_GRACE_MS = 5_000;

/** Options of `createClaudeSdkBackend`: model, working folder, permissions and the SDK to load. */
export interface ClaudeSdkBackendOptions {
  /**
   * The CLI's config folder (`CLAUDE_CONFIG_DIR`): where it keeps session transcripts. Give each
   * Parley home its own to keep sessions apart from a user's own Claude Code. Default: the
   * environment's `CLAUDE_CONFIG_DIR`, else `~/.claude` (where a Claude Code login lives).
   */
  configDir?: string;
  /** The workspace when a request names none. Default: `process.cwd()`. */
  cwd?: string;
  /** Sets `ANTHROPIC_API_KEY` for the CLI. Default: inherited. */
  apiKey?: string;
  /** Sets `ANTHROPIC_BASE_URL` for the CLI (a gateway, or a local fake in tests). */
  baseURL?: string;
  /** Extra environment for the CLI, over the inherited one. */
  env?: Record<string, string | undefined>;
  /** Start the CLI with Parley's environment (PATH, keys, proxies). Default true; false passes only PATH and HOME. */
  inheritEnv?: boolean;
  defaultModel?: string;
  /** Models added to the built-in table. */
  models?: ModelInfo[];
  /** `CLAUDE_CODE_MAX_RETRIES`: the CLI's own retries on 429/5xx. Default: the CLI's; tests use 0. */
  maxRetries?: number;
  /** Permission mode when the agent's profile names none. Default `default`. */
  permissionMode?: NonNullable<AgentProfile['permissionMode']>;
  /**
   * Which settings files the CLI reads. Default `['project']`: the workspace's CLAUDE.md and
   * `.claude/` (written by `setupAgentProfile`), never the user's own `~/.claude` settings.
   */
  settingSources?: SettingSource[];
  /** `claude_code` (default): Claude Code's own system prompt; `minimal`: the SDK's one-line prompt. */
  systemPrompt?: 'claude_code' | 'minimal';
  /** A Claude Code binary to run instead of the one in the SDK's platform package. */
  pathToClaudeCodeExecutable?: string;
  /** How the SDK is loaded. Default: a dynamic import of `@anthropic-ai/claude-agent-sdk`. */
  loadSdk?: SdkLoader;
  /** After an abort, how long the CLI gets to end the turn before its process is closed. Default 5 s. */
  interruptGraceMs?: number;
  clock?: () => number;
}

/**
 * Claude Code through the Claude Agent SDK, with native continuity: the CLI keeps the conversation
 * in its own transcript and resumes it by id (`sessionId` on the first turn, `resume` after). Parley
 * streams the turn as blocks, reads usage, cost and window from the CLI's reports, and copies the
 * transcripts in and out so a session moves between machines.
 */
export function createClaudeSdkBackend(options: ClaudeSdkBackendOptions = {}): AgentBackend {
  const loadSdk = cachedLoader(options.loadSdk ?? importClaudeAgentSdk);
  const clock = options.clock ?? Date.now;
  const environment = (): Record<string, string | undefined> => buildEnv(options);
  const configDir = (): string => options.configDir ?? defaultConfigDir(environment());
  const endpoint =
    options.baseURL ?? options.env?.['ANTHROPIC_BASE_URL'] ?? process.env['ANTHROPIC_BASE_URL'] ?? 'the Anthropic API';

  const models = (): ModelInfo[] => {
    const extra = options.models ?? [];
    const overridden = new Set(extra.map((model) => model.id));
    return [
      ...extra,
      ...KNOWN_MODELS.filter((model) => model.id.startsWith('claude-') && !overridden.has(model.id)),
    ].map((model) => ({ ...model }));
  };

  return {
    describe(): BackendDescription {
      return {
        name: CLAUDE_SDK_BACKEND_NAME,
        continuity: 'native',
        models: models(),
        defaultModel: options.defaultModel ?? CLAUDE_SDK_DEFAULT_MODEL,
        summary:
          'Claude Code via @anthropic-ai/claude-agent-sdk (optional dependency); resumes its own sessions. Uses ANTHROPIC_API_KEY or the Claude Code login.',
      };
    },

    async checkAvailability() {
      try {
        await loadSdk();
      } catch (error) {
        return { available: false, detail: error instanceof Error ? error.message : String(error) };
      }
      if (options.pathToClaudeCodeExecutable)
        return { available: true, detail: `SDK loaded; CLI at ${options.pathToClaudeCodeExecutable}.` };
      const binary = findPlatformBinary();
      return binary
        ? { available: true, detail: `SDK loaded; CLI ${binary}.` }
        : {
            available: false,
            detail: `The Claude Code binary for ${process.platform}-${process.arch} is not installed. Reinstall @anthropic-ai/claude-agent-sdk without --omit=optional.`,
          };
    },

    execute(request: ExecuteRequest): AgentTurn {
      const input = new InputChannel();
      input.push(request.prompt);
      let ended = false;
      const events = async function* (): AsyncGenerator<UnsequencedEvent> {
        try {
          yield* runTurn(request, input);
        } finally {
          ended = true;
          input.close();
        }
      };
      return {
        events: events(),
        inject(message: string): Promise<void> {
          if (ended || !input.push(message)) return Promise.reject(new TurnNotRunningError(CLAUDE_SDK_BACKEND_NAME));
          return Promise.resolve();
        },
      };
    },

    setupAgentProfile(profile: AgentProfile, workspace: Workspace): Promise<void> {
      return writeAgentProfile(profile, workspace);
    },

    async setupSessionTranscripts(
      nativeSessionId: string,
      transcripts: RawTranscripts,
      workspace: Workspace,
    ): Promise<void> {
      await restoreTranscripts(configDir(), nativeSessionId, workspace.cwd, transcripts);
    },

    readSessionTranscripts(nativeSessionId: string, workspace: Workspace): Promise<RawTranscripts | undefined> {
      return readTranscripts(configDir(), nativeSessionId, workspace.cwd);
    },

    parseTranscripts(transcripts: RawTranscripts): ParsedTranscripts {
      return parseClaudeSdkTranscripts(transcripts);
    },

    writeSessionTranscripts: writeClaudeCodeTranscript,
  };

  async function* runTurn(request: ExecuteRequest, input: InputChannel): AsyncGenerator<UnsequencedEvent> {
    const nativeSessionId = request.nativeSessionId ?? nativeIdFor(request.sessionId);
    const model = request.model ?? request.profile?.model ?? options.defaultModel;
    const mapper = new ClaudeTurnMapper({
      clock,
      newId: (kind) => `${kind}_${randomUUID()}`,
      nativeSessionId,
      baseline: { totalCostUsd: 0, totalApiDurationMs: 0 },
      endpoint,
      model: model ?? CLAUDE_SDK_DEFAULT_MODEL,
    });
    const signal = request.signal;
    if (signal?.aborted) {
      yield* mapper.finish({ aborted: true });
      return;
    }
    let sdk;
    try {
      sdk = await loadSdk();
    } catch (error) {
      yield* mapper.finish({ aborted: false, failure: notInstalled(error) });
      return;
    }

    const cwd = request.cwd ?? options.cwd ?? process.cwd();
    // A turn the caller calls new only checks the cwd's own folder; others also look where a resume would.
    const transcript = await findTranscript(configDir(), nativeSessionId, cwd, {
      searchAllProjects: request.isNewSession !== true,
    });
    // An existing transcript means the CLI knows the id: asking for it as new would fail ("already in use").
    const resume = transcript !== undefined || request.isNewSession === false;
    if (transcript) {
      const saved = await readCostState(transcript);
      if (saved) mapper.resetBaseline(saved);
    }

    let stderr = '';
    const queryOptions = buildQueryOptions(request, {
      cwd,
      model,
      resume,
      nativeSessionId,
      mcpServer:
        request.tools && request.tools.length > 0
          ? parleyMcpServer(sdk, request.tools, signal, request.traceContext)
          : undefined,
      stderr: (data) => {
        stderr = tail(stderr + data, 8_000);
      },
    });

    if (signal?.aborted) {
      // Aborted while the SDK loaded or the transcript was read: no CLI is started.
      yield* mapper.finish({ aborted: true });
      return;
    }
    let query;
    try {
      query = sdk.query({ prompt: input, options: queryOptions });
    } catch (error) {
      yield* mapper.finish({ aborted: false, failure: processFailure(error, stderr) });
      return;
    }

    let abortRequested = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const running = query;
    const onAbort = (): void => {
      abortRequested = true;
      // interrupt() ends the turn the way a user's Escape does: partial output is kept and the
      // transcript stays resumable. close() is the fallback for a CLI that does not answer.
      running.interrupt().catch(() => running.close());
      graceTimer = setTimeout(() => running.close(), options.interruptGraceMs ?? DEFAULT_INTERRUPT_GRACE_MS);
      graceTimer.unref();
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    let failure: BackendFailure | undefined;
    let finished = false;
    try {
      for await (const message of running) {
        for (const event of mapper.map(message)) yield event;
        // Everything pushed so far is answered before the CLI exits (queued and background-subagent turns too).
        if (message.type === 'result') input.close();
      }
      finished = true;
    } catch (error) {
      finished = true;
      // With an error result the SDK also throws after yielding it; the result already said what happened.
      const afterResult =
        mapper.sawResult && error instanceof Error && error.message.startsWith('Claude Code returned an error result');
      if (!afterResult && !abortRequested) failure = processFailure(error, stderr);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (graceTimer) clearTimeout(graceTimer);
      input.close();
      // The consumer stopped iterating: do not leave the CLI running.
      if (!finished) running.close();
    }
    yield* mapper.finish({ aborted: abortRequested, failure });
  }

  function buildQueryOptions(
    request: ExecuteRequest,
    context: {
      cwd: string;
      model: string | undefined;
      resume: boolean;
      nativeSessionId: string;
      mcpServer: SdkMcpServerConfig | undefined;
      stderr: (data: string) => void;
    },
  ): Options {
    const profile = request.profile;
    const permissionMode = profile?.permissionMode ?? options.permissionMode ?? 'default';
    const mcpServers: Record<string, SdkMcpServerConfig> = {};
    for (const [name, server] of Object.entries(profile?.mcpServers ?? {})) {
      if (server.url) mcpServers[name] = { type: 'http', url: server.url };
      else if (server.command)
        mcpServers[name] = {
          type: 'stdio',
          command: server.command,
          args: server.args ?? [],
          ...(server.env ? { env: server.env } : {}),
        };
    }
    if (context.mcpServer) mcpServers[PARLEY_MCP_SERVER] = context.mcpServer;
    const allowedTools = [
      ...(profile?.allowedTools ?? []),
      ...(request.tools ?? []).map((tool) => mcpToolName(tool.name)),
    ];
    // Native turns carry no built system prompt: the agent's own instructions are what it is told (as on the API back ends).
    const instructions = request.systemPrompt ?? (profile?.instructions.trim() || undefined);
    const systemPrompt: Options['systemPrompt'] =
      (options.systemPrompt ?? 'claude_code') === 'claude_code'
        ? { type: 'preset', preset: 'claude_code', ...(instructions ? { append: instructions } : {}) }
        : instructions;
    const env = buildEnv(options);
    // Claude Code refuses to skip permissions as root unless it is told it runs in a sandbox.
    if (permissionMode === 'bypassPermissions' && process.getuid?.() === 0) env['IS_SANDBOX'] ??= '1';

    return {
      cwd: context.cwd,
      env,
      settingSources: options.settingSources ?? ['project'],
      includePartialMessages: true,
      ...(context.resume ? { resume: context.nativeSessionId } : { sessionId: context.nativeSessionId }),
      ...(context.model ? { model: context.model } : {}),
      permissionMode,
      ...(permissionMode === 'bypassPermissions' ? { allowDangerouslySkipPermissions: true } : {}),
      ...(allowedTools.length > 0 ? { allowedTools } : {}),
      ...(Object.keys(mcpServers).length > 0 ? { mcpServers } : {}),
      ...(systemPrompt !== undefined ? { systemPrompt } : {}),
      ...(request.toolHooks ? { hooks: sdkToolHooks(request.toolHooks) } : {}),
      ...(request.maxTurns !== undefined ? { maxTurns: request.maxTurns } : {}),
      ...(request.outputSchema ? { outputFormat: { type: 'json_schema' as const, schema: request.outputSchema } } : {}),
      ...(options.pathToClaudeCodeExecutable ? { pathToClaudeCodeExecutable: options.pathToClaudeCodeExecutable } : {}),
      stderr: context.stderr,
    };
  }
}

/**
 * Parley's `PreToolUse` and `PostToolUse` hooks as the SDK's own hook callbacks, so Claude Code asks
 * Parley before each of its tools runs and a refusal stops the call. Parley's MCP tools are left
 * out: their wrapped `execute` runs the hooks already, and each call runs them once.
 */
export function sdkToolHooks(hooks: NativeToolHooks): Partial<Record<HookEvent, HookCallbackMatcher[]>> {
  const parleyTool = `mcp__${PARLEY_MCP_SERVER}__`;
  return {
    PreToolUse: [
      {
        hooks: [
          async (input, toolUseId, { signal }) => {
            if (input.hook_event_name !== 'PreToolUse' || input.tool_name.startsWith(parleyTool)) return {};
            const decision = await hooks.beforeTool(
              { toolName: input.tool_name, toolInput: input.tool_input, toolUseId: toolUseId ?? input.tool_use_id },
              signal,
            );
            if (decision.block !== undefined)
              return {
                hookSpecificOutput: {
                  hookEventName: 'PreToolUse',
                  permissionDecision: 'deny',
                  permissionDecisionReason: decision.block,
                },
              };
            return decision.context
              ? { hookSpecificOutput: { hookEventName: 'PreToolUse', additionalContext: decision.context } }
              : {};
          },
        ],
      },
    ],
    PostToolUse: [
      {
        hooks: [
          async (input, toolUseId, { signal }) => {
            if (input.hook_event_name !== 'PostToolUse' || input.tool_name.startsWith(parleyTool)) return {};
            const response = input.tool_response;
            const content = typeof response === 'string' ? response : JSON.stringify(response ?? null);
            const isError =
              typeof response === 'object' &&
              response !== null &&
              (response as { is_error?: unknown }).is_error === true;
            const result = await hooks.afterTool(
              {
                toolName: input.tool_name,
                toolInput: input.tool_input,
                toolUseId: toolUseId ?? input.tool_use_id,
                response: { content, isError },
              },
              signal,
            );
            return result.feedback
              ? { hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: result.feedback } }
              : {};
          },
        ],
      },
    ],
  };
}

/** The CLI's environment. `env` replaces the child's environment in the SDK, so what it needs is passed explicitly. */
function buildEnv(options: ClaudeSdkBackendOptions): Record<string, string | undefined> {
  const base: Record<string, string | undefined> =
    options.inheritEnv === false ? { PATH: process.env['PATH'], HOME: process.env['HOME'] } : { ...process.env };
  const env: Record<string, string | undefined> = {
    ...base,
    // No telemetry, update checks or DNS lookups: only model requests leave the machine.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_AGENT_SDK_CLIENT_APP: 'parley',
    ...options.env,
  };
  if (options.apiKey) env['ANTHROPIC_API_KEY'] = options.apiKey;
  if (options.baseURL) env['ANTHROPIC_BASE_URL'] = options.baseURL;
  if (options.maxRetries !== undefined) env['CLAUDE_CODE_MAX_RETRIES'] = String(options.maxRetries);
  if (options.configDir) env['CLAUDE_CONFIG_DIR'] = options.configDir;
  return env;
}

function notInstalled(error: unknown): BackendFailure {
  const cause = error instanceof ClaudeSdkNotInstalledError ? error : new ClaudeSdkNotInstalledError(error);
  return {
    code: 'NOT_INSTALLED',
    backend: CLAUDE_SDK_BACKEND_NAME,
    message: 'The Claude Agent SDK (@anthropic-ai/claude-agent-sdk) is not installed, so no turn ran.',
    advice: `Install it with \`npm install --save-exact @anthropic-ai/claude-agent-sdk@${String(cause.data['version'])}\` (not with --omit=optional), or choose another back end.`,
    retryable: false,
    detail: cause.message,
  };
}

/** A CLI that could not start, exited or crashed. */
function processFailure(error: unknown, stderr: string): BackendFailure {
  const message = error instanceof Error ? error.message : String(error);
  const detail = [message, stderr.trim()].filter(Boolean).join('\n');
  if (/Native CLI binary .* not found/i.test(message)) {
    return {
      code: 'NOT_INSTALLED',
      backend: CLAUDE_SDK_BACKEND_NAME,
      message: `The Claude Code binary for ${process.platform}-${process.arch} is missing.`,
      advice:
        'Reinstall @anthropic-ai/claude-agent-sdk without --omit=optional, or set pathToClaudeCodeExecutable in the claude-sdk back-end options.',
      retryable: false,
      detail,
    };
  }
  if (/cannot be used with root/i.test(detail)) {
    return {
      code: 'PROCESS_FAILED',
      backend: CLAUDE_SDK_BACKEND_NAME,
      message: 'Claude Code refused bypassPermissions because it runs as root.',
      advice:
        'Run Parley as another user, set IS_SANDBOX=1 if this is a sandbox, or use allowedTools instead of bypassPermissions.',
      retryable: false,
      detail,
    };
  }
  if (/already in use/i.test(detail)) {
    return {
      code: 'PROCESS_FAILED',
      backend: CLAUDE_SDK_BACKEND_NAME,
      message: 'Claude Code says this session is already in use by another process.',
      advice: 'Wait for the other turn on this session to end (or stop it), then send the message again.',
      retryable: true,
      detail,
    };
  }
  const exit = /exited with code (\S+)|terminated by signal (\S+)|signal (SIG\w+)/i.exec(message);
  const how = exit
    ? exit[1] !== undefined
      ? `exited with code ${exit[1]}`
      : `was killed by ${exit[2] ?? exit[3]}`
    : `failed: ${message}`;
  return {
    code: 'PROCESS_FAILED',
    backend: CLAUDE_SDK_BACKEND_NAME,
    message: `The Claude Code process ${how} before the turn finished.`,
    advice:
      'Send the message again; the session resumes from its last saved point. If it keeps failing, read the CLI output below.',
    retryable: true,
    detail,
  };
}

/** The CLI binary of the SDK's platform package, if installed. */
function findPlatformBinary(): string | undefined {
  const require = createRequire(import.meta.url);
  for (const name of [
    `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}`,
    `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}-musl`,
  ]) {
    try {
      const packageJson = require.resolve(`${name}/package.json`);
      return packageJson.replace(/package\.json$/, process.platform === 'win32' ? 'claude.exe' : 'claude');
    } catch {
      // Not this one.
    }
  }
  return undefined;
}
