import type { McpServer } from '@agentclientprotocol/sdk';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { ToolDefinition, ToolOutput } from '../backends/index.js';

/**
 * The editor's MCP servers (`session/new`'s `mcpServers`: stdio and HTTP) as the agent's tools.
 * Parley connects to each with the MCP client and hands its tools to the back end as Parley tool
 * definitions, the way every back end takes tools (in-process MCP for the Claude SDK, function
 * tools for the APIs), so no layer above the back ends branches on which one runs. A server that
 * cannot be reached is reported and left out; the session still opens.
 */

export interface EditorTools {
  tools: ToolDefinition[];
  /** One line per server that could not be used. */
  problems: string[];
  close(): Promise<void>;
}

/** Tool names the model APIs accept: letters, digits, `_` and `-`, at most 64. */
function toolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

export async function connectEditorTools(
  servers: readonly McpServer[],
  options: { cwd: string; clientName: string; clientVersion: string },
): Promise<EditorTools> {
  if (servers.length === 0) return { tools: [], problems: [], close: async () => undefined };
  const [
    { Client },
    { StdioClientTransport, getDefaultEnvironment },
    { StreamableHTTPClientTransport },
    { SSEClientTransport },
  ] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
  ]);
  const clients: McpClient[] = [];
  const tools: ToolDefinition[] = [];
  const problems: string[] = [];
  await Promise.all(
    servers.map(async (server) => {
      const client = new Client({ name: options.clientName, version: options.clientVersion });
      try {
        if ('type' in server && (server.type === 'http' || server.type === 'sse')) {
          const headers = Object.fromEntries(server.headers.map((header) => [header.name, header.value]));
          const url = new URL(server.url);
          await client.connect(
            server.type === 'http'
              ? new StreamableHTTPClientTransport(url, { requestInit: { headers } })
              : new SSEClientTransport(url, { requestInit: { headers } }),
          );
        } else {
          const stdio = server as Extract<McpServer, { command: string }>;
          await client.connect(
            new StdioClientTransport({
              command: stdio.command,
              args: stdio.args,
              env: {
                ...getDefaultEnvironment(),
                ...Object.fromEntries(stdio.env.map((variable) => [variable.name, variable.value])),
              },
              cwd: options.cwd,
              // The server's own log goes to Parley's stderr, never to the protocol on stdout.
              stderr: 'inherit',
            }),
          );
        }
        clients.push(client);
        const listed = await client.listTools();
        for (const tool of listed.tools) tools.push(definitionOf(client, server.name, tool));
      } catch (error) {
        problems.push(
          `MCP server "${server.name}" could not be used: ${error instanceof Error ? error.message : String(error)}`,
        );
        await client.close().catch(() => undefined);
      }
    }),
  );
  return {
    tools,
    problems,
    close: async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    },
  };
}

function definitionOf(
  client: McpClient,
  server: string,
  tool: { name: string; description?: string | undefined; inputSchema: Record<string, unknown> },
): ToolDefinition {
  return {
    name: toolName(server, tool.name),
    description: tool.description ?? `${tool.name} (from the editor's MCP server "${server}")`,
    inputSchema: tool.inputSchema,
    async execute(input, { signal }): Promise<ToolOutput> {
      try {
        const result = await client.callTool(
          { name: tool.name, arguments: (input ?? {}) as Record<string, unknown> },
          undefined,
          signal ? { signal } : {},
        );
        const parts = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: string }>) : [];
        const text = parts.map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type}]`)).join('\n');
        return {
          content: text,
          ...(result.isError === true ? { isError: true } : {}),
          ...(result.structuredContent !== undefined ? { data: result.structuredContent } : {}),
        };
      } catch (error) {
        return {
          content: `${tool.name} on MCP server "${server}" failed: ${error instanceof Error ? error.message : String(error)}`,
          isError: true,
        };
      }
    },
  };
}
