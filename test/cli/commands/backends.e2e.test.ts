/**
 * `parley backends` as a process, with the environment pointing at the fake OpenAI and Gemini
 * servers.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGeminiServer, type FakeGeminiServer } from '../../fixtures/fake-gemini-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../../fixtures/fake-openai-server.js';
import { parleyNodeArguments } from '../../helpers/parley-cli.js';

function parley(
  args: string[],
  options: { cwd: string; env: Record<string, string> },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [...parleyNodeArguments(), ...args],
      { cwd: options.cwd, env: { PATH: process.env['PATH'] ?? '', HOME: options.cwd, ...options.env } },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

interface BackendsJson {
  default: { backend: string; model: string; reason: string; configFile?: string };
  notice?: string;
  warnings: string[];
  backends: Array<{
    name: string;
    default: boolean;
    configured: boolean;
    configuredBy: string[];
    reachable: boolean | null;
    detail: string;
    continuity: string;
    defaultModel: string;
    baseUrl?: string;
  }>;
}

describe('parley backends', () => {
  let openai: FakeOpenAiServer;
  let gemini: FakeGeminiServer;
  let project: string;
  let closedPort: number;

  beforeAll(async () => {
    [openai, gemini] = await Promise.all([startFakeOpenAiServer({ models: ['fake-model'] }), startFakeGeminiServer()]);
    project = await mkdtemp(join(tmpdir(), 'parley-backends-cli-'));
    const closed = createServer();
    closedPort = await new Promise<number>((ready) =>
      closed.listen(0, '127.0.0.1', () => ready((closed.address() as AddressInfo).port)),
    );
    await new Promise((ready) => closed.close(ready));
  });
  afterAll(async () => {
    await Promise.all([openai.close(), gemini.close()]);
    await rm(project, { recursive: true, force: true });
  });

  it('lists each back end: configured from which variables, reachable, continuity, default model; the config file picks the default', async () => {
    await writeFile(
      join(project, 'parley.config.json'),
      JSON.stringify({ backend: 'openai-compatible', backends: { 'openai-compatible': { model: 'fake-model' } } }),
    );
    const result = await parley(['backends', '--json'], {
      cwd: project,
      env: {
        OPENAI_API_KEY: 'dummy',
        OPENAI_BASE_URL: openai.url,
        GEMINI_API_KEY: 'dummy',
        GOOGLE_GEMINI_BASE_URL: gemini.url,
      },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout) as BackendsJson;
    expect(output.default).toEqual({
      backend: 'openai-compatible',
      model: 'fake-model',
      reason: 'config',
      configFile: join(project, 'parley.config.json'),
    });
    const byName = Object.fromEntries(output.backends.map((entry) => [entry.name, entry]));
    expect(byName['openai-compatible']).toMatchObject({
      default: true,
      configured: true,
      configuredBy: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
      reachable: true,
      continuity: 'managed',
      defaultModel: 'fake-model',
      baseUrl: openai.url,
    });
    expect(byName['gemini-cli']).toMatchObject({
      configured: true,
      configuredBy: ['GEMINI_API_KEY', 'GOOGLE_GEMINI_BASE_URL'],
      reachable: true,
      continuity: 'native',
      defaultModel: 'gemini-2.5-flash',
    });
    expect(byName['scripted']).toMatchObject({ configured: true, reachable: true, default: false });
    expect(openai.requests.some((request) => request.path === '/v1/models')).toBe(true);
    expect(gemini.requests.some((request) => request.path === '/v1beta/models')).toBe(true);
  });

  it('with no key anywhere the default is scripted, with the notice saying how to configure a real one; an unreachable server says so', async () => {
    await rm(join(project, 'parley.config.json'), { force: true });
    const result = await parley(['backends'], {
      cwd: project,
      env: { OPENAI_BASE_URL: `http://127.0.0.1:${closedPort}/v1`, OPENAI_API_KEY: '' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Default: openai-compatible/);
    expect(result.stdout).toMatch(/openai-compatible +yes \(OPENAI_BASE_URL\) +no +managed/);
    expect(result.stdout).toContain(`Could not reach http://127.0.0.1:${closedPort}/v1`);

    const offline = await parley(['backends'], { cwd: project, env: {} });
    expect(offline.stdout).toMatch(
      /^Default: scripted \(scripted-1\) — nothing else is configured\nNo model back end is configured, so Parley uses the scripted back end/,
    );
    expect(offline.stdout).toMatch(/gemini-cli +no +- +native +gemini-2\.5-flash +not configured: set GEMINI_API_KEY/);
  });

  it('a bad config file exits with code 2 and an error naming the file and the field', async () => {
    await writeFile(
      join(project, 'parley.config.json'),
      JSON.stringify({ backends: { 'openai-compatible': { baseUrl: 'nope' } } }),
    );
    const result = await parley(['backends'], { cwd: project, env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `parley: ${join(project, 'parley.config.json')}: backends.openai-compatible.baseUrl:`,
    );
    await rm(join(project, 'parley.config.json'));
  });
});
