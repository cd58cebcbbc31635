import type * as Bridge from './mcp-bridge.js';

/**
 * What the rest of Parley uses of the MCP bridge (mcp-bridge.ts), without loading it: the bridge
 * brings the MCP SDK's server, its HTTP transport (node:http, Hono) and its validator (Ajv), a
 * tenth of a second that every command loading the back ends paid (`parley import` among them)
 * and that only a Codex turn with Parley's tools needs.
 */

/** The MCP server name Codex is given for Parley's tools: the model sees `mcp__parley__<tool>`. */
export const CODEX_PARLEY_MCP_SERVER = 'parley';
/** The variable the Codex child reads the bridge's bearer token from. */
export const CODEX_MCP_TOKEN_VARIABLE = 'PARLEY_MCP_TOKEN';

/** A running bridge: its URL and token, and how to stop it. */
export type McpBridge = Bridge.McpBridge;

/** Starts the bridge (mcp-bridge.ts, loaded on this first call). */
export async function startMcpBridge(...args: Parameters<typeof Bridge.startMcpBridge>): Promise<McpBridge> {
  return (await import('./mcp-bridge.js')).startMcpBridge(...args);
}
