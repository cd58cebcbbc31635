/**
 * The gemini-cli back end through the real @google/gemini-cli 0.61.0 against the fake Gemini API.
 * Each CLI run takes seconds and hundreds of MB (bench/backends-overhead.bench.ts times one), so the
 * file runs sequentially and keeps runs few.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGeminiCliBackend, folderWorkspace, type GeminiCliOptions } from '../../../src/backends/index.js';
import { startFakeGeminiServer, type FakeGeminiServer } from '../../fixtures/fake-gemini-server.js';
import {
  assistantText,
  checkEventStream,
  collect,
  describeBackendConformance,
  finalMetadata,
  systemBlocks,
} from '../conformance.js';

async function scratch(prefix: string): Promise<{ home: string; workspace: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), `parley-${prefix}-`));
  const workspace = join(root, 'workspace');
  const home = join(root, 'cli-home');
  await mkdir(workspace, { recursive: true });
  await writeFile(join(workspace, 'notes.txt'), 'a file for list_directory\n');
  return { home, workspace, remove: () => rm(root, { recursive: true, force: true }) };
}

function contentsText(server: FakeGeminiServer): string {
  return JSON.stringify(server.streamRequests().at(-1)?.body?.['contents'] ?? []);
}

describe.sequential('gemini-cli back end (real CLI)', () => {
  describeBackendConformance({
    name: 'gemini-cli',
    failureKinds: ['rate_limit', 'server_error'],
    create: async () => {
      const server = await startFakeGeminiServer();
      const folders = await scratch('gemini-conformance');
      const backend = createGeminiCliBackend({ apiKey: 'dummy', baseUrl: server.url, cliHome: folders.home });
      return {
        backend,
        request: (fields) => ({ sessionId: 'gemini-session', cwd: folders.workspace, ...fields }),
        script: {
          text: (text) => server.enqueue({ text }),
          stall: (text) => server.enqueue({ text, stall: true }),
          failure: (kind) => {
            server.enqueue(
              kind === 'rate_limit'
                ? { type: 'error', status: 429, message: 'Resource has been exhausted (e.g. check quota).' }
                : { type: 'error', status: 500, message: 'Internal error encountered.' },
            );
            return { code: kind === 'rate_limit' ? 'RATE_LIMITED' : 'SERVER_ERROR' };
          },
          toolCall: (finalText) => {
            server.enqueue(
              { functionCalls: [{ name: 'list_directory', args: { dir_path: '.' } }] },
              { text: finalText },
            );
            return { request: {}, toolName: 'list_directory' };
          },
        },
        lastModelRequest: () => contentsText(server),
        teardown: async () => {
          await server.close();
          await folders.remove();
        },
      };
    },
  });

  describe('sessions, profiles and failures', () => {
    let server: FakeGeminiServer;
    let folders: Awaited<ReturnType<typeof scratch>>;
    const backend = (extra: GeminiCliOptions = {}) =>
      createGeminiCliBackend({ apiKey: 'dummy', baseUrl: server.url, cliHome: folders.home, ...extra });

    beforeAll(async () => {
      server = await startFakeGeminiServer();
      folders = await scratch('gemini-sessions');
    });
    afterAll(async () => {
      await server.close();
      await folders.remove();
    });

    it('a session saved with readSessionTranscripts resumes after the CLI home is wiped and the transcript restored', async () => {
      const nativeSessionId = randomUUID();
      const workspace = folderWorkspace(folders.workspace);
      server.enqueue({ text: 'Noted: the code word is MARMALADE.' });
      const first = await collect(
        backend().execute({
          sessionId: 'p1',
          nativeSessionId,
          isNewSession: true,
          prompt: 'The code word is MARMALADE.',
          cwd: folders.workspace,
        }),
      );
      checkEventStream(first);
      const saved = await backend().readSessionTranscripts!(nativeSessionId, workspace);
      expect(saved?.main).toContain('MARMALADE');
      const parsed = backend().parseTranscripts!(saved!);
      expect(parsed.warnings).toEqual([]);
      expect(
        parsed.blocks.some(
          (block) => block.type === 'user_message' && block.content.includes('The code word is MARMALADE.'),
        ),
      ).toBe(true);
      expect(
        parsed.blocks
          .filter((block) => block.type === 'assistant_text')
          .map((block) => (block.type === 'assistant_text' ? block.content : '')),
      ).toEqual(['Noted: the code word is MARMALADE.']);

      await rm(folders.home, { recursive: true, force: true });
      expect(await backend().readSessionTranscripts!(nativeSessionId, workspace)).toBeUndefined();
      await backend().setupSessionTranscripts!(nativeSessionId, saved!, workspace);

      server.enqueue({ text: 'It was MARMALADE.' });
      const second = await collect(
        backend().execute({
          sessionId: 'p1',
          nativeSessionId,
          isNewSession: false,
          prompt: 'What was the code word?',
          cwd: folders.workspace,
        }),
      );
      checkEventStream(second);
      expect(systemBlocks(second, 'error')).toEqual([]);
      expect(assistantText(second)).toBe('It was MARMALADE.');
      expect(finalMetadata(second).nativeSessionId).toBe(nativeSessionId);
      const history = contentsText(server);
      expect(history).toContain('The code word is MARMALADE.');
      expect(history).toContain('Noted: the code word is MARMALADE.');
      expect(history).toContain('What was the code word?');
    });

    it('a session the CLI does not have ends with NATIVE_RESUME_FAILED (the code claude-sdk uses), or continues as a new session with the context given', async () => {
      const missing = randomUUID();
      const before = server.streamRequests().length;
      const failed = await collect(
        backend().execute({
          sessionId: 'p2',
          nativeSessionId: missing,
          isNewSession: false,
          prompt: 'hello?',
          cwd: folders.workspace,
        }),
      );
      checkEventStream(failed);
      expect(systemBlocks(failed, 'error')[0]).toMatchObject({
        data: { code: 'NATIVE_RESUME_FAILED', nativeSessionId: missing },
      });
      expect(systemBlocks(failed, 'error')[0]?.content).toContain('Restore the session');
      expect(server.streamRequests()).toHaveLength(before);

      server.enqueue({ text: 'Continuing with context.' });
      const continued = await collect(
        backend().execute({
          sessionId: 'p2',
          nativeSessionId: missing,
          isNewSession: false,
          prompt: 'hello again',
          systemPrompt: 'Earlier: the user likes TEA.',
          cwd: folders.workspace,
        }),
      );
      checkEventStream(continued);
      expect(systemBlocks(continued, 'info')[0]).toMatchObject({ data: { code: 'RESUME_FALLBACK' } });
      expect(assistantText(continued)).toBe('Continuing with context.');
      const metadata = finalMetadata(continued);
      expect(metadata.nativeSessionId).toBeDefined();
      expect(metadata.nativeSessionId).not.toBe(missing);
      expect(contentsText(server)).toContain('Earlier: the user likes TEA.');
      expect(contentsText(server)).toContain('hello again');
    });

    it('setupAgentProfile writes GEMINI.md, which the CLI sends as context; settings keep it on the configured endpoint', async () => {
      const workspace = folderWorkspace(folders.workspace);
      await backend().setupAgentProfile!(
        {
          name: 'Reviewer',
          description: 'Reviews code.',
          instructions: 'Always answer in haiku. PROFILE-MARKER',
          mcpServers: { docs: { command: 'node', args: ['docs.js'] } },
        },
        workspace,
      );
      server.enqueue({ text: 'A haiku.' });
      await collect(
        backend().execute({ sessionId: 'p3', isNewSession: true, prompt: 'Review.', cwd: folders.workspace }),
      );
      const sent = JSON.stringify(server.streamRequests().at(-1)?.body);
      expect(sent).toContain('PROFILE-MARKER');
      const settings = JSON.parse(await readFile(join(folders.home, '.gemini', 'settings.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(settings).toMatchObject({
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, maxAttempts: 1 },
      });
      expect(server.requests.every((request) => request.headers['x-goog-api-key'] === 'dummy')).toBe(true);
      const workspaceSettings = JSON.parse(
        await readFile(join(folders.workspace, '.gemini', 'settings.json'), 'utf8'),
      ) as Record<string, unknown>;
      expect(workspaceSettings).toEqual({ mcpServers: { docs: { command: 'node', args: ['docs.js'] } } });
      await rm(join(folders.workspace, '.gemini'), { recursive: true, force: true });
      await rm(join(folders.workspace, 'GEMINI.md'));
    });

    it('a first turn with a profile and no built system prompt tells the model its role', async () => {
      server.enqueue({ text: 'Understood.' });
      await collect(
        backend().execute({
          sessionId: 'p4',
          isNewSession: true,
          prompt: 'Who are you?',
          cwd: folders.workspace,
          profile: { name: 'qa', instructions: 'You are the QA reviewer. ROLE-MARKER' },
        }),
      );
      expect(JSON.stringify(server.streamRequests().at(-1)?.body)).toContain('ROLE-MARKER');
    });

    it('checkAvailability reaches the configured endpoint', async () => {
      expect(await backend().checkAvailability!()).toEqual({
        available: true,
        detail: `${server.url} answered (HTTP 200)`,
      });
      expect((await backend({ apiKey: undefined }).checkAvailability!()).detail).toContain('GEMINI_API_KEY');
    });
  });
});
