import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createSessionManager } from '../../../src/sessions/index.js';
import { importTranscripts } from '../../../src/sessions/import/index.js';
import { materializeImportedSession } from '../../../src/sessions/import/materialize.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../../src/store/index.js';
import { generateClaudeCodeTranscript } from '../../fixtures/transcripts/generate.js';

const NATIVE_ID = '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b';
const NOW = () => 1_800_000_000_000;

async function log(store: SessionStore, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return events;
}

/** The transcript imported the eager way (every event built and appended at import): what a deferred session must read as. */
async function eagerLog(path: string): Promise<StreamEvent[]> {
  const store = createMemoryStore();
  const result = await importTranscripts(path, { store, now: NOW });
  return log(store, result.sessions[0]!.sessionId);
}

let work: string;
let transcript: string;
beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-large-import-'));
  await fs.mkdir(join(work, 'project'));
  transcript = join(work, 'project', `${NATIVE_ID}.jsonl`);
  // About 1,300 records: many of the small batches below.
  await generateClaudeCodeTranscript(transcript, { targetBytes: 3_000_000, seed: 17 });
});
afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('reading a large deferred import a page at a time', () => {
  it('get_events pages of a session not built yet are the pages of the log a full build gives', async () => {
    const expected = await eagerLog(transcript);
    const dataDir = join(work, 'data');
    const store = await createFileStore({ dataDir, onWarning: () => {} });
    const { sessions } = await importTranscripts(transcript, { store, now: NOW });
    const sessionId = sessions[0]!.sessionId;
    await store.close();
    expect(expected.length).toBeGreaterThan(1000);

    // A fresh manager: the session is neither cached nor built; its first read is a page.
    const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
    const pages: StreamEvent[][] = [];
    let afterSeq = -1;
    for (;;) {
      const page = await manager.getEvents(sessionId, { afterSeq, limit: 257 });
      if (page.length === 0) break;
      pages.push(page);
      afterSeq = page.at(-1)!.seq;
    }
    expect(pages.slice(0, -1).every((page) => page.length === 257)).toBe(true);
    expect(pages.flat()).toEqual(expected);
    expect(await manager.getEvents(sessionId, { afterSeq: 500, limit: 3 })).toEqual(expected.slice(501, 504));
    await manager.close();
  });

  it('a build in batches of a few events writes the same log as one in the default batches, and as the eager import', async () => {
    const expected = await eagerLog(transcript);
    const logs: StreamEvent[][] = [];
    for (const batch of [undefined, { events: 5, inputBytes: 4096 }]) {
      const store = await createFileStore({ dataDir: join(work, `data-${logs.length}`), onWarning: () => {} });
      const { sessions } = await importTranscripts(transcript, { store, now: NOW });
      const sessionId = sessions[0]!.sessionId;
      const built = await materializeImportedSession(store, sessionId, {
        keepEvents: true,
        ...(batch !== undefined ? { batch } : {}),
      });
      expect(built.built).toBe(true);
      const written = await log(store, sessionId);
      // A copy under KEEP_EVENTS_MAX_BYTES hands its events to the reader that asked: the log as written.
      expect(built.events).toEqual(written);
      logs.push(written);
      await store.close();
    }
    expect(logs[1]).toEqual(logs[0]);
    expect(logs[0]).toEqual(expected);
  });
});
