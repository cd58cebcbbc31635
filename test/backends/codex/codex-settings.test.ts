/**
 * What a Codex turn is told without running the CLI: the role's permission mode as Codex's approval
 * policy and sandbox, the MCP servers in Codex's configuration, and the bridge that serves Parley's
 * tools (a real MCP client over HTTP, refused without the token).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ThreadOptions } from '@openai/codex-sdk';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  BackendNotConfiguredError,
  codexMcpServersOf,
  codexPolicyOf,
  codexResolvable,
  configuredBackends,
  createBackend,
  createCodexBackend,
  resolveBackendConfig,
  startCodexMcpBridge,
  type ToolDefinition,
} from '../../../src/backends/index.js';
import { providerNameOf } from '../../../src/telemetry/index.js';
import { listBackends } from '../../../src/draft/backend-list.js';
import { collect } from '../conformance.js';

const echo: ToolDefinition = {
  name: 'echo',
  description: 'Echoes its text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  execute: (input) => Promise.resolve({ content: `echo: ${(input as { text: string }).text}` }),
};

describe('codex turn settings', () => {
  it('maps each permission mode to an approval policy Codex can keep headless and the sandbox that bounds the role', () => {
    expect(codexPolicyOf('plan')).toEqual({ approvalPolicy: 'never', sandboxMode: 'read-only' });
    expect(codexPolicyOf(undefined)).toEqual({ approvalPolicy: 'never', sandboxMode: 'workspace-write' });
    expect(codexPolicyOf('acceptEdits').sandboxMode).toBe('workspace-write');
    expect(codexPolicyOf('bypassPermissions').sandboxMode).toBe('danger-full-access');
  });

  it('configures the role’s MCP servers and Parley’s own with exactly the request’s tools, approved in advance', () => {
    const servers = codexMcpServersOf(
      {
        name: 'dev',
        instructions: 'x',
        mcpServers: {
          files: { command: 'node', args: ['server.js'], env: { A: '1' } },
          remote: { url: 'http://127.0.0.1:9/mcp' },
          // A role cannot take Parley's own server's name.
          parley: { url: 'http://example.invalid/mcp' },
        },
      },
      { url: 'http://127.0.0.1:5/mcp' },
      [echo],
    );
    expect(servers).toEqual({
      files: { command: 'node', args: ['server.js'], env: { A: '1' } },
      remote: { url: 'http://127.0.0.1:9/mcp' },
      parley: {
        url: 'http://127.0.0.1:5/mcp',
        bearer_token_env_var: 'PARLEY_MCP_TOKEN',
        enabled_tools: ['echo'],
        default_tools_approval_mode: 'approve',
        startup_timeout_sec: 20,
        tool_timeout_sec: 3600,
      },
    });
    expect(codexMcpServersOf(undefined, undefined, [])).toEqual({});
  });

  it('hands the CLI the policy, the MCP configuration and the bridge’s token, and closes the bridge after the turn', async () => {
    const home = await mkdtemp(join(tmpdir(), 'parley-codex-settings-'));
    onTestFinished(() => rm(home, { recursive: true, force: true }));
    const seen: { options?: Record<string, unknown>; thread?: ThreadOptions } = {};
    let bridgeUrl = '';
    class FakeCodex {
      constructor(options: Record<string, unknown>) {
        seen.options = options;
      }
      startThread(thread: ThreadOptions) {
        seen.thread = thread;
        return {
          id: null,
          runStreamed: () => Promise.resolve({ events: (async function* () {})() }),
        };
      }
    }
    const backend = createCodexBackend({
      apiKey: 'key',
      codexHome: home,
      loadSdk: () => Promise.resolve({ Codex: FakeCodex } as never),
    });
    await collect(
      backend.execute({
        sessionId: 's',
        prompt: 'hi',
        tools: [echo],
        profile: { name: 'planner', instructions: 'Plan.', permissionMode: 'plan' },
      }),
    );
    expect(seen.thread).toMatchObject({ approvalPolicy: 'never', sandboxMode: 'read-only', skipGitRepoCheck: true });
    const config = seen.options?.['config'] as { mcp_servers: { parley: { url: string } } };
    bridgeUrl = config.mcp_servers.parley.url;
    expect(bridgeUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect((seen.options?.['env'] as Record<string, string>)['PARLEY_MCP_TOKEN']).toMatch(/^[\w-]{20,}$/);
    // The turn is over: its tools are no longer served.
    await expect(fetch(bridgeUrl, { method: 'POST' })).rejects.toThrow();
  });

  it('serves the tools over MCP to a client with the token, and refuses one without it', async () => {
    const bridge = await startCodexMcpBridge([echo]);
    try {
      const refused = await fetch(bridge.url, { method: 'POST', body: '{}' });
      expect(refused.status).toBe(401);
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(bridge.url), {
          requestInit: { headers: { authorization: `Bearer ${bridge.token}` } },
        }),
      );
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
      expect(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).toMatchObject({
        content: [{ type: 'text', text: 'echo: hi' }],
      });
      expect(await client.callTool({ name: 'missing', arguments: {} })).toMatchObject({ isError: true });
      await client.close();
    } finally {
      await bridge.close();
    }
  });

  it('reads codex’s base URL and key variable from parley.config.json, apart from OPENAI_BASE_URL, and names the variable when the key is missing', async () => {
    const project = await mkdtemp(join(tmpdir(), 'parley-codex-config-'));
    onTestFinished(() => rm(project, { recursive: true, force: true }));
    await writeFile(
      join(project, 'parley.config.json'),
      JSON.stringify({
        backends: {
          codex: { baseUrl: 'http://127.0.0.1:7/v1', apiKeyEnv: 'MY_CODEX_KEY', codexHome: join(project, 'home') },
        },
      }),
    );
    const config = await resolveBackendConfig({
      env: { MY_CODEX_KEY: 'secret', OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' },
      projectDir: project,
    });
    expect(config.settings['codex']).toMatchObject({
      baseUrl: 'http://127.0.0.1:7/v1',
      apiKey: 'secret',
      apiKeyVariable: 'MY_CODEX_KEY',
    });
    expect(createBackend('codex', config).describe().summary).toContain('http://127.0.0.1:7/v1');

    const bare = await resolveBackendConfig({ env: {}, projectDir: join(project, 'elsewhere') });
    let refused: unknown;
    try {
      configuredBackends(bare)('codex');
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({
      code: 'BACKEND_NOT_CONFIGURED',
      data: { backend: 'codex', variable: 'CODEX_API_KEY' },
    });
    expect((refused as Error).message).toContain('CODEX_API_KEY');
    // Without the package, that is what the refusal says, not a key that is already set.
    const notInstalled = new BackendNotConfiguredError('codex', undefined, 'install it with: npm install …');
    expect(notInstalled.message).toBe(
      'The codex back end is not configured here: it is not installed (install it with: npm install …), or choose another back end (`parley backends` lists them).',
    );
  });

  it('is offered by list_backends, the list both UIs’ back-end pickers show, like any other back end', async () => {
    const project = await mkdtemp(join(tmpdir(), 'parley-codex-list-'));
    onTestFinished(() => rm(project, { recursive: true, force: true }));
    const withKey = await resolveBackendConfig({ env: { CODEX_API_KEY: 'key' }, projectDir: project });
    const listed = listBackends(configuredBackends(withKey)).find((entry) => entry.name === 'codex');
    if (codexResolvable()) expect(listed).toMatchObject({ available: true, continuity: 'native' });
    else expect(listed).toMatchObject({ available: false, reason: expect.stringContaining('not installed') as string });
    const withoutKey = await resolveBackendConfig({ env: {}, projectDir: project });
    expect(listBackends(configuredBackends(withoutKey)).find((entry) => entry.name === 'codex')).toMatchObject({
      available: false,
      reason: expect.stringContaining('CODEX_API_KEY') as string,
    });
  });

  it('names OpenAI as the provider of codex turns in traces', () => {
    expect(providerNameOf('codex')).toBe('openai');
  });
});
