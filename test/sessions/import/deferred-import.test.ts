import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createSessionManager } from '../../../src/sessions/index.js';
import { importTranscripts } from '../../../src/sessions/import/index.js';
import { withImportedSessions } from '../../../src/sessions/import/imported-store.js';
import { StoreError, createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';
import { generateClaudeCodeTranscript } from '../../fixtures/transcripts/generate.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const PROJECT = join(ROOT, 'test', 'fixtures', 'transcripts', 'claude-code', '-home-dev-src-demo');
/** Fixture sessions, each copied alone (without subagent files): one with a rewind and an inline sidechain, one with a compaction. */
const REWOUND_ID = '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64';
const COMPACTED_ID = '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01';
const NATIVE_ID = '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
const NOW = () => 1_800_000_000_000;

async function log(store: SessionStore, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return events;
}

/** The same transcript imported the eager way (a memory store cannot copy files): what the deferred session must read as. */
async function eagerImport(path: string): Promise<{ store: SessionStore; sessionId: string }> {
  const store = createMemoryStore();
  const result = await importTranscripts(path, { store, now: NOW });
  return { store, sessionId: result.sessions[0]!.sessionId };
}

let work: string;
let transcript: string;
/** A fixture transcript copied alone into its own folder. */
async function fixtureAlone(nativeId: string): Promise<string> {
  const folder = join(work, `fixture-${nativeId}`);
  await fs.mkdir(folder);
  const path = join(folder, `${nativeId}.jsonl`);
  await fs.copyFile(join(PROJECT, `${nativeId}.jsonl`), path);
  return path;
}
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-deferred-import-'));
  await fs.mkdir(join(work, 'project'));
  transcript = join(work, 'project', `${NATIVE_ID}.jsonl`);
  // About 1,300 records: several of the log writer's batches.
  await generateClaudeCodeTranscript(transcript, { targetBytes: 3_000_000, seed: 11 });
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('parley import into the file store: the transcript is copied and scanned, its blocks built on first read', () => {
  it('lists the session with its title, turns and tokens straight after the import, before any block is built', async () => {
    for (const path of [transcript, await fixtureAlone(REWOUND_ID), await fixtureAlone(COMPACTED_ID)]) {
      const dataDir = join(work, `data-${path.length}-${Math.random().toString(36).slice(2)}`);
      const store = await createFileStore({ dataDir, onWarning: () => {} });
      const result = await importTranscripts(path, { store, now: NOW });
      const imported = result.sessions[0]!;
      expect(imported).toMatchObject({ status: 'imported', deferred: true, transcript: 'copied', appendedBlocks: 0 });
      // Nothing is in the log yet: the raw store (not the building view) shows it.
      expect(await store.lastSeq(imported.sessionId)).toBe(-1);

      const eager = await eagerImport(path);
      const expected = (await eager.store.getSession(eager.sessionId))!;
      const record = (await store.getSession(imported.sessionId))!;
      expect(record.title).toBe(expected.title);
      expect(record.stats).toEqual(expected.stats);
      expect(record.metrics).toEqual(expected.metrics);
      expect(record.metrics?.turns).toBeGreaterThan(0);
      expect(imported.blocks).toBe(result.sessions[0]!.blocks);
      expect(await store.lastSeq(imported.sessionId)).toBe(-1);
      await store.close();
    }
  });

  it('a folder of sessions is listed in discovery order, and a session that cannot be written stops the import before the next is written', async () => {
    // Each session is made durable while the next file is scanned: its failure must still stop what follows.
    const folder = join(work, 'many');
    await fs.mkdir(folder);
    const ids = [0, 1, 2].map((index) => `5a1b2c3d-0000-4000-8000-00000000000${index}`);
    for (const [index, id] of ids.entries())
      await generateClaudeCodeTranscript(join(folder, `${id}.jsonl`), {
        targetBytes: 20_000,
        seed: index + 1,
        sessionId: id,
      });
    const first = await createFileStore({ dataDir: join(work, 'data-all'), onWarning: () => {} });
    const all = await importTranscripts(folder, { store: first, now: NOW });
    await first.close();
    const discovered = all.sessions.map((session) => session.sessionId);
    expect([...discovered].sort()).toEqual(ids.map((id) => `cc-${id}`));

    const store = await createFileStore({ dataDir: join(work, 'data-failing'), onWarning: () => {} });
    const refused = new StoreError('STORE_IO', 'Cannot write (refused by the test).');
    const writes: string[] = [];
    const failing = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
        if (key !== 'createSessionWithTranscripts') return method;
        return (record: { sessionId: string }, transcripts: unknown) => {
          writes.push(record.sessionId);
          return record.sessionId === discovered[1] ? Promise.reject(refused) : method(record, transcripts);
        };
      },
    });
    const done: string[] = [];
    const error = await importTranscripts(folder, {
      store: failing,
      now: NOW,
      onProgress: (progress) => {
        if (progress.phase === 'session_done') done.push(progress.sessionId!);
      },
    }).catch((caught: unknown) => caught);
    expect(error).toBe(refused);
    expect(writes).toEqual(discovered.slice(0, 2));
    expect(done).toEqual(discovered.slice(0, 1));
    const listed: string[] = [];
    for await (const record of store.listSessions()) listed.push(record.sessionId);
    expect(listed).toEqual(discovered.slice(0, 1));
    await store.close();
  });

  it('a transcript that grows between its scan and its copy is listed and built from the copy', async () => {
    const path = await fixtureAlone(REWOUND_ID);
    const full = await fs.readFile(path, 'utf8');
    const lines = full.split('\n');
    // Claude Code was still writing: the scan reads half the file, the copy all of it.
    await fs.writeFile(path, `${lines.slice(0, Math.floor(lines.length / 2)).join('\n')}\n`);
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const growing = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
        if (key !== 'createSessionWithTranscripts') return method;
        return async (...args: unknown[]) => {
          await fs.writeFile(path, full);
          return method(...args);
        };
      },
    });
    const { sessions } = await importTranscripts(path, { store: growing, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    const eager = await eagerImport(path);
    const expected = (await eager.store.getSession(eager.sessionId))!;
    const record = (await store.getSession(sessionId))!;
    expect(record.stats).toEqual(expected.stats);
    expect(record.metrics).toEqual(expected.metrics);
    const manifest = JSON.parse((await store.readTranscript(sessionId, 'import-manifest.json'))!) as { blocks: number };
    expect(manifest.blocks).toBe(sessions[0]!.blocks);
    expect(await log(withImportedSessions(store), sessionId)).toEqual(await log(eager.store, eager.sessionId));
    await store.close();
  });

  it.each([
    ['a generated 3 MB transcript (copied beside the session, not as its raw transcript)', 'generated'],
    ['a transcript with a compaction', 'compacted'],
  ])(
    'reads the same events before and after they are built, as an eager import wrote them: %s',
    async (_name, which) => {
      const path = which === 'generated' ? transcript : await fixtureAlone(COMPACTED_ID);
      const dataDir = join(work, 'data');
      const store = await createFileStore({ dataDir, onWarning: () => {} });
      const { sessions } = await importTranscripts(path, { store, now: NOW, copyTranscriptMaxBytes: 1_000_000 });
      const sessionId = sessions[0]!.sessionId;
      expect(await store.listCheckpoints(sessionId)).toEqual([]);
      const eager = await eagerImport(path);
      const expected = await log(eager.store, eager.sessionId);
      const expectedCheckpoints = await eager.store.listCheckpoints(eager.sessionId);
      expect(expectedCheckpoints).toHaveLength(which === 'compacted' ? 1 : 0);

      // First read: built now, through the view every reader uses.
      const first = await log(withImportedSessions(store), sessionId);
      expect(first).toEqual(expected);
      const checkpoints = await withImportedSessions(store).listCheckpoints(sessionId);
      expect(checkpoints.map(({ createdAt: _at, ...rest }) => rest)).toEqual(
        expectedCheckpoints.map(({ createdAt: _at, ...rest }) => rest),
      );
      expect((await store.getSession(sessionId))!.metrics).toEqual(
        (await eager.store.getSession(eager.sessionId))!.metrics,
      );
      await store.close();

      // Second read, in a fresh store: straight from the log, nothing built again.
      const reopened = await createFileStore({ dataDir, onWarning: () => {} });
      expect(await log(reopened, sessionId)).toEqual(expected);
      expect(await reopened.listCheckpoints(sessionId)).toEqual(checkpoints);
      await reopened.close();

      // `parley show`'s path: the session manager over the data folder.
      const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
      const runtime = await manager.getRuntimeSession(sessionId);
      const eagerManager = await createSessionManager({ store: eager.store, preloadTokenizer: false });
      const eagerRuntime = await eagerManager.getRuntimeSession(eager.sessionId);
      expect(runtime.blocks).toEqual(eagerRuntime.blocks);
      expect(runtime.metrics).toEqual(eagerRuntime.metrics);
      await manager.close();
      await eagerManager.close();
    },
  );

  it.each([
    ['a generated 3 MB transcript', 'generated'],
    ['a transcript with a compaction', 'compacted'],
    ['a transcript with a rewind and an inline sidechain', 'rewound'],
  ])(
    "`parley show`'s read parses the copy and writes nothing; it reads as the built log does: %s",
    async (_name, which) => {
      const path =
        which === 'generated' ? transcript : await fixtureAlone(which === 'compacted' ? COMPACTED_ID : REWOUND_ID);
      const dataDir = join(work, 'data');
      const store = await createFileStore({ dataDir, onWarning: () => {} });
      const { sessions } = await importTranscripts(path, { store, now: NOW });
      const sessionId = sessions[0]!.sessionId;
      await store.close();

      const before = await createSessionManager({ dataDir, preloadTokenizer: false });
      const shown = await before.getRuntimeSession(sessionId);
      await before.close();
      const raw = await createFileStore({ dataDir, onWarning: () => {} });
      expect(await raw.lastSeq(sessionId)).toBe(-1);
      expect(await raw.readTranscript(sessionId, 'import-manifest.json')).toContain('pendingEvents');
      await raw.close();

      // A reader of the stored events builds the log; a show after it reads the log.
      const builder = await createSessionManager({ dataDir, preloadTokenizer: false });
      const events = await builder.getEvents(sessionId);
      await builder.close();
      const after = await createSessionManager({ dataDir, preloadTokenizer: false });
      const built = await after.getRuntimeSession(sessionId);
      await after.close();

      const eager = await eagerImport(path);
      expect(events).toEqual(await log(eager.store, eager.sessionId));
      expect(shown.blocks.length).toBeGreaterThan(0);
      expect(shown.blocks).toEqual(built.blocks);
      expect(shown.subagents).toEqual(built.subagents);
      expect(shown.metrics).toEqual(built.metrics);
      expect(shown.lastSeq).toBe(built.lastSeq);
      expect(shown.lastSeq).toBe(events.length - 1);
      if (which === 'rewound') expect(shown.subagents.length).toBeGreaterThan(0);
    },
  );

  it('continuing the session appends after its built history', async () => {
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    const eager = await eagerImport(transcript);
    const expected = await log(eager.store, eager.sessionId);

    // The first thing done to the session is an append: it waits for the build, then lands after it.
    const view = withImportedSessions(store);
    const appended = await view.append(sessionId, [
      {
        type: 'block_complete',
        conversationId: 'main',
        at: NOW(),
        block: { type: 'user_message', id: 'continued', createdAt: NOW(), content: 'go on' },
      },
    ]);
    expect(appended[0]!.seq).toBe(expected.length);
    const events = await log(view, sessionId);
    expect(events.slice(0, -1)).toEqual(expected);
    expect(events.at(-1)).toMatchObject({ seq: expected.length, block: { id: 'continued' } });
    await store.close();
  });

  it('calls made while the session is being built wait for it, and keep their order', async () => {
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    const expected = await log((await eagerImport(transcript)).store, `cc-${NATIVE_ID}`);
    const draft = (id: string) => ({
      type: 'block_complete' as const,
      conversationId: 'main',
      at: NOW(),
      block: { type: 'user_message' as const, id, createdAt: NOW(), content: id },
    });

    const view = withImportedSessions(store);
    const reading = log(view, sessionId);
    const first = view.append(sessionId, [draft('first')]);
    const second = view.append(sessionId, [draft('second')]);
    const last = view.lastSeq(sessionId);
    const [read, appendedFirst, appendedSecond, lastSeq] = await Promise.all([reading, first, second, last]);
    // The reader that started the build got the built log; the appends landed after it, in call order.
    expect(read).toEqual(expected);
    expect(appendedFirst[0]!.seq).toBe(expected.length);
    expect(appendedSecond[0]!.seq).toBe(expected.length + 1);
    // lastSeq waited for the build too (appends not yet flushed are not counted, as without the view).
    expect(lastSeq).toBeGreaterThanOrEqual(expected.length - 1);
    expect((await log(view, sessionId)).slice(-2).map((event) => event.seq)).toEqual([
      expected.length,
      expected.length + 1,
    ]);
    await store.close();
  });

  it('a session whose copy is gone fails its first read with an error that says to import the file again, and changes nothing', async () => {
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW, copyTranscriptMaxBytes: 1_000_000 });
    const sessionId = sessions[0]!.sessionId;
    await fs.rm(join(dataDir, 'sessions', sessionId, 'transcripts', 'native-main.jsonl'));
    const error = await log(withImportedSessions(store), sessionId).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'CORRUPT_FILE' });
    expect((error as Error).message).toContain(`Import ${NATIVE_ID}.jsonl again`);
    expect(await store.lastSeq(sessionId)).toBe(-1);
    expect(await store.readTranscript(sessionId, 'import-manifest.json')).toContain('pendingEvents');
    await store.close();

    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    const shown = await manager.getRuntimeSession(sessionId).catch((caught: unknown) => caught);
    await manager.close();
    expect(shown).toMatchObject({ code: 'CORRUPT_FILE' });
    expect((shown as Error).message).toContain(`Import ${NATIVE_ID}.jsonl again`);
  });

  it('a session that cannot be created, or a copy that fails, fails the import with the store’s own error, and leaves no session behind', async () => {
    // The store refuses the session; or the file store's own copy fails (its source is gone when it copies).
    for (const failing of ['refused', 'copy'] as const) {
      const dataDir = join(work, `data-${failing}`);
      const store = await createFileStore({ dataDir, onWarning: () => {} });
      const refused = new StoreError('STORE_IO', 'Cannot write (refused by the test).');
      const calls: string[] = [];
      const broken = new Proxy(store, {
        get(target, key) {
          const value = Reflect.get(target, key) as unknown;
          if (typeof value !== 'function') return value;
          const method = (value as (...args: unknown[]) => unknown).bind(target);
          if (key !== 'createSessionWithTranscripts') return method;
          return (record: unknown, transcripts: Array<{ name: string; sourcePath?: string }>) => {
            calls.push(key);
            if (failing === 'refused') return Promise.reject(refused);
            const gone = transcripts.map((file) =>
              file.sourcePath === undefined ? file : { ...file, sourcePath: join(work, 'gone.jsonl') },
            );
            return method(record, gone);
          };
        },
      });
      const error = await importTranscripts(transcript, { store: broken, now: NOW }).catch((caught: unknown) => caught);
      if (failing === 'refused') expect(error).toBe(refused);
      else expect(error).toMatchObject({ code: 'STORE_IO', message: expect.stringContaining('gone.jsonl') });
      expect(calls, failing).toEqual(['createSessionWithTranscripts']);
      const listed: string[] = [];
      for await (const record of store.listSessions()) listed.push(record.sessionId);
      expect(listed, failing).toEqual([]);
      await store.close();
      // Nothing half-made is left in the data folder either.
      expect(await fs.readdir(join(dataDir, 'sessions')), failing).toEqual([]);
      expect(await fs.readdir(join(dataDir, 'tmp')), failing).toEqual([]);
    }
  });

  it('a crash (SIGKILL) while the blocks are built leaves a session that reads correctly afterwards', async () => {
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    await store.close();

    // A child starts building and is killed once a first batch of events is durable.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'build-and-hang.ts'), dataDir, sessionId],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('appended')) resolve();
      });
      child.on('exit', () => reject(new Error(`the child ended before it appended: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect(await exit).toBe('SIGKILL');

    const reopened = await createFileStore({ dataDir, onWarning: () => {} });
    const eager = await eagerImport(transcript);
    const expected = await log(eager.store, eager.sessionId);
    // Cut mid-way: the log holds a prefix, and the manifest still says the events are pending.
    const partial = await log(reopened, sessionId);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(expected.length);
    expect(partial).toEqual(expected.slice(0, partial.length));
    expect(await reopened.readTranscript(sessionId, 'import-manifest.json')).toContain('pendingEvents');

    await reopened.close();
    // `parley show` does not parse a copy whose build was cut: it resumes the build, and shows the whole session.
    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    const shown = await manager.getRuntimeSession(sessionId);
    await manager.close();
    const eagerManager = await createSessionManager({ store: eager.store, preloadTokenizer: false });
    expect(shown.blocks).toEqual((await eagerManager.getRuntimeSession(eager.sessionId)).blocks);
    await eagerManager.close();

    const resumed = await createFileStore({ dataDir, onWarning: () => {} });
    expect(await resumed.readTranscript(sessionId, 'import-manifest.json')).not.toContain('pendingEvents');
    expect(await log(withImportedSessions(resumed), sessionId)).toEqual(expected);
    await resumed.close();
  });

  it('a re-import of a changed transcript builds the session first, then appends only what is new', async () => {
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    const before = (await eagerImport(transcript)).store;
    const built = await log(before, `cc-${NATIVE_ID}`);
    const lines = (await fs.readFile(transcript, 'utf8')).trimEnd().split('\n');
    const prompt = JSON.parse(
      lines.find((line) => line.includes('"type":"user"') && line.includes('"content":"'))!,
    ) as Record<string, unknown>;
    await fs.appendFile(
      transcript,
      `${JSON.stringify({ ...prompt, uuid: 'appended-prompt', parentUuid: null, message: { role: 'user', content: 'one more thing' } })}\n`,
    );

    const again = await importTranscripts(transcript, { store, now: NOW });
    expect(again.sessions[0]).toMatchObject({ status: 'updated' });
    const events = await log(withImportedSessions(store), sessionId);
    expect(events.slice(0, built.length)).toEqual(built);
    expect(
      events.some(
        (event) =>
          event.type === 'block_complete' &&
          event.block.type === 'user_message' &&
          event.block.content === 'one more thing',
      ),
    ).toBe(true);
    await store.close();
  });
});
