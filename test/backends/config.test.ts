import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  configuredBackends,
  createBackend,
  createConfiguredBackend,
  listBackendRegistrations,
  resolveBackendConfig,
  SCRIPTED_FALLBACK_NOTICE,
} from '../../src/backends/index.js';
import { listBackends } from '../../src/draft/backend-list.js';

let projectDir: string;
beforeEach(async () => {
  projectDir = await mkdtemp(join(tmpdir(), 'parley-config-'));
});
afterEach(() => rm(projectDir, { recursive: true, force: true }));

async function writeConfig(config: unknown): Promise<string> {
  const path = join(projectDir, 'parley.config.json');
  await writeFile(path, typeof config === 'string' ? config : JSON.stringify(config));
  return path;
}

describe('resolveBackendConfig', () => {
  it('with no key anywhere chooses the scripted back end and says so, naming the variables to set', async () => {
    const config = await resolveBackendConfig({ env: {}, projectDir });
    expect(config).toMatchObject({
      backend: 'scripted',
      model: 'scripted-1',
      reason: 'fallback',
      notice: SCRIPTED_FALLBACK_NOTICE,
      warnings: [],
    });
    expect(config.notice).toContain('OPENAI_API_KEY');
    expect(config.notice).toContain('GEMINI_API_KEY');
    expect(config.notice).toContain('parley backends');
    expect(config.configFile).toBeUndefined();
    expect(createConfiguredBackend(config).describe().name).toBe('scripted');
  });

  it("reads each client's own variables: OPENAI_API_KEY / OPENAI_BASE_URL, GEMINI_API_KEY / GOOGLE_GEMINI_BASE_URL / GEMINI_MODEL", async () => {
    const config = await resolveBackendConfig({
      env: {
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: 'https://openai.example/v1',
        GEMINI_API_KEY: 'g-test',
        GOOGLE_GEMINI_BASE_URL: 'https://gemini.example',
        GEMINI_MODEL: 'gemini-2.5-pro',
      },
      projectDir,
    });
    expect(config.settings['openai-compatible']).toMatchObject({
      configured: true,
      apiKey: 'sk-test',
      baseUrl: 'https://openai.example/v1',
      sources: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
    });
    expect(config.settings['gemini-cli']).toMatchObject({
      configured: true,
      apiKey: 'g-test',
      baseUrl: 'https://gemini.example',
      model: 'gemini-2.5-pro',
    });
    expect(config.reason).toBe('detected');
    expect(config.notice).toBeUndefined();
  });

  it('prefers back ends by priority when several are configured and none is chosen', async () => {
    const config = await resolveBackendConfig({ env: { OPENAI_API_KEY: 'sk', GEMINI_API_KEY: 'g' }, projectDir });
    const order = listBackendRegistrations()
      .map((registration) => registration.name)
      .filter((name) => config.settings[name]?.configured && name !== 'scripted');
    expect(config.backend).toBe(order[0]);
    expect(order.indexOf('openai-compatible')).toBeLessThan(order.indexOf('gemini-cli'));
  });

  it('a local OpenAI-compatible server (Ollama) needs no key', async () => {
    const config = await resolveBackendConfig({ env: { OPENAI_BASE_URL: 'http://localhost:11434/v1' }, projectDir });
    expect(config).toMatchObject({ backend: 'openai-compatible', reason: 'detected' });
    expect(config.settings['openai-compatible']?.apiKey).toBeUndefined();
  });

  it('parley.config.json chooses the default back end and model, and per back end a base URL, key variable, models and options', async () => {
    const file = await writeConfig({
      backend: 'openai-compatible',
      model: 'llama3.1',
      backends: {
        'openai-compatible': {
          baseUrl: 'http://127.0.0.1:11434/v1',
          apiKeyEnv: 'OLLAMA_KEY',
          models: [{ id: 'llama3.1', contextWindow: 131_072, pricing: { inputPerMillion: 0, outputPerMillion: 0 } }],
          maxRetries: 0,
        },
        'gemini-cli': { cliHome: '/var/parley/gemini', model: 'gemini-2.5-flash-lite' },
      },
    });
    const config = await resolveBackendConfig({
      env: { OLLAMA_KEY: 'k', OPENAI_BASE_URL: 'http://ignored/v1' },
      projectDir,
    });
    expect(config).toMatchObject({
      backend: 'openai-compatible',
      model: 'llama3.1',
      reason: 'config',
      configFile: file,
    });
    expect(config.settings['openai-compatible']).toMatchObject({
      apiKey: 'k',
      apiKeyVariable: 'OLLAMA_KEY',
      baseUrl: 'http://127.0.0.1:11434/v1',
      options: { maxRetries: 0 },
      models: [{ id: 'llama3.1', contextWindow: 131_072 }],
    });
    expect(config.settings['gemini-cli']).toMatchObject({
      model: 'gemini-2.5-flash-lite',
      options: { cliHome: '/var/parley/gemini' },
      configured: false,
    });
    const backend = createConfiguredBackend(config);
    expect(backend.describe()).toMatchObject({
      name: 'openai-compatible',
      defaultModel: 'llama3.1',
      models: [{ id: 'llama3.1', contextWindow: 131_072 }],
    });
  });

  it("a role's front matter overrides the back end and the model", async () => {
    await writeConfig({ backend: 'openai-compatible', model: 'gpt-4.1' });
    const config = await resolveBackendConfig({
      env: { OPENAI_API_KEY: 'sk', GEMINI_API_KEY: 'g' },
      projectDir,
      override: { backend: 'gemini-cli', model: 'gemini-2.5-pro', source: 'role reviewer' },
    });
    expect(config).toMatchObject({ backend: 'gemini-cli', model: 'gemini-2.5-pro', reason: 'override' });
    expect(createBackend('gemini-cli', config, { model: config.model }).describe().defaultModel).toBe('gemini-2.5-pro');
    const modelOnly = await resolveBackendConfig({
      env: { OPENAI_API_KEY: 'sk' },
      projectDir,
      override: { model: 'gpt-4o' },
    });
    expect(modelOnly).toMatchObject({ backend: 'openai-compatible', model: 'gpt-4o' });
  });

  it('an unknown back end in a role names the role and the known back ends', async () => {
    await expect(
      resolveBackendConfig({
        env: {},
        projectDir,
        override: { backend: 'gpt-7', source: 'role writer (roles/writer.md)' },
      }),
    ).rejects.toMatchObject({
      code: 'UNKNOWN_BACKEND',
      message: expect.stringMatching(
        /Unknown back end "gpt-7" in role writer \(roles\/writer\.md\)\. Known back ends: .*openai-compatible.*scripted/,
      ),
    });
  });

  it('a chosen back end without its key is kept, with a warning saying which variable to set', async () => {
    await writeConfig({ backend: 'gemini-cli' });
    const config = await resolveBackendConfig({ env: {}, projectDir });
    expect(config.backend).toBe('gemini-cli');
    expect(config.warnings).toEqual([
      'The gemini-cli back end is selected in parley.config.json but is not configured: set GEMINI_API_KEY.',
    ]);
  });

  it('bad config files are errors that name the file and the field', async () => {
    const file = await writeConfig({ backends: { 'openai-compatible': { baseUrl: 'not a url' } } });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining(`${file}: backends.openai-compatible.baseUrl:`),
    });
    await writeConfig({ backends: { 'openai-compatible': { apiKey: 'sk-leaked' } } });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      message: expect.stringContaining('name it with apiKeyEnv'),
    });
    await writeConfig({ backends: { 'gemini-cli': { maxAttempts: 0 } } });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      message: expect.stringContaining('backends.gemini-cli.maxAttempts'),
    });
    await writeConfig({ backend: 'nope' });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      code: 'UNKNOWN_BACKEND',
      message: expect.stringContaining('(backend)'),
    });
    await writeConfig({ backends: { nope: {} } });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({ code: 'UNKNOWN_BACKEND' });
    await writeConfig({ defaultBackend: 'scripted' });
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      message: expect.stringContaining('defaultBackend'),
    });
    await writeConfig('{ "backend": ');
    await expect(resolveBackendConfig({ env: {}, projectDir })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('is not valid JSON'),
    });
  });

  it('the Gemini CLI keeps its home (sessions, settings) in the data folder', async () => {
    const dataDir = join(projectDir, '.parley');
    const config = await resolveBackendConfig({ env: { GEMINI_API_KEY: 'g' }, projectDir, dataDir });
    const backend = createBackend('gemini-cli', config);
    const sessionId = '598981be-4ecc-4614-b2ce-6a2348af4241';
    const header = JSON.stringify({
      sessionId,
      projectHash: 'x',
      startTime: '2026-11-21T04:40:52.192Z',
      lastUpdated: '2026-11-21T04:40:52.192Z',
      kind: 'main',
    });
    const workspace = { cwd: join(projectDir, 'work'), writeFile: () => Promise.resolve() };
    await backend.setupSessionTranscripts!(sessionId, { main: `${header}\n` }, workspace);
    const registry = JSON.parse(await readFile(join(dataDir, 'gemini-cli', '.gemini', 'projects.json'), 'utf8')) as {
      projects: Record<string, string>;
    };
    expect(registry.projects[join(projectDir, 'work')]).toBe('work');
  });
});

