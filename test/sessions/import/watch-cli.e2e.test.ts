import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { encodeCwd, geminiProjectSlug } from '../../../src/backends/index.js';
import type { StreamEvent } from '../../../src/conversation/index.js';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { createFileStore, type SessionStore } from '../../../src/store/index.js';
import { postgresSkipReason } from '../../helpers/postgres.js';
import { useTestDatabase } from '../../helpers/postgres-database.js';
import { parleyNodeArguments } from '../../helpers/parley-cli.js';
import { connectToServer, startServeProcess, type ServeProcess } from '../../server/serve-process.js';

/**
 * The CLI faces of following native sessions: `parley import --watch` as a process (appends, then
 * Ctrl+C), and `parley serve --watch-native` picking up new session files in a fake home (Claude
 * Code's CLAUDE_CONFIG_DIR, the Gemini CLI's GEMINI_CLI_HOME) and delivering them to a web client.
 */

const ROOT = join(import.meta.dirname, '..', '..', '..');
const NATIVE_ID = '7d2c4b1a-9e8f-4a6b-8c5d-1e2f3a4b5c6d';

const record = (type: 'user' | 'assistant', uuid: string, parentUuid: string | null, text: string) =>
  type === 'user'
    ? {
        type,
        uuid,
        parentUuid,
        sessionId: NATIVE_ID,
        timestamp: '2026-08-01T10:00:00.000Z',
        message: { role: 'user', content: text },
      }
    : {
        type,
        uuid,
        parentUuid,
        sessionId: NATIVE_ID,
        timestamp: '2026-08-01T10:00:01.000Z',
        message: {
          id: `msg_${uuid}`,
          role: 'assistant',
          content: [{ type: 'text', text }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 3, output_tokens: 2 },
        },
      };
const jsonl = (...records: unknown[]): string => records.map((entry) => `${JSON.stringify(entry)}\n`).join('');

/** `parley import --watch --json <file>` as a process; `untilBlocks(n)` waits for the pass that reports n blocks. */
function importWatch(file: string, where: { dataDir?: string; databaseUrl?: string }) {
  const child = spawn(
    process.execPath,
    [
      ...parleyNodeArguments(),
      ...(where.dataDir !== undefined ? ['--data-dir', where.dataDir] : []),
      'import',
      '--watch',
      '--json',
      file,
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NO_COLOR: '1',
        ...(where.databaseUrl !== undefined ? { PARLEY_DATABASE_URL: where.databaseUrl } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const passes: Array<{ sessions: Array<{ sessionId: string; status: string; blocks: number }> }> = [];
  let buffered = '';
  const waiters: Array<{ blocks: number; done: () => void }> = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      passes.push(JSON.parse(buffered.slice(0, newline)) as (typeof passes)[number]);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    for (const waiter of [...waiters]) {
      if (passes.some((pass) => pass.sessions[0]?.blocks === waiter.blocks)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    }
  });
  const untilBlocks = (blocks: number) =>
    passes.some((pass) => pass.sessions[0]?.blocks === blocks)
      ? Promise.resolve()
      : new Promise<void>((done) => waiters.push({ blocks, done }));
  return { child, exited, passes, untilBlocks, stderr: () => stderr };
}

/** Every `session_event` a client receives, and a way to wait for a block of a session. */
function sessionEvents(client: ProtocolClient) {
  const events: Array<{ sessionId: string; event: StreamEvent }> = [];
  const waiters: Array<{ check: () => boolean; done: () => void }> = [];
  client.on('session_event', (message) => {
    events.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.check()) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    }
  });
  return {
    events,
    untilBlock(sessionId: string, blockId: string): Promise<void> {
      const check = () =>
        events.some(
          (entry) =>
            entry.sessionId === sessionId && entry.event.type === 'block_complete' && entry.event.block.id === blockId,
        );
      return check() ? Promise.resolve() : new Promise<void>((done) => waiters.push({ check, done }));
    },
  };
}

