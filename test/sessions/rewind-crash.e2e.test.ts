/**
 * A rewind of both the conversation and the files, SIGKILLed at each step: the restart does what
 * `parley serve` does at start (open the manager, `fileSnapshots.recover()`), and the session and
 * the tree are then both at the point. Never half: never the files back and the conversation not.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleVictim, runVictim } from '../helpers/victim-process.js';
import type { AgentBackend } from '../../src/backends/index.js';
import { MAIN_CONVERSATION, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';

const FILES = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt'];

/** A native-style back end whose own tools rewrite every file: turn N leaves "turn N" in each. */
function fileWritingCli(root: string): AgentBackend {
  let turn = 0;
  return {
    describe: () => ({ name: 'file-writer', continuity: 'native', supportsTools: true }),
    execute() {
      const current = ++turn;
      async function* events(): AsyncIterable<UnsequencedEvent> {
        for (const file of FILES) await fs.writeFile(path.join(root, file), `turn ${current}\n`);
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
          metadata: { turnComplete: true, nativeSessionId: `native-${current}` },
          at: now,
        };
      }
      return { events: events() };
    },
  } as unknown as AgentBackend;
}

describe('a rewind of conversation and files killed at each step', () => {
  let folder: string;
  let script: string;

  beforeAll(async () => {
    folder = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-rewind-crash-'));
    // One bundle started with plain node: no tsx start-up per victim.
    script = path.join(folder, 'rewind-victim.mjs');
    await bundleVictim(path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/rewind-victim.ts'), script);
  });
  afterAll(async () => {
    await fs.rm(folder, { recursive: true, force: true });
  });

  /** A project whose session wrote every file in two turns; the seq at the end of turn 1. */
  async function twoTurns(name: string): Promise<{ root: string; sessionId: string; afterFirst: number }> {
    const root = path.join(folder, name);
    await fs.mkdir(root, { recursive: true });
    for (const file of FILES) await fs.writeFile(path.join(root, file), 'before\n');
    const manager = await open(root);
    const { sessionId } = await manager.createSession({
      scope: { kind: 'workflow', harness: 'test', agent: 'dev' },
      agentType: 'dev',
      backend: 'file-writer',
    });
    const backend = fileWritingCli(root);
    let afterFirst = -1;
    for (const prompt of ['one', 'two']) {
      const turn = await runTurn(manager, sessionId, { backend, prompt });
      for await (const event of turn.events) void event;
      if (afterFirst === -1) afterFirst = (await manager.loadConversation(sessionId)).lastSeq;
    }
    await manager.close();
    return { root, sessionId, afterFirst };
  }

  function open(root: string): Promise<SessionManager> {
    return createSessionManager({ dataDir: path.join(root, '.parley'), projectRoot: root, fileSnapshots: {} });
  }

  async function answers(manager: SessionManager, sessionId: string): Promise<string[]> {
    return (await manager.loadConversation(sessionId)).blocks
      .filter((block) => block.type === 'assistant_text')
      .map((block) => (block as { content: string }).content);
  }

  for (const stopAt of ['file:1', 'file:3', 'record', 'none']) {
    it(`killed at ${stopAt}: after the restart the files and the conversation are both at the point`, async () => {
      const { root, sessionId, afterFirst } = await twoTurns(stopAt.replace(':', '-'));
      const run = await runVictim(script, [root, sessionId, String(afterFirst), stopAt]);
      expect(run.signal).toBe(stopAt === 'none' ? null : 'SIGKILL');
      expect(run.stdout).toContain(stopAt === 'none' ? 'finished' : 'stopped');

      // What `parley serve` does at start, before anything else touches the files.
      const manager = await open(root);
      try {
        await manager.fileSnapshots!.recover();
        for (const file of FILES) expect(await fs.readFile(path.join(root, file), 'utf8')).toBe('turn 1\n');
        expect(await answers(manager, sessionId)).toEqual(['wrote 1']);
        expect((await manager.getActiveBranch(sessionId)).tip).toBe(afterFirst);
        // Nothing was deleted: turn 2 is the branch that was left.
        expect((await manager.listBranches(sessionId)).length).toBe(2);
        expect(await fs.readdir(path.join(root, '.parley', 'file-snapshots'))).not.toContain('restore-intent.json');
      } finally {
        await manager.close();
      }
    });
  }
});
