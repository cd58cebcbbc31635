import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentBackend } from '../../src/backends/index.js';
import { isParleyError, MAIN_CONVERSATION, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A native-style back end whose own tools write `notes.txt`: turn N leaves "turn N". */
function fileWritingCli(root: string): AgentBackend {
  let turn = 0;
  return {
    describe: () => ({ name: 'file-writer', continuity: 'native', supportsTools: true }),
    execute() {
      const current = ++turn;
      async function* events(): AsyncIterable<UnsequencedEvent> {
        await fs.writeFile(path.join(root, 'notes.txt'), `turn ${current}\n`);
        const now = Date.now();
        yield {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          block: { id: `text-${current}`, type: 'assistant_text', content: `wrote ${current}`, createdAt: now },
          at: now,
        };
        yield {
          type: 'metadata_update',
          conversationId: MAIN_CONVERSATION,
          metadata: { turnComplete: true, nativeSessionId: 'native-1' },
          at: now,
        };
      }
      return { events: events() };
    },
  } as unknown as AgentBackend;
}

async function draftWithTwoTurns(): Promise<{
  manager: SessionManager;
  root: string;
  sessionId: string;
  afterFirst: number;
}> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-rewind-files-'));
  cleanups.push(() => fs.rm(root, { recursive: true, force: true }));
  await fs.writeFile(path.join(root, 'notes.txt'), 'before\n');
  execFileSync('git', ['init', '--quiet'], { cwd: root });
  const manager = await createSessionManager({
    store: createMemoryStore(),
    projectRoot: root,
    dataDir: path.join(root, '.parley'),
    fileSnapshots: {},
  });
  cleanups.push(() => manager.close());
  const { sessionId } = await manager.createSession({
    scope: { kind: 'workflow', harness: 'test', agent: 'dev' },
    agentType: 'dev',
  });
  const backend = fileWritingCli(root);
  let afterFirst = -1;
  for (const prompt of ['one', 'two']) {
    const turn = await runTurn(manager, sessionId, { backend, prompt });
    for await (const event of turn.events) void event;
    if (afterFirst === -1) afterFirst = (await manager.loadConversation(sessionId)).lastSeq;
  }
  return { manager, root, sessionId, afterFirst };
}

describe('rewind with the manager’s own file snapshots', () => {
  it('restores both the conversation and the files to the end of the first turn', async () => {
    const { manager, root, sessionId, afterFirst } = await draftWithTwoTurns();
    expect(await fs.readFile(path.join(root, 'notes.txt'), 'utf8')).toBe('turn 2\n');

    const result = await manager.rewind(sessionId, { to: afterFirst, restore: 'both' });

    expect(result.seq).toBe(afterFirst);
    expect(await fs.readFile(path.join(root, 'notes.txt'), 'utf8')).toBe('turn 1\n');
    const texts = (await manager.loadConversation(sessionId)).blocks
      .filter((block) => block.type === 'assistant_text')
      .map((block) => (block as { content: string }).content);
    expect(texts).toEqual(['wrote 1']);
  });

  it('refuses to overwrite a file the user changed since, and changes nothing', async () => {
    const { manager, root, sessionId, afterFirst } = await draftWithTwoTurns();
    await fs.writeFile(path.join(root, 'notes.txt'), 'my own edit\n');
    const before = (await manager.getSession(sessionId)).head;

    const error = await manager
      .rewind(sessionId, { to: afterFirst, restore: 'both' })
      .catch((caught: unknown) => caught);

    expect(isParleyError(error) && error.code).toBe('RESTORE_CONFLICT');
    expect(String((error as Error).message)).toContain('notes.txt');
    expect(await fs.readFile(path.join(root, 'notes.txt'), 'utf8')).toBe('my own edit\n');
    expect((await manager.getSession(sessionId)).head).toBe(before);
    const texts = (await manager.loadConversation(sessionId)).blocks.filter((block) => block.type === 'assistant_text');
    expect(texts).toHaveLength(2);
  });
});
