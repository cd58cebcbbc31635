import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ParleyTool } from './tools.js';

/**
 * The drafted agent's tools as a real MCP server, for back ends (and outside clients) that take
 * MCP servers rather than Parley's ToolDefinitions. Connect it to any MCP transport (stdio,
 * streamable HTTP, in-memory). The tools behave exactly as the ToolDefinitions do: same input
 * validation, same results, errors as `isError` results rather than protocol errors.
 */
export function createDraftMcpServer(tools: readonly ParleyTool[], options: { name?: string; version?: string } = {}): McpServer {
  const server = new McpServer({ name: options.name ?? 'parley', version: options.version ?? '0.1.0' });
  for (const entry of tools) {
    server.registerTool(entry.name, { description: entry.description, inputSchema: entry.schema }, async (args, extra) => {
      const output = await entry.execute(args, { signal: extra.signal });
      return {
        content: [{ type: 'text' as const, text: output.content }],
        ...(output.isError ? { isError: true } : {}),
      };
    });
  }
  return server;
}
