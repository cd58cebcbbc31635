import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackend, encodeCwd, resolveBackendConfig } from '../../../src/backends/index.js';
import { reply, startFakeAnthropicServer, type FakeAnthropicServer } from '../../fixtures/fake-anthropic-server.js';
import { assistantText, collect } from '../conformance.js';

let server: FakeAnthropicServer;
let root: string;
beforeAll(async () => {
  server = await startFakeAnthropicServer();
  root = await mkdtemp(join(tmpdir(), 'parley-anthropic-registration-'));
});
afterAll(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

describe('Anthropic back ends in the registry', () => {
  it('ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL configure anthropic-api, and the created back end talks to that endpoint', async () => {
    const config = await resolveBackendConfig({
      env: { ANTHROPIC_API_KEY: 'from-env', ANTHROPIC_BASE_URL: server.url },
      projectDir: root,
    });
    const settings = config.settings['anthropic-api']!;
    expect(settings).toMatchObject({
      configured: true,
      apiKeyVariable: 'ANTHROPIC_API_KEY',
      baseUrl: server.url,
      model: 'claude-sonnet-5-5',
    });
    server.enqueue(reply('Configured through the registry.'));
    const backend = createBackend('anthropic-api', config, { model: 'claude-haiku-4-5' });
    expect(backend.describe()).toMatchObject({ name: 'anthropic-api', continuity: 'managed' });
    const events = await collect(backend.execute({ sessionId: 's', prompt: 'hi' }));
    expect(assistantText(events)).toBe('Configured through the registry.');
    expect(server.messageRequests().at(-1)!.body?.model).toBe('claude-haiku-4-5');
  });

  it('options from parley.config.json reach the anthropic-api back end', async () => {
    const projectDir = join(root, 'project');
    await mkdir(projectDir, { recursive: true });
    await writeFile(
      join(projectDir, 'parley.config.json'),
      JSON.stringify({
        backends: { 'anthropic-api': { maxOutputTokens: 1234, models: [{ id: 'claude-house', contextWindow: 9000 }] } },
      }),
    );
    const config = await resolveBackendConfig({
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: server.url },
      projectDir,
    });
    server.enqueue(reply('ok'));
    await collect(
      createBackend('anthropic-api', config).execute({ sessionId: 's', prompt: 'hi', model: 'claude-house' }),
    );
    expect(server.messageRequests().at(-1)!.body?.['max_tokens']).toBe(1234);
  });

  it("claude-sdk keeps its sessions under Parley's data folder when it runs on an API key", async () => {
    const dataDir = join(root, 'data');
    const cwd = join(root, 'workspace');
    await mkdir(cwd, { recursive: true });
    const config = await resolveBackendConfig({ env: { ANTHROPIC_API_KEY: 'k' }, projectDir: root, dataDir });
    expect(config.settings['claude-sdk']).toMatchObject({ configured: true });
    const backend = createBackend('claude-sdk', config);
    expect(backend.describe()).toMatchObject({
      name: 'claude-sdk',
      continuity: 'native',
      defaultModel: 'claude-opus-5-5',
    });
    const session = '0f0e0d0c-0b0a-4908-8706-050403020100';
    await backend.setupSessionTranscripts!(
      session,
      { main: '{"type":"user"}\n' },
      { cwd, writeFile: () => Promise.resolve() },
    );
    const path = join(dataDir, 'claude-code', 'projects', encodeCwd(cwd), `${session}.jsonl`);
    expect(await readFile(path, 'utf8')).toBe('{"type":"user"}\n');
  });
});
