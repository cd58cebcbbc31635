import { appendFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createSessionManager } from '../../../src/sessions/index.js';
import { createFileStore, StoreError, type SessionStore, type StoreWarning } from '../../../src/store/index.js';
import { checkpointInput, collect, sessionRecord, storeErrorOf, textEvent } from '../builders.js';
import { diskFaults } from './disk-faults.js';
import { faultInjectedDisk, mountSmallTmpfs, type SmallDisk } from './small-disk.js';

// The fault-injection layer: node:fs as the store sees it, with faults only under diskFaults.root.
vi.mock('node:fs', async (importOriginal) => (await import('./disk-faults.js')).withDiskFaults(await importOriginal()));

/** "A full disk loses nothing", on a real tmpfs that fills up and on the fault-injection layer. */

const TMPFS_KIB = 1024;
const SESSION = 's1';

const probe = await mountSmallTmpfs(TMPFS_KIB);
const tmpfsUnavailable = 'unavailable' in probe ? probe.unavailable : undefined;
if ('unavailable' in probe) {
  console.warn(
    `full-disk tests: the REAL TMPFS VARIANT IS SKIPPED (${probe.unavailable}); only the fault-injection variant runs.`,
  );
} else {
  await probe.dispose();
}

const variants: Array<{ name: SmallDisk['variant']; make: () => Promise<SmallDisk>; unavailable: string | undefined }> =
  [
    { name: 'fault-injection', make: faultInjectedDisk, unavailable: undefined },
    {
      name: 'tmpfs',
      make: async () => {
        const disk = await mountSmallTmpfs(TMPFS_KIB);
        if ('unavailable' in disk) throw new Error(`tmpfs mounted at the probe but not now: ${disk.unavailable}`);
        return disk;
      },
      unavailable: tmpfsUnavailable,
    },
  ];

/** The log's lines after the header, parsed; fails on a torn or unparsable line anywhere. */
async function logLines(path: string): Promise<StreamEvent[]> {
  const text = await readFile(path, 'utf8');
  expect(text.endsWith('\n'), `${path} ends with a complete line`).toBe(true);
  const lines = text.slice(0, -1).split('\n');
  return lines.slice(1).map((line, index) => {
    try {
      return JSON.parse(line) as StreamEvent;
    } catch {
      throw new Error(`line ${index + 2} of ${path} is torn: ${line.slice(0, 80)}…`);
    }
  });
}

function expectDiskFull(error: StoreError, file: string): void {
  expect(error).toBeInstanceOf(StoreError);
  expect(error.code).toBe('DISK_FULL');
  expect(error.data).toMatchObject({ sessionId: SESSION, file, errno: 'ENOSPC' });
  expect(error.message).toContain(`session "${SESSION}"`);
  expect(error.message).toContain('Free space');
}