describe('configuredBackends (the backendFor of `parley serve`, the TUI and the draft layer)', () => {
  it('refuses a named back end that is not configured here, naming the variable to set; the default is always made', async () => {
    const config = await resolveBackendConfig({ env: { OPENAI_API_KEY: 'sk-test' }, projectDir });
    const backendFor = configuredBackends(config);
    expect(backendFor().describe().name).toBe('openai-compatible');
    expect(backendFor('openai-compatible')).toBe(backendFor());
    expect(backendFor('scripted').describe().name).toBe('scripted');
    expect(() => backendFor('anthropic-api')).toThrow(
      expect.objectContaining({
        code: 'BACKEND_NOT_CONFIGURED',
        message: expect.stringContaining('set ANTHROPIC_API_KEY'),
      }),
    );
    expect(() => backendFor('gemini-cli')).toThrow(/gemini-cli back end is not configured here: set GEMINI_API_KEY/);
    expect(() => backendFor('no-such-backend')).toThrow(/no-such-backend/);
  });

  it('gives one instance per back end and model, the configured model when none is named', async () => {
    const config = await resolveBackendConfig({ env: {}, projectDir });
    const backendFor = configuredBackends(config);
    expect(backendFor('scripted', 'scripted-2')).toBe(backendFor('scripted', 'scripted-2'));
    expect(backendFor('scripted', 'scripted-2')).not.toBe(backendFor());
    expect(backendFor('scripted')).toBe(backendFor());
  });

  it('lists a back end that is not configured as unavailable, with what to set (list_backends)', async () => {
    const config = await resolveBackendConfig({ env: {}, projectDir });
    const backends = listBackends(configuredBackends(config), ['scripted', 'anthropic-api']);
    expect(backends).toEqual([
      { name: 'scripted', continuity: 'managed', default: true, available: true },
      {
        name: 'anthropic-api',
        default: false,
        available: false,
        reason: expect.stringContaining('not configured here: set ANTHROPIC_API_KEY'),
      },
    ]);
  });
});
