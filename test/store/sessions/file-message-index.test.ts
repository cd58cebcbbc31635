import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessageIndex, itemOf } from '../../../src/store/sessions/file-message-index.js';

describe('the file store search index: segments on disk and a journal', () => {
  let folder: string;
  let failures: unknown[];
  const open = (mergeAt = 5) =>
    new MessageIndex({
      path: join(folder, 'index', 'messages.jsonl'),
      tmpDir: join(folder, 'tmp'),
      onWriteFailure: (error) => failures.push(error),
      mergeAt,
    });
  const item = (session: number, seq: number, text: string) =>
    itemOf(`s${session}`, seq, { blockId: `b${session}-${seq}`, conversationId: 'main', role: 'user', text, at: seq });
  const segments = () => readdirSync(join(folder, 'index')).filter((name) => name.endsWith('.segment'));

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'parley-message-index-'));
    mkdirSync(join(folder, 'index'));
    mkdirSync(join(folder, 'tmp'));
    failures = [];
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('merges what was added into a new segment, and a fresh index finds old and new messages alike', async () => {
    const index = open();
    expect(await index.load()).toBe(false);
    await index.rebuild([
      item(0, 0, 'alpha invoice'),
      item(1, 0, 'beta invoice'),
      item(3, 0, 'filler'),
      item(3, 1, 'filler'),
      item(3, 2, 'filler'),
    ]);
    expect(segments()).toEqual(['messages-1.segment']);
    for (let seq = 1; seq <= 6; seq++) index.add([item(0, seq, `gamma invoice number${seq}`)]);
    await index.settled();
    // Six added with a merge at five: the second generation holds ten, the journal what came after.
    expect(segments()).toEqual(['messages-2.segment']);
    index.add([item(2, 0, 'delta invoice')]);
    expect(index.search(['invoice'], 3).map((hit) => hit.blockId)).toEqual(['b2-0', 'b0-6', 'b0-5']);
    await index.close();

    const fresh = open();
    expect(await fresh.load()).toBe(true);
    expect(fresh.search(['invoice'], 20).map((hit) => hit.blockId)).toEqual([
      'b2-0',
      'b0-6',
      'b0-5',
      'b0-4',
      'b0-3',
      'b0-2',
      'b0-1',
      'b1-0',
      'b0-0',
    ]);
    expect(fresh.search(['gamma', 'number3'], 20).map((hit) => hit.blockId)).toEqual(['b0-3']);
    expect(fresh.search(['alpha'], 20)[0]).toMatchObject({ sessionId: 's0', seq: 0, snippet: 'alpha invoice' });
    expect(fresh.search(['nowhere'], 20)).toEqual([]);
    expect(fresh.indexedSeq('s0')).toBe(6);
    expect(fresh.indexedSeq('s9')).toBe(-1);
    // Already held: skipped, so a catch-up from the logs never doubles a message.
    fresh.add([item(0, 4, 'gamma invoice number4')]);
    expect(fresh.search(['number4'], 20)).toHaveLength(1);
    await fresh.close();
    expect(failures).toEqual([]);
  });

  it('a crash between a merge and the journal rewrite leaves messages in both: each is found once', async () => {
    const index = open(100);
    await index.load();
    await index.rebuild([item(0, 0, 'kiwi')]);
    const journal = join(folder, 'index', 'messages.jsonl');
    index.add([item(0, 1, 'kiwi two'), item(1, 0, 'kiwi three')]);
    await index.close();
    const journalWithItems = readFileSync(journal, 'utf8');
    // The next generation holds all three (as a merge would write it) while the journal still has two of them.
    const merging = open(1);
    await merging.load();
    await merging.settled();
    await merging.close();
    expect(segments()).toEqual(['messages-1.segment']);
    expect(readFileSync(journal, 'utf8')).not.toContain('kiwi');
    writeFileSync(journal, journalWithItems);
    const reopened = open();
    expect(await reopened.load()).toBe(true);
    expect(reopened.search(['kiwi'], 20).map((hit) => hit.blockId)).toEqual(['b1-0', 'b0-1', 'b0-0']);
    await reopened.close();
  });

  it('a rebuild of fewer messages than a merge takes keeps them in the journal alone', async () => {
    const index = open();
    await index.load();
    await index.rebuild([item(0, 0, 'pear')]);
    expect(segments()).toEqual([]);
    await index.close();
    const reopened = open();
    expect(await reopened.load()).toBe(true);
    expect(reopened.search(['pear'], 20).map((hit) => hit.blockId)).toEqual(['b0-0']);
    await reopened.close();
  });

  it('a damaged segment makes the load fail, so the index is rebuilt from the logs', async () => {
    const index = open(1);
    await index.load();
    await index.rebuild([item(0, 0, 'plum')]);
    await index.close();
    const path = join(folder, 'index', 'messages-1.segment');
    const whole = readFileSync(path);
    writeFileSync(path, whole.subarray(0, whole.length - 3));
    expect(await open().load()).toBe(false);
    writeFileSync(path, 'not a segment');
    expect(await open().load()).toBe(false);
  });

  it('an older generation left by a crash is removed at load, and the newest is read', async () => {
    const index = open(1);
    await index.load();
    await index.rebuild([item(0, 0, 'fig')]);
    copyFileSync(join(folder, 'index', 'messages-1.segment'), join(folder, 'tmp', 'old'));
    index.add([item(0, 1, 'fig again')]);
    await index.close();
    copyFileSync(join(folder, 'tmp', 'old'), join(folder, 'index', 'messages-1.segment'));
    expect(segments().sort()).toEqual(['messages-1.segment', 'messages-2.segment']);
    const reopened = open();
    expect(await reopened.load()).toBe(true);
    expect(segments()).toEqual(['messages-2.segment']);
    expect(reopened.search(['fig'], 20).map((hit) => hit.blockId)).toEqual(['b0-1', 'b0-0']);
    await reopened.close();
  });
});
