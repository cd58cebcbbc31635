import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GeminiCliStorage, parseStreamLine, projectHash } from '../../../src/backends/index.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'parley-gemini-storage-'));
});
afterEach(() => rm(root, { recursive: true, force: true }));

const sessionId = '598981be-4ecc-4614-b2ce-6a2348af4241';
const transcript = [
  JSON.stringify({
    sessionId,
    projectHash: 'hash-from-another-machine',
    startTime: '2026-11-21T04:40:52.192Z',
    lastUpdated: '2026-11-21T04:40:52.192Z',
    kind: 'main',
  }),
  JSON.stringify({ id: 'u1', timestamp: '2026-11-21T04:40:52.202Z', type: 'user', content: [{ text: 'hi' }] }),
  JSON.stringify({ $set: { lastUpdated: '2026-11-21T04:40:52.202Z' } }),
  '',
].join('\n');

describe('Gemini CLI storage', () => {
  it('writes a session where the CLI looks: registry entry, ownership markers, chats file named by start minute and id prefix', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    const project = join(root, 'My Project');
    const path = await storage.writeSession(project, sessionId, transcript);
    expect(path).toBe(
      join(root, 'home', '.gemini', 'tmp', 'my-project', 'chats', 'session-2026-11-21T04-40-598981be.jsonl'),
    );
    const registry = JSON.parse(await readFile(join(root, 'home', '.gemini', 'projects.json'), 'utf8')) as unknown;
    expect(registry).toEqual({ projects: { [project]: 'my-project' } });
    expect(await readFile(join(root, 'home', '.gemini', 'tmp', 'my-project', '.project_root'), 'utf8')).toBe(project);
    expect(await readFile(join(root, 'home', '.gemini', 'history', 'my-project', '.project_root'), 'utf8')).toBe(
      project,
    );
  });

  it("sets the header's projectHash to this machine's folder and keeps every other line as it was", async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    const project = join(root, 'work');
    await storage.writeSession(project, sessionId, transcript);
    const written = (await storage.readSession(project, sessionId))!.split('\n');
    expect(JSON.parse(written[0]!)).toMatchObject({
      sessionId,
      projectHash: projectHash(project),
      startTime: '2026-11-21T04:40:52.192Z',
    });
    expect(written.slice(1)).toEqual(transcript.split('\n').slice(1));
  });

  it('a second folder with the same name gets its own slug, as the CLI would give it', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    await storage.writeSession(join(root, 'a', 'app'), sessionId, transcript);
    const other = '11111111-2222-3333-4444-555555555555';
    const path = await storage.writeSession(join(root, 'b', 'app'), other, transcript.replaceAll(sessionId, other));
    expect(path).toContain(join('tmp', 'app-1', 'chats'));
    expect(await storage.findSessionFile(join(root, 'a', 'app'), other)).toBeUndefined();
    expect(await storage.findSessionFile(join(root, 'b', 'app'), other)).toBe(path);
  });

  it('finds a session by its header id, not only by the file name prefix', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    const project = join(root, 'p');
    await storage.writeSession(project, sessionId, transcript);
    expect(await storage.findSessionFile(project, '598981be-0000-0000-0000-000000000000')).toBeUndefined();
  });

  it('a different file already there for the session is moved aside, never deleted; one that holds the transcript and more is kept', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    const project = join(root, 'aside');
    const path = await storage.writeSession(project, sessionId, transcript);
    const longer = `${await readFile(path, 'utf8')}{"$set":{"lastUpdated":"2026-11-21T05:00:00.000Z"}}\n`;
    await writeFile(path, longer);
    expect(await storage.writeSession(project, sessionId, transcript)).toBe(path);
    expect(await readFile(path, 'utf8')).toBe(longer);
    const other = transcript.replace('"hi"', '"run something else"');
    expect(await storage.writeSession(project, sessionId, other)).toBe(path);
    expect(await readFile(path, 'utf8')).toContain('run something else');
    const chats = await readdir(join(root, 'home', '.gemini', 'tmp', 'aside', 'chats'));
    const aside = chats.find((name) => name.includes('.replaced-'));
    expect(aside).toBeDefined();
    expect(await readFile(join(root, 'home', '.gemini', 'tmp', 'aside', 'chats', aside!), 'utf8')).toBe(longer);
  });

  it('refuses a transcript whose header names another session', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    await expect(
      storage.writeSession(join(root, 'p'), '11111111-2222-3333-4444-555555555555', transcript),
    ).rejects.toThrow(/belongs to session/);
  });

  it('settings: Parley’s keys are merged in, the user’s other settings are kept', async () => {
    const storage = new GeminiCliStorage(join(root, 'home'));
    await mkdir(join(root, 'home', '.gemini'), { recursive: true });
    await writeFile(
      join(root, 'home', '.gemini', 'settings.json'),
      JSON.stringify({ ui: { theme: 'Dracula' }, general: { vimMode: true } }),
    );
    await storage.ensureSettings({ general: { maxAttempts: 1 }, telemetry: { enabled: false } });
    expect(JSON.parse(await readFile(join(root, 'home', '.gemini', 'settings.json'), 'utf8'))).toEqual({
      ui: { theme: 'Dracula' },
      general: { vimMode: true, maxAttempts: 1 },
      telemetry: { enabled: false },
    });
  });
});

describe('Gemini CLI stream-json lines', () => {
  it('parses known events and skips noise, blank lines and unknown event types', () => {
    expect(
      parseStreamLine('{"type":"init","timestamp":"t","session_id":"abc","model":"gemini-2.5-flash"}'),
    ).toMatchObject({ type: 'init', session_id: 'abc' });
    expect(parseStreamLine('Warning: 256-color support not detected.')).toBeUndefined();
    expect(parseStreamLine('')).toBeUndefined();
    expect(parseStreamLine('{"type":"compaction","anything":1}')).toBeUndefined();
    expect(parseStreamLine('{"type":"message","role":"assistant"}')).toBeUndefined();
    expect(parseStreamLine('{"type":"tool_result","tool_id":"x","status":"error","extra":"kept out"}')).toMatchObject({
      status: 'error',
    });
  });
});