let work: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-watch-cli-'));
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('parley import --watch', () => {
  it('imports lines as they are appended, and stops cleanly on Ctrl+C (SIGINT) keeping everything', async () => {
    const dataDir = join(work, 'data');
    const file = join(work, `${NATIVE_ID}.jsonl`);
    await fs.writeFile(file, jsonl(record('user', 'u1', null, 'Hello'), record('assistant', 'a1', 'u1', 'Hi')));
    const { child, exited, passes, untilBlocks, stderr } = importWatch(file, { dataDir });

    await untilBlocks(2);
    expect(passes[0]?.sessions[0]).toMatchObject({ sessionId: `cc-${NATIVE_ID}`, status: 'imported' });
    await fs.appendFile(file, jsonl(record('user', 'u2', 'a1', 'More')));
    await untilBlocks(3);
    await fs.appendFile(file, jsonl(record('assistant', 'a2', 'u2', 'Sure')));
    await untilBlocks(4);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr()).toContain('Stopped following');
    // The data folder was released (its lock), and holds every line.
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const ids: string[] = [];
    for await (const event of store.readLog(`cc-${NATIVE_ID}`))
      if (event.type === 'block_complete') ids.push(event.block.id);
    await store.close();
    expect(ids).toEqual(['u1', 'a1', 'u2', 'a2']);
  });
});

