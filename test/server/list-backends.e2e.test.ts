import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type AgentBackend } from '../../src/backends/index.js';
import { startTestServer, type TestServer } from './helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

describe('list_backends over a WebSocket', () => {
  it('lists the default first, each with its continuity, and one this server cannot make as unavailable with the reason', async () => {
    const home = createScriptedBackend();
    const native = createScriptedBackend({ name: 'native-cli' });
    (native as { describe: () => ReturnType<AgentBackend['describe']> }).describe = () => ({
      ...home.describe(),
      name: 'native-cli',
      continuity: 'native',
    });
    const server = await startTestServer({
      backendFor: (name) => {
        if (name === undefined || name === 'scripted') return home as AgentBackend;
        if (name === 'native-cli') return native as AgentBackend;
        throw new Error(`No key for ${name}: set ANTHROPIC_API_KEY.`);
      },
      backendNames: ['anthropic-api', 'native-cli', 'scripted'],
    });
    servers.push(server);
    const client = await server.client();
    expect(await client.request('list_backends')).toEqual({
      backends: [
        { name: 'scripted', continuity: 'managed', default: true, available: true },
        {
          name: 'anthropic-api',
          default: false,
          available: false,
          reason: 'No key for anthropic-api: set ANTHROPIC_API_KEY.',
        },
        { name: 'native-cli', continuity: 'native', default: false, available: true },
      ],
    });
  });

  it('offers every registered back end when the server is given no list', async () => {
    const server = await startTestServer();
    servers.push(server);
    const { backends } = await (await server.client()).request('list_backends');
    expect(backends[0]).toMatchObject({ name: 'scripted', default: true, available: true });
    expect(backends.map((backend) => backend.name)).toEqual(
      expect.arrayContaining(['claude-sdk', 'codex', 'gemini-cli', 'anthropic-api', 'openai-compatible', 'scripted']),
    );
  });
});
