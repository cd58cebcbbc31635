/**
 * The OpenTelemetry GenAI semantic conventions Parley follows. They are in development status, so
 * the version is pinned: the names below are those of `@opentelemetry/semantic-conventions` 1.45.0
 * (its `incubating` entry point), and a test checks them against that package. They are copied
 * rather than imported because the incubating module is large and tracing must cost nothing when
 * it is off.
 */
export const GENAI_CONVENTIONS_VERSION = '@opentelemetry/semantic-conventions 1.45.0 (incubating)';

export const ATTR = {
  operationName: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  agentId: 'gen_ai.agent.id',
  conversationId: 'gen_ai.conversation.id',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  workflowName: 'gen_ai.workflow.name',
  tokenType: 'gen_ai.token.type',
  errorType: 'error.type',
} as const;

export const OPERATION = {
  invokeAgent: 'invoke_agent',
  invokeWorkflow: 'invoke_workflow',
  chat: 'chat',
  executeTool: 'execute_tool',
} as const;

export const METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
} as const;

/** Parley's own attributes (no GenAI convention covers them), under the `parley.` prefix. */
export const PARLEY_ATTR = {
  costUsd: 'parley.cost_usd',
  backend: 'parley.backend',
  tokensBefore: 'parley.compaction.tokens_before',
  tokensAfter: 'parley.compaction.tokens_after',
  checkpointVersion: 'parley.compaction.checkpoint_version',
  phaseName: 'parley.workflow.phase',
  promptId: 'parley.prompt.id',
  runId: 'parley.run.id',
} as const;

/** `gen_ai.provider.name` for a Parley back end (the conventions' well-known values where one fits). */
export function providerNameOf(backend: string): string {
  if (backend === 'claude-sdk' || backend === 'anthropic-api') return 'anthropic';
  if (backend === 'openai-compatible' || backend === 'codex') return 'openai';
  if (backend === 'gemini-cli') return 'gcp.gemini';
  return `parley.${backend}`;
}