describe.each(variants)('a full disk ($name)', ({ name, make, unavailable }) => {
  let disk: SmallDisk;
  let dataDir: string;
  let warnings: StoreWarning[];
  const open = () => createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });
  const logPath = () => join(dataDir, 'sessions', SESSION, 'log.jsonl');

  beforeAll(() => {
    console.warn(
      unavailable === undefined
        ? `full-disk tests: RUNNING the ${name} variant${name === 'tmpfs' ? ` on a real ${TMPFS_KIB} KiB tmpfs` : ' (node:fs wrapped, faults injected at exact calls)'}.`
        : `full-disk tests: SKIPPING the ${name} variant: ${unavailable}.`,
    );
  });
  beforeEach(async (context) => {
    if (unavailable !== undefined) context.skip();
    disk = await make();
    dataDir = join(disk.dir, 'data');
    warnings = [];
  });
  afterEach(async () => {
    await disk?.dispose();
  });

  it('rejects group-committed appends that do not fit, keeps every acknowledged one, leaves no torn line, and appends again once space is freed', async () => {
    const store = await open();
    await store.createSession(sessionRecord(SESSION));
    const acknowledged: StreamEvent[] = [...(await store.append(SESSION, [textEvent('b0', 'before the disk filled')]))];
    await disk.fill();

    const rejected: StoreError[] = [];
    // Rounds of concurrent appends (one group commit each) until the disk refuses; on tmpfs the
    // log's last page may still have room for a round.
    for (let round = 0; round < 20 && rejected.length === 0; round += 1) {
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, (_, index) =>
          store.append(SESSION, [
            textEvent(`b-${round}-${index}`, `round ${round}, append ${index}: ${'x'.repeat(1500)}`),
          ]),
        ),
      );
      for (const result of results) {
        if (result.status === 'fulfilled') acknowledged.push(...result.value);
        else rejected.push(result.reason as StoreError);
      }
    }
    expect(rejected.length).toBeGreaterThan(0);
    for (const error of rejected) expectDiskFull(error, logPath());
    expect(await logLines(logPath())).toEqual(acknowledged);
    expect(await collect(store.readLog(SESSION))).toEqual(acknowledged);

    await disk.free();
    const [after] = await store.append(SESSION, [textEvent('after', 'space is back')]);
    expect(after!.seq).toBe(acknowledged.length);
    acknowledged.push(after!);
    expect(await logLines(logPath())).toEqual(acknowledged);
    await store.close();

    const reopened = await open();
    expect(await collect(reopened.readLog(SESSION))).toEqual(acknowledged);
    const [next] = await reopened.append(SESSION, [textEvent('reopened', 'after a reopen')]);
    expect(next!.seq).toBe(acknowledged.length);
    await reopened.close();
    expect(warnings).toEqual([]);
  });

  it('rejects a checkpoint write, keeps the earlier checkpoints and leaves no temp file', async () => {
    const store = await open();
    await store.createSession(sessionRecord(SESSION));
    const earlier = [
      await store.writeCheckpoint(SESSION, checkpointInput(0)),
      await store.writeCheckpoint(SESSION, checkpointInput(1)),
    ];
    const checkpointsDir = join(dataDir, 'sessions', SESSION, 'checkpoints');
    const files = await readdir(checkpointsDir);
    await disk.fill();

    const error = await storeErrorOf(() =>
      store.writeCheckpoint(SESSION, checkpointInput(2, { pinned: ['y'.repeat(20_000)] })),
    );
    expectDiskFull(error, join(checkpointsDir, files[0]!.replace('1', '3')));
    expect(await store.listCheckpoints(SESSION)).toEqual(earlier);
    expect(await readdir(checkpointsDir)).toEqual(files);
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);

    await disk.free();
    const third = await store.writeCheckpoint(SESSION, checkpointInput(2));
    expect(third.version).toBe(3);
    await store.close();
    const reopened = await open();
    expect((await reopened.listCheckpoints(SESSION)).map((checkpoint) => checkpoint.version)).toEqual([1, 2, 3]);
    await reopened.close();
  });

  it('rejects a session.json rewrite and leaves session.json as it was', async () => {
    const store = await open();
    await store.createSession(sessionRecord(SESSION));
    const sessionFile = join(dataDir, 'sessions', SESSION, 'session.json');
    const before = await readFile(sessionFile, 'utf8');
    await disk.fill();

    const error = await storeErrorOf(() =>
      store.updateSession(SESSION, (record) => ({ ...record, updatedAt: 1_800_000_000_000 })),
    );
    expectDiskFull(error, sessionFile);
    expect(await readFile(sessionFile, 'utf8')).toBe(before);
    expect((await store.getSession(SESSION))!.updatedAt).toBe(1_700_000_000_000);
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);

    await disk.free();
    await store.updateSession(SESSION, (record) => ({ ...record, updatedAt: 1_800_000_000_000 }));
    await store.close();
    const reopened = await open();
    expect((await reopened.getSession(SESSION))!.updatedAt).toBe(1_800_000_000_000);
    await reopened.close();
  });

  it('a session manager rejects only the failed message, keeps its conversation as the log has it, and saves again once space is freed', async () => {
    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    const managerWarnings: StoreWarning[] = [];
    manager.on('store:warning', (warning) => managerWarnings.push(warning));
    const { sessionId } = await manager.getOrCreateSession({ type: 'feature', agentType: 'dev', featureId: 'f1' });
    await manager.addMessage(sessionId, { role: 'user', content: 'saved before the disk filled' });
    await disk.fill();

    const failure = await manager
      .addMessage(sessionId, { role: 'user', content: `lost to a full disk ${'z'.repeat(8000)}` })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as StoreError).code).toBe('DISK_FULL');
    expect((await manager.getRecentMessages(sessionId)).map((message) => message.content)).toEqual([
      'saved before the disk filled',
    ]);

    await disk.free();
    await manager.addMessage(sessionId, { role: 'user', content: 'saved after space came back' });
    await manager.close();
    // The search index is derived data: its writes fail on a full disk too, and only warn.
    for (const warning of managerWarnings)
      expect(['SESSION_RECORD_NOT_SAVED', 'INDEX_WRITE_FAILED']).toContain(warning.code);

    const reopened = await createSessionManager({ dataDir, preloadTokenizer: false });
    expect((await reopened.getRecentMessages(sessionId)).map((message) => message.content)).toEqual([
      'saved before the disk filled',
      'saved after space came back',
    ]);
    expect((await reopened.getSession(sessionId)).stats.totalMessages).toBe(2);
    await reopened.close();
  });
});

