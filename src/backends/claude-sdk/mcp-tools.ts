import type { McpSdkServerConfigWithInstance, SdkMcpToolDefinition } from '@anthropic-ai/claude-agent-sdk';
import * as z from 'zod';
import type { ExecuteRequest, ToolDefinition } from '../agent-backend.js';
import type { ClaudeAgentSdk } from './sdk-loader.js';

/** The in-process MCP server that carries Parley's tools; the model sees them as `mcp__parley__<name>`. */
export const PARLEY_MCP_SERVER = 'parley';

export function mcpToolName(name: string): string {
  return `mcp__${PARLEY_MCP_SERVER}__${name}`;
}

/**
 * Parley's tools as an in-process MCP server (`createSdkMcpServer`): the CLI calls back into this
 * process, so a tool such as the draft layer's `draft_agent` runs with Parley's state. Tools are
 * always loaded (full schemas in the request) rather than deferred behind ToolSearch, so the model
 * can call them at once. `traceContext` is the turn's (asked when a call arrives, so a worker that
 * `draft_agent` dispatches nests under the call's `execute_tool` span).
 */
export function parleyMcpServer(
  sdk: ClaudeAgentSdk,
  tools: readonly ToolDefinition[],
  signal: AbortSignal | undefined,
  traceContext?: ExecuteRequest['traceContext'],
): McpSdkServerConfigWithInstance {
  return sdk.createSdkMcpServer({
    name: PARLEY_MCP_SERVER,
    version: '1.0.0',
    alwaysLoad: true,
    tools: tools.map((definition) => toSdkTool(definition, signal, traceContext)),
  });
}

function toSdkTool(
  definition: ToolDefinition,
  turnSignal: AbortSignal | undefined,
  traceContext: ExecuteRequest['traceContext'],
): SdkMcpToolDefinition {
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: inputShape(definition.inputSchema),
    handler: async (args, extra) => {
      const requestSignal = (extra as { signal?: AbortSignal } | undefined)?.signal;
      const signals = [turnSignal, requestSignal].filter((signal): signal is AbortSignal => signal !== undefined);
      const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
      try {
        const output = await definition.execute(args, { signal, traceContext: traceContext?.() });
        return {
          content: [{ type: 'text' as const, text: output.content }],
          ...(output.isError ? { isError: true } : {}),
          ...(isPlainObject(output.data) ? { structuredContent: output.data } : {}),
        };
      } catch (error) {
        // A throwing tool is an error result the model can read, not a crash of the turn.
        return {
          content: [
            {
              type: 'text' as const,
              text: `Tool "${definition.name}" failed: ${error instanceof Error ? error.message : String(error)}`,
            },
          ],
          isError: true,
        };
      }
    },
  };
}

/**
 * Parley's tools carry JSON Schema; the SDK wants zod. zod 4 converts the schema
 * (`z.fromJSONSchema`), and the whole object schema is handed over, not just its shape: the SDK
 * passes a schema that is not a raw shape to its MCP server as it is, so `additionalProperties`
 * survives (a shape would be wrapped in a strict object that drops every undeclared key; measured
 * with SDK 0.3.329).
 */
function inputShape(schema: Record<string, unknown>): z.ZodRawShape {
  const converted = z.fromJSONSchema({ type: 'object', ...schema } as Parameters<typeof z.fromJSONSchema>[0]);
  return converted as unknown as z.ZodRawShape;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
