import * as z from 'zod';

/**
 * The part of `codex app-server`'s protocol (v2, Codex 0.163) Parley uses, as `codex app-server
 * generate-ts` prints it: what Parley sends (initialize, thread/start, thread/resume, turn/start,
 * turn/interrupt), the notifications it reads, and the two approval requests it answers. Shapes
 * Parley acts on are parsed (zod); everything else is ignored, so a newer server's additions do not
 * break a turn.
 */

export const APP_SERVER_METHODS = {
  initialize: 'initialize',
  initialized: 'initialized',
  threadStart: 'thread/start',
  threadResume: 'thread/resume',
  turnStart: 'turn/start',
  turnInterrupt: 'turn/interrupt',
  commandApproval: 'item/commandExecution/requestApproval',
  fileChangeApproval: 'item/fileChange/requestApproval',
} as const;

/** `AskForApproval`: when Codex asks before it runs a command or applies a patch. */
export type AppServerApprovalPolicy = 'untrusted' | 'on-request' | 'never';
export type AppServerSandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access';

/** What thread/start and thread/resume share: the thread's model, folder, policy and configuration. */
export interface AppServerThreadSettings {
  model: string;
  cwd: string;
  approvalPolicy: AppServerApprovalPolicy;
  sandbox: AppServerSandboxMode;
  /** Configuration overrides (config.toml's keys as JSON): the model provider, MCP servers. */
  config: Record<string, unknown>;
}

export const ThreadResponseSchema = z.object({ thread: z.object({ id: z.string().min(1) }) });
export const TurnResponseSchema = z.object({ turn: z.object({ id: z.string().min(1) }) });

const TurnErrorSchema = z.object({ message: z.string() }).nullish();

export const TurnCompletedSchema = z.object({
  threadId: z.string(),
  turn: z.object({
    id: z.string(),
    status: z.enum(['completed', 'interrupted', 'failed', 'inProgress']),
    error: TurnErrorSchema,
  }),
});

const TokenUsageBreakdownSchema = z.object({
  inputTokens: z.number(),
  cachedInputTokens: z.number(),
  outputTokens: z.number(),
  cacheWriteInputTokens: z.number().optional(),
  reasoningOutputTokens: z.number().optional(),
});
export const TokenUsageUpdatedSchema = z.object({
  turnId: z.string(),
  tokenUsage: z.object({ total: TokenUsageBreakdownSchema }),
});

export const ErrorNotificationSchema = z.object({
  error: z.object({ message: z.string() }),
  willRetry: z.boolean(),
});
export const WarningNotificationSchema = z.object({ message: z.string() });

export const PlanUpdatedSchema = z.object({
  turnId: z.string(),
  plan: z.array(z.object({ step: z.string(), status: z.string() })),
});

/** `ThreadItem`, the variants Parley shows; the rest pass as `{type, id}` and are dropped. */
const FileUpdateChangeSchema = z.object({
  path: z.string(),
  kind: z.object({ type: z.enum(['add', 'delete', 'update']) }),
  diff: z.string().nullish(),
});
export const AppServerItemSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('agentMessage'), id: z.string(), text: z.string() }),
  z.object({
    type: z.literal('reasoning'),
    id: z.string(),
    summary: z.array(z.string()).default([]),
    content: z.array(z.string()).default([]),
  }),
  z.object({
    type: z.literal('commandExecution'),
    id: z.string(),
    command: z.string(),
    cwd: z.string().nullish(),
    status: z.enum(['inProgress', 'completed', 'failed', 'declined']),
    commandActions: z.array(z.object({ command: z.string().optional() }).loose()).nullish(),
    aggregatedOutput: z.string().nullish(),
    exitCode: z.number().nullish(),
  }),
  z.object({
    type: z.literal('fileChange'),
    id: z.string(),
    changes: z.array(FileUpdateChangeSchema),
    status: z.enum(['inProgress', 'completed', 'failed', 'declined']),
  }),
  z.object({
    type: z.literal('mcpToolCall'),
    id: z.string(),
    server: z.string(),
    tool: z.string(),
    status: z.enum(['inProgress', 'completed', 'failed']),
    arguments: z.unknown(),
    result: z
      .object({ content: z.array(z.unknown()), structuredContent: z.unknown().optional() })
      .loose()
      .nullish(),
    error: z.object({ message: z.string() }).nullish(),
  }),
  z.object({ type: z.literal('webSearch'), id: z.string(), query: z.string().default('') }),
]);
export type AppServerItem = z.infer<typeof AppServerItemSchema>;
export const ItemNotificationSchema = z.object({ item: z.object({ type: z.string() }).loose() });

export const CommandApprovalParamsSchema = z.object({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  command: z.string().nullish(),
  cwd: z.string().nullish(),
  reason: z.string().nullish(),
  commandActions: z.array(z.object({ command: z.string().optional() }).loose()).nullish(),
});
export const FileChangeApprovalParamsSchema = z.object({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  reason: z.string().nullish(),
});

/** The answer to either approval request: run it, or do not (the model is told it was declined). */
export type AppServerApprovalDecision = 'accept' | 'decline';
