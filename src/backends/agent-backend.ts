import type { Context } from '@opentelemetry/api';
import * as z from 'zod';
import {
  ParleyError,
  type ConversationBlock,
  type ParleyErrorOptions,
  type UnsequencedEvent,
  type SubagentThread,
} from '../conversation/index.js';
import type { PortableHistory, TranscriptWriteOptions, WrittenTranscript } from './transcripts/writers/index.js';

/**
 * The contract every back end implements. This module imports no back end; the core and every
 * adapter depend on it, never the reverse. Nothing above `src/backends/`
 * branches on which back end it talks to.
 */

/** `native`: the back end keeps the conversation and resumes it by id. `managed`: Parley builds every request. */
export type Continuity = 'native' | 'managed';

export const ModelPricingSchema = z.object({
  /** US dollars per million tokens. */
  inputPerMillion: z.number().nonnegative(),
  outputPerMillion: z.number().nonnegative(),
  cacheReadPerMillion: z.number().nonnegative().optional(),
  cacheWritePerMillion: z.number().nonnegative().optional(),
});
/** A model's prices per million tokens: input, output, cache read and cache write. */
export type ModelPricing = z.infer<typeof ModelPricingSchema>;

/** A model a back end offers: its id, context window and prices. */
export interface ModelInfo {
  id: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  /** Absent when unknown: cost is then unknown, never zero. */
  pricing?: ModelPricing;
}

/** What a back end says about itself: its name, how it carries a conversation, its models. */
export interface BackendDescription {
  name: string;
  continuity: Continuity;
  models: ModelInfo[];
  defaultModel?: string;
  /** One line for `parley backends`: what it is and how it is configured. */
  summary?: string;
}

/** A tool Parley provides to the model (in-process MCP for the Claude SDK, function tools for the APIs). */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: Record<string, unknown>;
  execute(input: unknown, options: ToolExecuteOptions): Promise<ToolOutput>;
}

/** What a tool's `execute` gets besides its input: an `AbortSignal`, the tool use's id and the call's trace context. */
export interface ToolExecuteOptions {
  signal?: AbortSignal;
  /**
   * The id of the tool use being executed (its `ToolUseBlock.toolUseId`), so what the tool asks or
   * shows (a permission prompt) can name the call the conversation already announced. Undefined
   * when the back end does not know it (a CLI calling back over MCP).
   */
  toolUseId?: string;
  /**
   * The tool call's OpenTelemetry context (its `execute_tool` span), from the back end's
   * `ExecuteRequest.traceContext()`: the parent of any span the tool starts (a worker it
   * dispatches, another agent's turn). Undefined when the turn is not traced.
   */
  traceContext?: Context;
}

/** What a tool returns: its text, whether it is an error, and structured data beside the text. */
export interface ToolOutput {
  content: string;
  isError?: boolean;
  /** Structured output kept beside the text. */
  data?: unknown;
}

/** An MCP server a back end should connect the agent to. */
export interface McpServerConfig {
  command?: string;
  args?: string[];
  url?: string;
  env?: Record<string, string>;
}

/** An agent as a back end sees it: role, instructions, tools, MCP servers. */
export interface AgentProfile {
  name: string;
  description?: string;
  instructions: string;
  allowedTools?: string[];
  permissionMode?: 'default' | 'acceptEdits' | 'bypassPermissions' | 'plan';
  mcpServers?: Record<string, McpServerConfig>;
  model?: string;
}

/** One turn asked of a back end: the prompt, the system prompt or native session, tools, model and an `AbortSignal`. */
export interface ExecuteRequest {
  /** Parley's session id (for native back ends, also the native id on the first turn where possible). */
  sessionId: string;
  /** The new user message. */
  prompt: string;
  /** Managed sessions: the system prompt built by request building (role, context, checkpoint, recent conversation). */
  systemPrompt?: string;
  /** Native continuity: the back end's own session id, and whether this is its first turn. */
  nativeSessionId?: string;
  isNewSession?: boolean;
  model?: string;
  profile?: AgentProfile;
  tools?: ToolDefinition[];
  /** JSON Schema the final answer must match (autonomous workers). */
  outputSchema?: Record<string, unknown>;
  /** The workspace the agent works in. */
  cwd?: string;
  maxTurns?: number;
  /** Aborting ends the turn gracefully: a `system` block says so, usage so far is reported. */
  signal?: AbortSignal;
  /**
   * Where the back end's own spans go, asked at the moment it starts one: the open tool call's
   * OpenTelemetry context, else the turn's. A managed back end passes it to `startChatSpan` for each
   * model call, and every back end passes it to a tool's `execute` (`ToolExecuteOptions`). Parents
   * are passed, not read from a context manager, so none is needed (see src/telemetry/agent-trace.ts).
   * Undefined when the turn is not traced.
   */
  traceContext?: () => Context;
  /**
   * People's `PreToolUse` and `PostToolUse` hooks for the tools a native back end brings itself
   * (Claude Code's `Bash` and `Edit`, the Gemini CLI's, Codex's commands). Parley's own `tools`
   * are wrapped already and must not pass here, so each call runs the hooks once.
   */
  toolHooks?: NativeToolHooks;
  /**
   * Asks a person before a native back end's own tool call runs, where the back end can wait for
   * the answer (Codex through its app server: a command, a patch). The caller routes it to its
   * approvals (a draft's channel, an ACP client, a workflow's approver); without it, such a back
   * end keeps to what its sandbox allows and asks nobody. Never throws; an abort denies.
   */
  askApproval?: (ask: NativeApprovalAsk, signal?: AbortSignal) => Promise<NativeApprovalDecision>;
}