/** Faults at exact calls that a real small disk cannot produce on demand (EIO, a failed fsync, a cut-short write). */
describe('a failing disk (fault-injection variant, always runs)', () => {
  let disk: SmallDisk;
  let dataDir: string;
  let warnings: StoreWarning[];
  let store: SessionStore;
  const open = () => createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });
  const logPath = () => join(dataDir, 'sessions', SESSION, 'log.jsonl');
  const appendConcurrently = (label: string, count: number) =>
    Promise.allSettled(
      Array.from({ length: count }, (_, index) =>
        store.append(SESSION, [textEvent(`${label}-${index}`, `${label} ${index} ${'w'.repeat(200)}`)]),
      ),
    );

  beforeAll(() => {
    console.warn(
      'full-disk tests: RUNNING the fault-injection-only cases (EIO on fsync, truncate, rename; short writes).',
    );
  });
  beforeEach(async () => {
    disk = await faultInjectedDisk();
    dataDir = join(disk.dir, 'data');
    warnings = [];
    store = await open();
    await store.createSession(sessionRecord(SESSION));
  });
  afterEach(async () => {
    await store.close();
    await disk.dispose();
  });

  it('undoes a batch cut short by ENOSPC in the middle of a line, so the next append does not follow a partial line', async () => {
    const acknowledged = await store.append(SESSION, [textEvent('b0', 'first')]);
    diskFaults.freeBytes = 300;
    const results = await appendConcurrently('cut', 3);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(diskFaults.injected).toEqual([expect.objectContaining({ call: 'write', code: 'ENOSPC' })]);
    expect(await logLines(logPath())).toEqual(acknowledged);

    await disk.free();
    const [next] = await store.append(SESSION, [textEvent('b1', 'after')]);
    expect(next!.seq).toBe(1);
    expect(await logLines(logPath())).toEqual([...acknowledged, next]);
  });

  it('removes the complete lines of a batch whose fdatasync failed: rejected with STORE_IO, absent after a reopen', async () => {
    const acknowledged = await store.append(SESSION, [textEvent('b0', 'first')]);
    diskFaults.failNext('fsync', 'log.jsonl', 'EIO');
    const results = await appendConcurrently('unsynced', 3);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as StoreError;
      expect(error.code).toBe('STORE_IO');
      expect(error.data).toMatchObject({ sessionId: SESSION, file: logPath(), errno: 'EIO' });
    }
    expect(await logLines(logPath())).toEqual(acknowledged);

    const [next] = await store.append(SESSION, [textEvent('b1', 'after')]);
    expect(next!.seq).toBe(1);
    await store.close();
    store = await open();
    expect(await collect(store.readLog(SESSION))).toEqual([...acknowledged, next]);
  });

  it('refuses appends while a failed write cannot be undone, and repairs the log at the next append that can', async () => {
    const acknowledged = await store.append(SESSION, [textEvent('b0', 'first')]);
    diskFaults.failNext('fsync', 'log.jsonl', 'EIO');
    diskFaults.failNext('truncate', 'log.jsonl', 'EIO', 2);
    expect((await appendConcurrently('unsynced', 2)).every((result) => result.status === 'rejected')).toBe(true);
    // The undo failed: the rejected lines are still in the file, but never read as events.
    expect((await logLines(logPath())).length).toBe(3);
    expect(await collect(store.readLog(SESSION))).toEqual(acknowledged);

    const refused = await storeErrorOf(() => store.append(SESSION, [textEvent('b1', 'refused')]));
    expect(refused.code).toBe('STORE_IO');
    expect(refused.message).toContain('could not be removed');

    const [next] = await store.append(SESSION, [textEvent('b2', 'repaired')]);
    expect(next!.seq).toBe(1);
    expect(await logLines(logPath())).toEqual([...acknowledged, next]);
  });

  it('loads a session whose torn tail cannot be set aside on a full disk, and cuts the tail off at the next append', async () => {
    const acknowledged = await store.append(SESSION, [textEvent('b0', 'first')]);
    await store.close();
    await appendFile(logPath(), '{"type":"text_delta","conversationId":"main","blockId":"torn","del');
    // The disk fills up right as the torn tail is copied aside (store.lock, a new file too, got its block).
    diskFaults.failNext('write', 'log.jsonl.torn-', 'ENOSPC');

    store = await open();
    expect(await collect(store.readLog(SESSION))).toEqual(acknowledged);
    expect(warnings).toEqual([expect.objectContaining({ code: 'TORN_LOG_TAIL', sessionId: SESSION, file: logPath() })]);
    expect(warnings[0]!.message).toContain('could not be set aside');
    expect((await readdir(join(dataDir, 'sessions', SESSION))).filter((name) => name.includes('.torn-'))).toEqual([]);

    await disk.free();
    const [next] = await store.append(SESSION, [textEvent('b1', 'after')]);
    expect(next!.seq).toBe(1);
    expect(await logLines(logPath())).toEqual([...acknowledged, next]);
  });

  it('refuses to open the data folder on a full disk with DISK_FULL (store.lock is a new file), and opens once space is freed', async () => {
    await store.close();
    await disk.fill();
    const error = await storeErrorOf(open);
    expect(error.code).toBe('DISK_FULL');
    expect(error.data).toMatchObject({ file: join(dataDir, 'store.lock'), errno: 'ENOSPC' });
    expect(error.message).toContain('Free space');
    await disk.free();
    store = await open();
    expect(await store.lastSeq(SESSION)).toBe(-1);
  });

  it('rejects a checkpoint whose temp file fails to fsync, or whose folder fails to sync after the link, and leaves neither behind', async () => {
    const first = await store.writeCheckpoint(SESSION, checkpointInput(0));
    const checkpointsDir = join(dataDir, 'sessions', SESSION, 'checkpoints');
    const files = await readdir(checkpointsDir);

    diskFaults.failNext('fsync', join(dataDir, 'tmp'), 'EIO');
    expect((await storeErrorOf(() => store.writeCheckpoint(SESSION, checkpointInput(1)))).code).toBe('STORE_IO');
    diskFaults.failNext('fsync', checkpointsDir, 'EIO');
    const afterLink = await storeErrorOf(() => store.writeCheckpoint(SESSION, checkpointInput(1)));
    expect(afterLink.data).toMatchObject({ sessionId: SESSION, errno: 'EIO' });
    expect(diskFaults.injected.map((fault) => fault.call)).toEqual(['fsync', 'fsync']);

    expect(await readdir(checkpointsDir)).toEqual(files);
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
    expect(await store.listCheckpoints(SESSION)).toEqual([first]);
    expect((await store.writeCheckpoint(SESSION, checkpointInput(1))).version).toBe(2);
  });

  it('keeps session.json whole when the rename into place fails', async () => {
    const sessionFile = join(dataDir, 'sessions', SESSION, 'session.json');
    const before = await readFile(sessionFile, 'utf8');
    diskFaults.failNext('rename', 'session.json', 'EIO');
    const error = await storeErrorOf(() =>
      store.updateSession(SESSION, (record) => ({ ...record, updatedAt: 1_800_000_000_000 })),
    );
    expect(error).toMatchObject({ code: 'STORE_IO', data: { sessionId: SESSION, file: sessionFile, errno: 'EIO' } });
    expect(await readFile(sessionFile, 'utf8')).toBe(before);
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
  });

  it('reports a failed throttled session.json rewrite as a warning (no unhandled rejection) and writes it when it can', async () => {
    await store.close();
    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    const reported = new Promise<StoreWarning>((resolve) => manager.on('store:warning', resolve));
    diskFaults.failNext('rename', 'session.json', 'EIO');
    await manager.addMessage(SESSION, { role: 'user', content: 'saved in the log' });
    const warning = await reported;
    expect(warning).toMatchObject({ code: 'SESSION_RECORD_NOT_SAVED', sessionId: SESSION });
    expect(warning.message).toContain('Nothing is lost');
    // The retry is due after the failure's back-off; close writes it at once.
    await manager.close();
    const record = JSON.parse(await readFile(join(dataDir, 'sessions', SESSION, 'session.json'), 'utf8')) as {
      stats: { totalMessages: number };
    };
    expect(record.stats.totalMessages).toBe(1);
    store = await open();
  });
});
