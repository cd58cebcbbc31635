import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ParleyTool } from './tools.js';

/**
 * The drafted agent's tools as a real MCP server, for back ends (and outside clients) that take
 * MCP servers rather than Parley's ToolDefinitions. Connect it to any MCP transport (stdio,
 * streamable HTTP, in-memory). The tools behave exactly as the ToolDefinitions do: same input
 * validation, same results, errors as `isError` results rather than protocol errors.
 */
export async function createDraftMcpServer(
  tools: readonly ParleyTool[],
  options: { name?: string; version?: string } = {},
): Promise<McpServer> {
  // Loaded on first use: the MCP SDK takes long to import, and most servers never serve MCP.
  const { McpServer: Server } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const server = new Server({ name: options.name ?? 'parley', version: options.version ?? '0.1.0' });
  for (const entry of tools) {
    server.registerTool(
      entry.name,
      { description: entry.description, inputSchema: entry.schema },
      async (args, extra) => {
        const output = await entry.execute(args, { signal: extra.signal });
        return {
          content: [{ type: 'text' as const, text: output.content }],
          ...(output.isError ? { isError: true } : {}),
        };
      },
    );
  }
  return server;
}