/**
 * What a native back end asks approval for: a shell command, or an edit or write of files, with
 * what a person needs to decide (the command and folder, or the paths and the diff). The same
 * fields as the workspace tools' requests, less the session and what `allow_always` remembers,
 * which the caller adds.
 */
export interface NativeApprovalAsk {
  kind: 'command' | 'edit' | 'write';
  /** The tool as the conversation shows it: `shell`, `edit_file`, `write_file`. */
  tool: string;
  /** The tool use that asks, when the conversation shows it already. */
  toolUseId?: string;
  /** One line a person reads: "Run `touch notes.txt`", "Edit notes.txt". */
  title: string;
  command?: string;
  cwd?: string;
  path?: string;
  diff?: string;
}

/** A person's answer; `allow_always` is remembered by the caller, and the back end runs the call once. */
export type NativeApprovalDecision = 'allow_once' | 'allow_always' | 'deny';

/** One call of a back end's own tool, as the hooks see it. */
export interface NativeToolCall {
  toolName: string;
  toolInput: unknown;
  toolUseId: string;
}

/**
 * Hooks around a native back end's own tool calls. `beforeTool` is awaited before the call runs
 * where the back end lets Parley decide first (the Claude Agent SDK's hook callbacks): a `block`
 * refuses the call with its reason. A back end that runs its tools before Parley hears of them
 * (the Gemini CLI, Codex) calls it as the call starts and cannot refuse it. Neither throws.
 */
export interface NativeToolHooks {
  beforeTool(call: NativeToolCall, signal?: AbortSignal): Promise<{ block?: string; context?: string }>;
  afterTool(
    call: NativeToolCall & { response: { content: string; isError: boolean } },
    signal?: AbortSignal,
  ): Promise<{ feedback?: string }>;
}

/**
 * One running turn. Iterate `events` to drive it; the last event is a `metadata_update` with
 * `turnComplete: true`, also after an error or an abort (the turn still counts and is priced).
 * A failure is an event (a `system` block with subtype `error`), not a thrown exception.
 */
export interface AgentTurn {
  events: AsyncIterable<UnsequencedEvent>;
  /** Delivers a message to the running turn. Missing when the back end cannot take one mid-turn. */
  inject?(message: string): Promise<void>;
}

/** A back end's native transcript files, as text, with their names. */
export interface RawTranscripts {
  /** The main transcript, in the back end's own format. */
  main: string;
  subagents?: Array<{ id: string; rawTranscript: string }>;
}

/** Something in a native transcript that could not be read, and where. */
export interface ParseWarning {
  line?: number;
  message: string;
}

/** Native transcripts read as Parley blocks, with subagents and warnings. */
export interface ParsedTranscripts {
  blocks: ConversationBlock[];
  subagents: SubagentThread[];
  warnings: ParseWarning[];
  nativeSessionId?: string;
}

/** The folder a back end writes an agent profile into. */
export interface Workspace {
  cwd: string;
  writeFile(relativePath: string, content: string): Promise<void>;
}

/**
 * The contract every back end implements: describe itself, run a turn as a stream of events, and, optionally, set up
 * profiles and read or write native transcripts. An optional method that is missing throws `UnsupportedError`.
 */
export interface AgentBackend {
  describe(): BackendDescription;
  /** Starts a turn. Must not throw for back-end failures: those end the turn with an error block. */
  execute(request: ExecuteRequest): AgentTurn;
  /** Writes the agent's profile where the back end reads it (CLAUDE.md and .claude/agents/, GEMINI.md). */
  setupAgentProfile?(profile: AgentProfile, workspace: Workspace): Promise<void>;
  /** Restores saved raw transcripts into the back end's own storage, so a native session resumes on another machine. */
  setupSessionTranscripts?(nativeSessionId: string, transcripts: RawTranscripts, workspace: Workspace): Promise<void>;
  /** Reads the back end's native transcript of a session, to save it (SavedSessionData). */
  readSessionTranscripts?(nativeSessionId: string, workspace: Workspace): Promise<RawTranscripts | undefined>;
  /**
   * Writes Parley's history of a session as this back end's own transcript, so a session that
   * began anywhere (another back end, an import) resumes here natively. Pure: the caller keeps
   * the text as the session's transcript and puts it in place with `setupSessionTranscripts`.
   * What the back end cannot represent becomes marked text and is listed in `conversions`.
   */
  writeSessionTranscripts?(history: PortableHistory, options: TranscriptWriteOptions): WrittenTranscript;
  /** Parses native transcripts into blocks and subagent threads. */
  parseTranscripts?(transcripts: RawTranscripts): ParsedTranscripts;
  /** Whether the back end can be used now (key present, binary installed, endpoint answering). */
  checkAvailability?(options?: { signal?: AbortSignal }): Promise<{ available: boolean; detail: string }>;
}

/** Thrown by a caller-facing helper when a back end lacks an optional ability. */
export class UnsupportedError extends ParleyError {
  constructor(backend: string, ability: string, options: ParleyErrorOptions = {}) {
    super('UNSUPPORTED', `The ${backend} back end cannot ${ability}.`, {
      fault: 'user',
      ...options,
      data: { backend, ability },
    });
  }
}

/** Calls an optional ability, or throws UnsupportedError naming it. */
export function requireAbility<K extends keyof AgentBackend>(
  backend: AgentBackend,
  ability: K,
  description: string,
): NonNullable<AgentBackend[K]> {
  const method = backend[ability];
  if (typeof method !== 'function') throw new UnsupportedError(backend.describe().name, description);
  return (method as (...args: unknown[]) => unknown).bind(backend) as NonNullable<AgentBackend[K]>;
}
