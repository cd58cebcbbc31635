import { promises as fs, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileStore, type SessionStore, type StoreWarning } from '../../../src/store/index.js';
import {
  agentDescription,
  checkpointInput,
  collect,
  contextDocument,
  feature,
  sessionRecord,
  storeErrorOf,
  task,
  textEvent,
  userMessageEvent,
} from '../builders.js';
import { killAndWait, startFixture, waitForOutput } from '../child-process.js';
import { runStoreConformance } from './conformance.js';

const folders = new WeakMap<SessionStore, string>();

runStoreConformance({
  name: 'file store',
  create: async () => {
    const dataDir = await fs.mkdtemp(join(tmpdir(), 'parley-file-store-'));
    const store = await createFileStore({ dataDir, onWarning: () => undefined });
    folders.set(store, dataDir);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    await fs.rm(folders.get(store)!, { recursive: true, force: true });
  },
});

/** Every file and folder under `root`, relative to it, sorted. */
async function tree(root: string): Promise<string[]> {
  const entries = await fs.readdir(root, { recursive: true });
  return entries.map((entry) => relative(root, join(root, entry))).sort();
}

describe('file store', () => {
  let parent: string;
  let dataDir: string;
  let warnings: StoreWarning[];
  const open = () => createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });

  beforeEach(async () => {
    parent = await fs.mkdtemp(join(tmpdir(), 'parley-file-store-'));
    dataDir = join(parent, 'data');
    warnings = [];
  });
  afterEach(async () => {
    await fs.rm(parent, { recursive: true, force: true });
  });

  it('a process that only searches or reads a session never reads the listing index, even a damaged one', async () => {
    const first = await open();
    await first.createSession(sessionRecord('s1', { title: 'Listed' }));
    await first.append('s1', [userMessageEvent('u1', 'find the needle')]);
    await first.close();
    const listing = join(dataDir, 'index', 'sessions.jsonl');
    await fs.writeFile(listing, 'damaged\n');
    const reader = await open();
    expect((await reader.searchSessions!({ text: 'needle' })).hits.map((hit) => hit.sessionId)).toEqual(['s1']);
    expect(await collect(reader.readLog('s1'))).toHaveLength(1);
    await reader.close();
    expect(await fs.readFile(listing, 'utf8')).toBe('damaged\n');
    expect(warnings).toEqual([]);
    // The first listing finds it damaged and rebuilds it from the records.
    const lister = await open();
    expect((await lister.listSessionPage!({ limit: 10 })).sessions.map((record) => record.title)).toEqual(['Listed']);
    await lister.close();
    expect(warnings.map((warning) => warning.code)).toEqual(['INDEX_REBUILT']);
  });

  describe('a session created whole with its transcripts (createSessionWithTranscripts)', () => {
    it('creates the record, the log and every transcript at once, copies files verbatim, and reports their sizes', async () => {
      const source = join(parent, 'native.jsonl');
      await fs.writeFile(source, '{"a":"é"}\n'.repeat(1000));
      const store = await open();
      const { session, copiedBytes } = await store.createSessionWithTranscripts!(
        sessionRecord('s1', { title: 'Whole' }),
        [
          { name: 'main', sourcePath: source },
          { name: 'import-manifest.json', content: '{"files":[]}' },
        ],
      );
      expect(session).toEqual(sessionRecord('s1', { title: 'Whole' }));
      expect(copiedBytes).toEqual({ main: (await fs.stat(source)).size });
      expect(await store.readTranscript('s1', 'main')).toBe(await fs.readFile(source, 'utf8'));
      expect(await store.listTranscripts('s1')).toEqual(['import-manifest.json', 'main']);
      expect(await store.lastSeq('s1')).toBe(-1);
      expect((await store.append('s1', [textEvent('a1', 'after')]))[0]!.seq).toBe(0);
      await store.close();
      const again = await open();
      expect(await again.getSession('s1')).toEqual(sessionRecord('s1', { title: 'Whole' }));
      expect(await again.readTranscript('s1', 'import-manifest.json')).toBe('{"files":[]}');
      await again.close();
      expect(await fs.readdir(join(dataDir, 'tmp'))).toEqual([]);
      expect(warnings).toEqual([]);
    });

    it('refuses bad transcripts, an existing session and a failed copy, and leaves nothing behind', async () => {
      const store = await open();
      const source = join(parent, 'native.jsonl');
      await fs.writeFile(source, 'line\n');
      const refusals: Array<[string, unknown[], string]> = [
        ['a name that leaves the folder', [{ name: '../escape', content: 'x' }], 'INVALID_ID'],
        [
          'a name given twice',
          [
            { name: 'main', content: 'x' },
            { name: 'main', sourcePath: source },
          ],
          'INVALID_INPUT',
        ],
        ['neither text nor a file', [{ name: 'main' }], 'INVALID_INPUT'],
        ['not a list', ['main'], 'INVALID_ID'],
      ];
      for (const [what, transcripts, code] of refusals) {
        await expect(
          store.createSessionWithTranscripts!(sessionRecord('s1'), transcripts as never),
          what,
        ).rejects.toMatchObject({ code });
      }
      const missing = join(parent, 'missing.jsonl');
      const failed = await storeErrorOf(() =>
        store.createSessionWithTranscripts!(sessionRecord('s1'), [{ name: 'main', sourcePath: missing }]),
      );
      expect(failed.code).toBe('STORE_IO');
      expect(failed.message).toContain(missing);
      expect(await store.getSession('s1')).toBeUndefined();
      expect(await fs.readdir(join(dataDir, 'sessions'))).toEqual([]);
      expect(await fs.readdir(join(dataDir, 'tmp'))).toEqual([]);

      await store.createSession(sessionRecord('s1', { title: 'First' }));
      const exists = await storeErrorOf(() =>
        store.createSessionWithTranscripts!(sessionRecord('s1'), [{ name: 'main', content: 'other' }]),
      );
      expect(exists.code).toBe('SESSION_EXISTS');
      expect(await store.getSession('s1')).toEqual(sessionRecord('s1', { title: 'First' }));
      expect(await store.listTranscripts('s1')).toEqual([]);
      await store.close();
    });
  });

  describe('persistence', () => {
    it('keeps call order for concurrent first appends to a session this store has not opened yet', async () => {
      const first = await open();
      for (const id of ['s1', 's2', 's3']) await first.createSession(sessionRecord(id));
      await first.close();
      for (let round = 0; round < 5; round++) {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, call) =>
            store.append(`s${(round % 3) + 1}`, [textEvent('b', `${round}.${call}`)]),
          ),
        );
        const seqs = results.map(([event]) => event!.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        const deltas = (await collect(store.readLog(`s${(round % 3) + 1}`)))
          .slice(-30)
          .map((event) => (event as { delta: string }).delta);
        expect(deltas).toEqual(Array.from({ length: 30 }, (_, call) => `${round}.${call}`));
        await store.close();
      }
    });

    it('keeps everything across close and reopen, and numbers new appends after the old ones', async () => {
      const first = await open();
      await first.createSession(sessionRecord('s1', { title: 'Kept' }));
      await first.updateSession('s1', (current) => ({ ...current, status: 'archived' }));
      const appended = await first.append('s1', [userMessageEvent('u1', 'hello'), textEvent('a1', 'world')]);
      await first.writeCheckpoint('s1', checkpointInput(0));
      await first.writeCheckpoint('s1', checkpointInput(1));
      await first.writeContext(contextDocument('s1'));
      await first.writeAgentDescription(agentDescription('s1'));
      await first.writeTranscript('s1', 'native.jsonl', 'raw\n');
      await first.putFeature(feature('f1'));
      await first.putFeatureTask(task('f1', 't1'));
      await first.close();

      const second = await open();
      expect(await second.getSession('s1')).toEqual(sessionRecord('s1', { title: 'Kept', status: 'archived' }));
      expect(await collect(second.listSessions())).toHaveLength(1);
      expect(await collect(second.readLog('s1'))).toEqual(appended);
      expect(await second.lastSeq('s1')).toBe(1);
      expect((await second.listCheckpoints('s1')).map((checkpoint) => checkpoint.version)).toEqual([1, 2]);
      expect((await second.writeCheckpoint('s1', checkpointInput(2))).version).toBe(3);
      expect(await second.readContext('s1')).toEqual(contextDocument('s1'));
      expect(await second.readAgentDescription('s1')).toEqual(agentDescription('s1'));
      expect(await second.readTranscript('s1', 'native.jsonl')).toBe('raw\n');
      expect(await second.getFeature('f1')).toEqual(feature('f1'));
      expect(await second.listFeatureTasks('f1')).toEqual([task('f1', 't1')]);
      expect((await second.append('s1', [textEvent('a1', '!')]))[0]!.seq).toBe(2);
      await second.close();
      expect(warnings).toEqual([]);
    });

    it('lays files out as documented, human-readable, with a format version in each', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      await store.append('s1', [textEvent('b', 'x')]);
      await store.writeCheckpoint('s1', checkpointInput(0));
      await store.writeContext(contextDocument('s1'));
      await store.writeAgentDescription(agentDescription('s1'));
      await store.writeTranscript('s1', 'raw.txt', 'raw');
      await store.putFeature(feature('f1'));
      await store.putFeatureTask(task('f1', 't1'));
      expect(await tree(dataDir)).toEqual([
        '.gitignore',
        'features',
        'features/f1',
        'features/f1/feature.json',
        'features/f1/tasks',
        'features/f1/tasks/t1',
        'features/f1/tasks/t1/task.json',
        'index',
        'index/messages.jsonl',
        'index/open',
        'index/sessions.jsonl',
        'sessions',
        'sessions/s1',
        'sessions/s1/agent-description.json',
        'sessions/s1/checkpoints',
        'sessions/s1/checkpoints/v000001.json',
        'sessions/s1/context.json',
        'sessions/s1/log.jsonl',
        'sessions/s1/session.json',
        'sessions/s1/transcripts',
        'sessions/s1/transcripts/raw.txt',
        'store.lock',
        'tmp',
      ]);
      const session = await fs.readFile(join(dataDir, 'sessions/s1/session.json'), 'utf8');
      expect(session).toContain('\n  "formatVersion": 1,\n');
      const lines = (await fs.readFile(join(dataDir, 'sessions/s1/log.jsonl'), 'utf8')).split('\n');
      expect(JSON.parse(lines[0]!)).toEqual({ formatVersion: 1, kind: 'parley-log', sessionId: 's1' });
      expect(JSON.parse(lines[1]!)).toMatchObject({ seq: 0, sessionId: 's1', type: 'text_delta', delta: 'x' });
      expect(lines[2]).toBe('');
      for (const file of ['checkpoints/v000001.json', 'context.json', 'agent-description.json']) {
        expect(JSON.parse(await fs.readFile(join(dataDir, 'sessions/s1', file), 'utf8'))).toMatchObject({
          formatVersion: 1,
        });
      }
      const lock = JSON.parse(await fs.readFile(join(dataDir, 'store.lock'), 'utf8')) as Record<string, unknown>;
      expect(lock).toMatchObject({ formatVersion: 1, pid: process.pid });
      await store.close();
      await expect(fs.stat(join(dataDir, 'store.lock'))).rejects.toThrow();
    });

    it('lists sessions whose session.json is larger than the listing read buffer', async () => {
      const store = await open();
      const title = 'long title '.repeat(10_000);
      await store.createSession(sessionRecord('large', { title }));
      await store.createSession(sessionRecord('small'));
      await store.close();
      const reopened = await open();
      const listed = await collect(reopened.listSessions());
      expect(listed.find((record) => record.sessionId === 'large')?.title).toBe(title);
      expect(listed).toHaveLength(2);
      await reopened.close();
    });

    it('never overwrites a checkpoint version once written', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      await store.writeCheckpoint('s1', checkpointInput(0, { pinned: ['first'] }));
      const path = join(dataDir, 'sessions/s1/checkpoints/v000001.json');
      const before = await fs.readFile(path, 'utf8');
      await store.writeCheckpoint('s1', checkpointInput(5, { pinned: ['second'] }));
      expect(await fs.readFile(path, 'utf8')).toBe(before);
      await store.close();
    });

    it('lets the event loop run between appends awaited in a loop', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      let ranBetween = false;
      setImmediate(() => (ranBetween = true));
      for (let index = 0; index < 3; index += 1) await store.append('s1', [textEvent('b', String(index))]);
      expect(ranBetween).toBe(true);
      await store.close();
    });

    it('keeps appending correctly to more sessions than it keeps log handles open for, with handles bounded', async () => {
      const store = await open();
      const ids = Array.from({ length: 140 }, (_, index) => `s${index}`);
      for (const id of ids) await store.createSession(sessionRecord(id));
      for (let round = 0; round < 2; round += 1) {
        await Promise.all(ids.map((id) => store.append(id, [textEvent('b', `${id}.${round}`)])));
      }
      const openLogFiles = (await fs.readdir('/proc/self/fd').catch(() => [] as string[])).filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).endsWith('log.jsonl');
        } catch {
          return false;
        }
      });
      expect(openLogFiles.length).toBeLessThanOrEqual(128);
      for (const id of [ids[0]!, ids[70]!, ids[139]!]) {
        expect(
          (await collect(store.readLog(id))).map((event) => [event.seq, (event as { delta: string }).delta]),
        ).toEqual([
          [0, `${id}.0`],
          [1, `${id}.1`],
        ]);
      }
      await store.close();
    });
  });

  it('reads back every window of appends holding multi-byte text, including appends larger than its encode buffer', async () => {
    // Line offsets come from the encoded bytes; a wrong one shows up as a misread window after reopening.
    const deltas = [
      'ascii',
      'ünïcødé ✓',
      '日本語のテキスト',
      'emoji 😀🎉',
      'lone \ud800 surrogate',
      'ä'.repeat(700_000),
      'after the big one',
    ];
    const store = await open();
    await store.createSession(sessionRecord('s1'));
    await store.append(
      's1',
      deltas.slice(0, 3).map((delta) => textEvent('b', delta)),
    );
    await store.append(
      's1',
      deltas.slice(3).map((delta) => textEvent('b', delta)),
    );
    await store.close();
    const reopened = await open();
    const read = async (afterSeq?: number, throughSeq?: number) =>
      (await collect(reopened.readLog('s1', { afterSeq, throughSeq }))).map((event) => [
        event.seq,
        (event as { delta: string }).delta,
      ]);
    const expected = deltas.map((delta, seq) => [seq, delta]);
    expect(await read()).toEqual(expected);
    for (let first = 0; first < deltas.length; first += 1) {
      expect(await read(first - 1, first)).toEqual([expected[first]]);
      expect(await read(first - 1)).toEqual(expected.slice(first));
    }
    await reopened.close();
  });

  describe('torn log tail', () => {
    async function sessionWithMessages(count: number) {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      const events = await store.append(
        's1',
        Array.from({ length: count }, (_, index) => userMessageEvent(`u${index}`, `message ${index}`)),
      );
      await store.close();
      return { events, logPath: join(dataDir, 'sessions/s1/log.jsonl') };
    }

    it('sets an incomplete last line aside with a warning and keeps every complete line', async () => {
      const { events, logPath } = await sessionWithMessages(3);
      const intact = await fs.readFile(logPath);
      const torn = '{"type":"text_delta","conversationId":"main","blockId":"b","del';
      await fs.appendFile(logPath, torn);

      const store = await open();
      expect(await collect(store.readLog('s1'))).toEqual(events);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ code: 'TORN_LOG_TAIL', sessionId: 's1' });
      expect(warnings[0]!.file).toMatch(/log\.jsonl\.torn-/);
      expect(await fs.readFile(warnings[0]!.file!, 'utf8')).toBe(torn);
      expect(await fs.readFile(logPath)).toEqual(intact);
      expect((await store.append('s1', [textEvent('b', 'next')]))[0]!.seq).toBe(3);
      await store.close();
    });

    it('sets aside a complete last line that does not parse (garbage from a power loss)', async () => {
      const { events, logPath } = await sessionWithMessages(2);
      await fs.appendFile(logPath, '\0\0\0\0\0\0\n');
      const store = await open();
      expect(await store.lastSeq('s1')).toBe(1);
      expect(await collect(store.readLog('s1'))).toEqual(events);
      expect(warnings.map((warning) => warning.code)).toEqual(['TORN_LOG_TAIL']);
      await store.close();
    });

    it('repairs a torn tail when the log is first opened for appending, without reading it first', async () => {
      const { logPath } = await sessionWithMessages(2);
      await fs.appendFile(logPath, '{"seq":2,"ty');
      const store = await open();
      const [next] = await store.append('s1', [textEvent('b', 'after the crash')]);
      expect(next!.seq).toBe(2);
      expect(warnings.map((warning) => warning.code)).toEqual(['TORN_LOG_TAIL']);
      expect((await collect(store.readLog('s1'))).map((event) => event.seq)).toEqual([0, 1, 2]);
      await store.close();
    });

    it('reports an unparseable line in the middle as CORRUPT_FILE with its line number', async () => {
      const { logPath } = await sessionWithMessages(4);
      const lines = (await fs.readFile(logPath, 'utf8')).split('\n');
      lines[2] = '{"seq":1, this is not json';
      await fs.writeFile(logPath, lines.join('\n'));
      const store = await open();
      const error = await storeErrorOf(() => collect(store.readLog('s1')));
      expect(error.code).toBe('CORRUPT_FILE');
      expect(error.message).toContain('log.jsonl line 3');
      expect(error.data).toMatchObject({ line: 3 });
      expect((await collect(store.readLog('s1', { afterSeq: 1 }))).map((event) => event.seq)).toEqual([2, 3]);
      await store.close();
    });
  });

  describe('damaged and newer files', () => {
    it('reports a corrupt session.json as CORRUPT_FILE naming it, while other sessions still list and load', async () => {
      const store = await open();
      await store.createSession(sessionRecord('good'));
      await store.createSession(sessionRecord('bad'));
      await store.append('good', [textEvent('b', 'fine')]);
      await store.append('bad', [textEvent('b', 'log is fine')]);
      await store.close();
      const badFile = join(dataDir, 'sessions/bad/session.json');
      await fs.writeFile(badFile, '{"formatVersion": 1, "sessionId": "bad", ');

      const reopened = await open();
      const error = await storeErrorOf(() => reopened.getSession('bad'));
      expect(error.code).toBe('CORRUPT_FILE');
      expect(error.message).toContain(badFile);
      expect(error.message).toMatch(/Restore session\.json from a backup/);
      expect((await collect(reopened.listSessions())).map((record) => record.sessionId)).toEqual(['good']);
      expect(warnings).toEqual([
        expect.objectContaining({ code: 'UNREADABLE_SESSION', sessionId: 'bad', file: badFile }),
      ]);
      expect(await collect(reopened.readLog('good'))).toHaveLength(1);
      expect(await collect(reopened.readLog('bad'))).toHaveLength(1);
      expect((await storeErrorOf(() => reopened.updateSession('bad', (current) => current))).code).toBe('CORRUPT_FILE');

      // Once the file is restored, the session is back in the list.
      await fs.writeFile(badFile, JSON.stringify(sessionRecord('bad')));
      expect((await collect(reopened.listSessions())).map((record) => record.sessionId).sort()).toEqual([
        'bad',
        'good',
      ]);
      await reopened.close();
    });

    it('refuses files written by a newer format version, naming the file', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      await store.createSession(sessionRecord('s2'));
      await store.writeCheckpoint('s1', checkpointInput(0));
      await store.close();
      const sessionFile = join(dataDir, 'sessions/s1/session.json');
      await fs.writeFile(sessionFile, JSON.stringify({ ...sessionRecord('s1'), formatVersion: 2 }));
      const checkpointFile = join(dataDir, 'sessions/s1/checkpoints/v000001.json');
      await fs.writeFile(
        checkpointFile,
        JSON.stringify({ ...JSON.parse(await fs.readFile(checkpointFile, 'utf8')), formatVersion: 3 }),
      );
      const logFile = join(dataDir, 'sessions/s2/log.jsonl');
      await fs.writeFile(logFile, '{"formatVersion":2,"kind":"parley-log","sessionId":"s2"}\n');

      const reopened = await open();
      for (const [action, file] of [
        [() => reopened.getSession('s1'), sessionFile],
        [() => reopened.readCheckpoint('s1'), checkpointFile],
        [() => collect(reopened.readLog('s2')), logFile],
        [() => reopened.append('s2', [textEvent('b', 'x')]), logFile],
      ] as const) {
        const error = await storeErrorOf(action);
        expect(error.code).toBe('UNSUPPORTED_FORMAT_VERSION');
        expect(error.message).toContain(file);
        expect(error.message).toMatch(/upgrade Parley/);
      }
      expect(await fs.readFile(logFile, 'utf8')).toBe('{"formatVersion":2,"kind":"parley-log","sessionId":"s2"}\n');
      expect((await collect(reopened.listSessions())).map((record) => record.sessionId)).toEqual(['s2']);
      expect(warnings.map((warning) => warning.code)).toEqual(['UNREADABLE_SESSION']);
      await reopened.close();
    });

    it('leaves a damaged feature or task out of its list with a warning', async () => {
      const store = await open();
      await store.putFeature(feature('f1'));
      await store.putFeature(feature('f2'));
      await store.putFeatureTask(task('f1', 't1'));
      await store.putFeatureTask(task('f1', 't2'));
      await fs.writeFile(join(dataDir, 'features/f2/feature.json'), 'not json');
      await fs.writeFile(join(dataDir, 'features/f1/tasks/t2/task.json'), '{}');
      expect((await store.listFeatures()).map((each) => each.featureId)).toEqual(['f1']);
      expect((await store.listFeatureTasks()).map((each) => each.taskId)).toEqual(['t1']);
      expect(warnings.map((warning) => warning.code)).toEqual(['UNREADABLE_FILE', 'UNREADABLE_FILE']);
      expect((await storeErrorOf(() => store.getFeature('f2'))).code).toBe('CORRUPT_FILE');
      await store.close();
    });

    it('removes temp files left by a crash on open, with a warning', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      await store.close();
      await fs.writeFile(join(dataDir, 'tmp/session.json.999-1-abc.tmp'), '{"half":');
      await fs.mkdir(join(dataDir, 'tmp/s2.999-2-def.tmp'));
      const reopened = await open();
      expect(warnings.map((warning) => warning.code).sort()).toEqual(['STRAY_TEMP_FILE', 'STRAY_TEMP_FILE']);
      expect(await fs.readdir(join(dataDir, 'tmp'))).toEqual([]);
      expect((await collect(reopened.listSessions())).map((record) => record.sessionId)).toEqual(['s1']);
      await reopened.close();
    });
  });

  describe('ids', () => {
    it.each(['../x', 'a/b', '..', '.hidden', '', 'x'.repeat(300)])(
      'refuses %j with INVALID_ID and writes nothing anywhere',
      async (id) => {
        const store = await open();
        await store.createSession(sessionRecord('good'));
        const before = await tree(parent);
        const calls = [
          () => store.createSession(sessionRecord(id)),
          () => store.append(id, [textEvent('b', 'x')]),
          () => store.writeCheckpoint(id, checkpointInput(0)),
          () => store.writeContext(contextDocument(id)),
          () => store.writeTranscript('good', id, 'x'),
          () => store.putFeature(feature(id)),
          () => store.putFeatureTask(task('f1', id)),
        ];
        for (const call of calls) expect((await storeErrorOf(call)).code).toBe('INVALID_ID');
        expect(await tree(parent)).toEqual(before);
        await store.close();
      },
    );
  });

  describe('lock', () => {
    it('refuses a second store on the same folder in this process with STORE_LOCKED', async () => {
      const first = await open();
      const error = await storeErrorOf(open);
      expect(error.code).toBe('STORE_LOCKED');
      expect(error.message).toContain(`process ${process.pid}`);
      await first.close();
      await (await open()).close();
    });

    it('refuses a data folder held by another process with STORE_LOCKED naming its pid, and takes the lock over once it is gone', async () => {
      const child = startFixture('hold-lock.ts', [dataDir]);
      try {
        const output = await waitForOutput(child, (stdout) => stdout.includes('ready'));
        const pid = Number(/ready (\d+)/.exec(output)![1]);
        const error = await storeErrorOf(open);
        expect(error.code).toBe('STORE_LOCKED');
        expect(error.message).toContain(`process ${pid}`);
        expect(error.message).toMatch(/Stop that Parley process/);
        expect(error.data).toMatchObject({ pid });
      } finally {
        await killAndWait(child);
      }
      const store = await open();
      // The holder was killed wherever it was: in the middle of writing its listing index, it leaves a
      // temp file, which this open removes with a warning of its own (the index is rebuilt, nothing lost).
      const lockWarnings = warnings.filter((warning) => warning.code !== 'STRAY_TEMP_FILE');
      expect(lockWarnings).toEqual([expect.objectContaining({ code: 'STALE_LOCK' })]);
      expect(lockWarnings[0]!.message).toMatch(/no longer running/);
      await store.close();
    });

    it('takes over a lock left by a process that no longer exists, with a warning', async () => {
      const child = startFixture('hold-lock.ts', [join(parent, 'elsewhere')]);
      await waitForOutput(child, (stdout) => stdout.includes('ready'));
      const deadPid = child.pid!;
      await killAndWait(child);
      await fs.mkdir(dataDir, { recursive: true });
      await fs.writeFile(
        join(dataDir, 'store.lock'),
        JSON.stringify({
          formatVersion: 1,
          pid: deadPid,
          hostname: (await import('node:os')).hostname(),
          startedAt: '2024-01-01T00:00:00.000Z',
        }),
      );
      const store = await open();
      expect(warnings.map((warning) => warning.code)).toEqual(['STALE_LOCK']);
      expect(warnings[0]!.message).toContain(`pid ${deadPid}`);
      expect(JSON.parse(await fs.readFile(join(dataDir, 'store.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
      await store.close();
    });

    it('releases the lock only after pending appends are durable', async () => {
      const store = await open();
      await store.createSession(sessionRecord('s1'));
      const pending = store.append('s1', [textEvent('b', 'last words')]);
      await store.close();
      await pending;
      const reopened = await open();
      expect(await reopened.lastSeq('s1')).toBe(0);
      await reopened.close();
    });
  });
});
