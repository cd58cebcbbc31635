import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ExecuteRequest, ToolDefinition } from '../agent-backend.js';

/**
 * Parley's tools for a Codex turn, as an MCP server Codex connects to: the Codex CLI is another
 * process, so the tools (the draft layer's workers, agent conversations, projects and tasks) are
 * served over MCP's streamable HTTP on 127.0.0.1, on a port of its own, for the turn's length,
 * behind a random bearer token Codex reads from its environment. Which tools a role gets was
 * decided by whoever built the request (the draft layer gates them as it does for claude-sdk);
 * Codex is told to enable exactly these and to run them without asking (its default asks, and a
 * headless turn cannot answer, so every call would be refused).
 */

/** A running bridge: its URL and token, and how to stop it. */
export interface McpBridge {
  url: string;
  token: string;
  close(): Promise<void>;
}

/** Starts the bridge for one turn's tools; `close` ends it (and any call still running is aborted). */
export async function startMcpBridge(
  tools: readonly ToolDefinition[],
  options: { signal?: AbortSignal; traceContext?: ExecuteRequest['traceContext'] } = {},
): Promise<McpBridge> {
  const token = randomBytes(24).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  const stopped = new AbortController();
  const turnSignal = options.signal ? AbortSignal.any([options.signal, stopped.signal]) : stopped.signal;
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  const http = createServer((request, response) => {
    void handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
      else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const presented = Buffer.from(request.headers.authorization ?? '');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if ((request.url ?? '').split('?')[0] !== '/mcp') {
      response.writeHead(404).end();
      return;
    }
    // Stateless: one server and transport per request, so nothing is kept between Codex's calls.
    const server = mcpServer(byName, turnSignal, options.traceContext);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
  }

  const port = await new Promise<number>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve((http.address() as AddressInfo).port));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        stopped.abort();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

function mcpServer(
  tools: ReadonlyMap<string, ToolDefinition>,
  signal: AbortSignal,
  traceContext: ExecuteRequest['traceContext'],
): Server {
  const server = new Server({ name: 'parley', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: { type: 'object' as const, ...tool.inputSchema },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools.get(request.params.name);
    if (!tool)
      return {
        content: [{ type: 'text' as const, text: `Parley has no tool "${request.params.name}" for this agent.` }],
        isError: true,
      };
    try {
      const output = await tool.execute(request.params.arguments ?? {}, {
        signal: AbortSignal.any([signal, extra.signal]),
        traceContext: traceContext?.(),
      });
      // No structuredContent: Codex then sends the model that instead of the text, which is what Parley's tools write for it.
      return {
        content: [{ type: 'text' as const, text: output.content }],
        ...(output.isError ? { isError: true } : {}),
      };
    } catch (error) {
      // A throwing tool is an error result the model can read, not a failed turn.
      return {
        content: [
          {
            type: 'text' as const,
            text: `Tool "${tool.name}" failed: ${error instanceof Error ? error.message : String(error)}`,
          },
        ],
        isError: true,
      };
    }
  });
  return server;
}