describe('parley import into a data folder another process holds', () => {
  it('refuses with exit code 2, changing nothing, and says how to follow sessions into a served folder', async () => {
    const dataDir = join(work, 'data');
    const holder = await createFileStore({ dataDir, onWarning: () => {} });
    try {
      const file = join(work, `${NATIVE_ID}.jsonl`);
      await fs.writeFile(file, jsonl(record('user', 'u1', null, 'Hello')));
      const result = await new Promise<{ code: number | null; stderr: string }>((done) => {
        const child = spawn(
          process.execPath,
          [...parleyNodeArguments(), '--data-dir', dataDir, 'import', '--watch', file],
          {
            cwd: ROOT,
            env: { ...process.env, NO_COLOR: '1' },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.once('exit', (code) => done({ code, stderr }));
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('is in use by');
      expect(result.stderr).toContain('parley serve --watch-native');
      expect(await collectIds(holder)).toEqual([]);
    } finally {
      await holder.close();
    }
  });
});

async function collectIds(store: SessionStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const session of store.listSessions()) ids.push(session.sessionId);
  return ids;
}

describe('parley serve --watch-native', () => {
  let serve: ServeProcess | undefined;
  afterEach(async () => {
    if (serve !== undefined && serve.child.exitCode === null) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    serve = undefined;
  });

  it("picks up new Claude Code, Gemini CLI and Codex session files of the project in the tools' folders and delivers them to a web client", async () => {
    const project = join(work, 'demo-project');
    const home = join(work, 'home');
    const claudeDir = join(home, 'claude-config');
    await fs.mkdir(project, { recursive: true });
    const codexHome = join(home, 'codex-home');
    serve = await startServeProcess(
      project,
      { HOME: home, CLAUDE_CONFIG_DIR: claudeDir, GEMINI_CLI_HOME: home, CODEX_HOME: codexHome },
      ['--watch-native'],
    );
    const claudeFolder = join(claudeDir, 'projects', encodeCwd(await fs.realpath(project)));
    const geminiFolder = join(home, '.gemini', 'tmp', geminiProjectSlug(basename(project)), 'chats');
    expect(serve.output()).toContain(claudeFolder);
    expect(serve.output()).toContain(geminiFolder);
    expect(serve.output()).toContain(join(codexHome, 'sessions'));

    const client = await connectToServer(serve.info, 'watch-native');
    try {
      await client.subscribe();
      const { untilBlock } = sessionEvents(client);

      // Claude Code starts a session: its folder does not exist until then.
      await fs.mkdir(claudeFolder, { recursive: true });
      await fs.writeFile(
        join(claudeFolder, `${NATIVE_ID}.jsonl`),
        jsonl(record('user', 'u1', null, 'Hello from Claude Code')),
      );
      await untilBlock(`cc-${NATIVE_ID}`, 'u1');
      await fs.appendFile(join(claudeFolder, `${NATIVE_ID}.jsonl`), jsonl(record('assistant', 'a1', 'u1', 'Hi')));
      await untilBlock(`cc-${NATIVE_ID}`, 'a1');

      // The Gemini CLI starts one too.
      const geminiId = '5e6f7a8b-1c2d-4e3f-9a0b-c1d2e3f4a5b6';
      await fs.mkdir(geminiFolder, { recursive: true });
      await fs.writeFile(
        join(geminiFolder, 'session-2026-11-25T10-00-5e6f7a8b.jsonl'),
        jsonl(
          {
            sessionId: geminiId,
            projectHash: 'x',
            startTime: '2026-11-25T10:00:00.000Z',
            lastUpdated: '2026-11-25T10:00:00.000Z',
            kind: 'main',
          },
          { id: 'g-1', timestamp: '2026-11-25T10:00:05.000Z', type: 'user', content: [{ text: 'Hello from Gemini' }] },
        ),
      );
      await untilBlock(`gem-${geminiId}`, 'g-1');

      // Codex keeps every project's rollouts in one dated tree: only this project's is followed.
      const codexFolder = join(codexHome, 'sessions', '2026', '11', '25');
      const rollout = (threadId: string, cwd: string, text: string) =>
        jsonl(
          { timestamp: '2026-11-25T10:00:00.000Z', type: 'session_meta', payload: { id: threadId, cwd } },
          {
            timestamp: '2026-11-25T10:00:01.000Z',
            type: 'response_item',
            payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
          },
        );
      const other = '0199a213-81c0-7800-8aa1-bbab2a035a53';
      const codexId = '0199a213-81c0-7800-8aa1-bbab2a035a54';
      await fs.mkdir(codexFolder, { recursive: true });
      await fs.writeFile(
        join(codexFolder, `rollout-2026-11-25T10-00-00-${other}.jsonl`),
        rollout(other, join(work, 'another-project'), 'Not this project'),
      );
      const mine = join(codexFolder, `rollout-2026-11-25T10-00-01-${codexId}.jsonl`);
      await fs.writeFile(mine, rollout(codexId, project, 'Hello from Codex'));
      await untilBlock(`codex-${codexId}`, 'L2');
      await fs.appendFile(
        mine,
        jsonl({
          timestamp: '2026-11-25T10:00:02.000Z',
          type: 'response_item',
          payload: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
        }),
      );
      await untilBlock(`codex-${codexId}`, 'L3');
      expect(serve.output()).not.toContain(`codex-${other}`);
    } finally {
      client.close();
    }
    serve.child.kill('SIGINT');
    expect((await serve.exited).code).toBe(0);
  });
});

const postgresSkip = postgresSkipReason();

describe.skipIf(postgresSkip !== undefined)(
  'parley import --watch beside parley serve on one PostgreSQL database',
  () => {
    const database = useTestDatabase('import_watch');

    it("delivers what another process imports to the server's web client as it is written", async () => {
      const project = join(work, 'project');
      await fs.mkdir(project);
      const serve = await startServeProcess(project, { PARLEY_DATABASE_URL: database.url() });
      const client = await connectToServer(serve.info, 'import-watch-postgres');
      const file = join(work, `${NATIVE_ID}.jsonl`);
      await fs.writeFile(file, jsonl(record('user', 'u1', null, 'Hello')));
      const watching = importWatch(file, { databaseUrl: database.url() });
      try {
        await client.subscribe();
        const { untilBlock } = sessionEvents(client);
        await watching.untilBlocks(1);
        await fs.appendFile(file, jsonl(record('assistant', 'a1', 'u1', 'Hi')));
        await untilBlock(`cc-${NATIVE_ID}`, 'a1');
        await fs.appendFile(file, jsonl(record('user', 'u2', 'a1', 'Still there?')));
        await untilBlock(`cc-${NATIVE_ID}`, 'u2');
      } finally {
        client.close();
        watching.child.kill('SIGINT');
        expect(await watching.exited).toBe(0);
        serve.child.kill('SIGTERM');
        await serve.exited;
      }
    });
  },
);
