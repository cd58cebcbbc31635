import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileStore, FORMAT_VERSION, type SessionRecord } from '../../../src/store/index.js';
import { runParley } from '../../helpers/run-parley.js';

let folder: string;
const dataDir = () => join(folder, '.parley');

function record(sessionId: string, activity: number, title: string): SessionRecord {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: 'scripted',
    agentProfileReference: 'profiles/dev.json',
    status: 'active',
    agentType: 'dev',
    scope: { kind: 'draft', role: 'dev' },
    title,
    createdAt: activity,
    updatedAt: activity,
    lastActivity: activity,
    settings: {},
    stats: { totalMessages: 1, totalTokens: 0, totalCompactions: 0 },
  };
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'parley-cli-find-'));
  const store = await createFileStore({ dataDir: dataDir(), onWarning: () => {} });
  for (let index = 0; index < 3; index++) {
    await store.createSession(record(`s${index}`, 1_700_000_000_000 + index * 1_000, `Session number ${index}`));
    await store.append(`s${index}`, [
      {
        type: 'block_complete',
        conversationId: 'main',
        at: 1_700_000_000_000 + index,
        block: { type: 'user_message', id: `u${index}`, createdAt: 1, content: `question ${index} about the ledger` },
      },
    ]);
  }
  await store.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('parley sessions and parley search', () => {
  it('prints a page, renames, tags and pins, and searches the messages', { timeout: 180_000 }, async () => {
    const run = (...args: string[]) => runParley(['--data-dir', dataDir(), ...args], { cwd: folder });
    const page = await run('sessions', '--limit', '2');
    expect(page.code).toBe(0);
    expect(
      page.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('  ')[0]),
    ).toEqual(['s2', 's1']);
    expect(page.stderr).toMatch(/More sessions: parley sessions --cursor \S+/);

    expect((await run('sessions', 'rename', 's0', 'The', 'ledger', 'audit')).stdout).toContain('s0  The ledger audit');
    expect((await run('sessions', 'tag', 's0', 'audit', 'q3')).stdout).toContain('#audit #q3');
    expect((await run('sessions', 'pin', 's0')).stdout).toContain('[pinned]');
    const pinned = await run('sessions', '--limit', '1', '--json');
    expect(JSON.parse(pinned.stdout)).toMatchObject([{ sessionId: 's0', title: 'The ledger audit', pinned: true }]);
    const bad = await run('sessions', 'tag', 's0', 'not ok!');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/tag/);

    const found = await run('search', 'LEDGER', '1');
    expect(found.code).toBe(0);
    expect(found.stdout).toMatch(/^s1 {2}seq 0 {2}user/);
    expect(found.stdout).toContain('question 1 about the ledger');
    const empty = await run('search', '');
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/empty/);
  });
});
