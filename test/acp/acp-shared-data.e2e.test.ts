import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { createFileStore } from '../../src/store/index.js';
import { agentText, Editor, spawnParleyAcp, type EditorOptions } from './acp-process.js';

/**
 * Sessions of one data folder, seen from more than one `parley acp` process: a session exists
 * from `session/new` on, for every process.
 */

let project: string;
const editors: Editor[] = [];

beforeEach(async () => {
  project = await mkdtemp(join(tmpdir(), 'parley-acp-shared-'));
});

afterEach(async () => {
  for (const editor of editors.splice(0)) await editor.close();
  await rm(project, { recursive: true, force: true });
});

async function startEditor(script: unknown, options: EditorOptions = {}): Promise<Editor> {
  const scriptPath = join(project, `script-${editors.length}.json`);
  await writeFile(scriptPath, JSON.stringify(script));
  const editor = new Editor(spawnParleyAcp({ cwd: project, env: { PARLEY_SCRIPTED_SCRIPT: scriptPath } }), options);
  editors.push(editor);
  await editor.initialize();
  return editor;
}

describe('parley acp: a session not prompted yet', () => {
  it('is listed at once, and another process loads it with the mode chosen for it, then the first prompt names it', async () => {
    const first = await startEditor({ turns: [] });
    const { sessionId } = await first.agent.request('session/new', { cwd: project, mcpServers: [] });
    await first.agent.request('session/set_mode', { sessionId, modeId: 'dev' });
    const listed = await first.agent.request('session/list', { cwd: project });
    expect(listed.sessions.map((session) => session.sessionId)).toEqual([sessionId]);
    await first.close();
    editors.splice(editors.indexOf(first), 1);

    const second = await startEditor({ turns: [[{ type: 'text', text: 'Later answer.' }]] });
    expect((await second.agent.request('session/list', { cwd: project })).sessions).toEqual([
      expect.objectContaining({ sessionId, cwd: resolve(project) }),
    ]);
    const loaded = await second.agent.request('session/load', { sessionId, cwd: project, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe('dev');
    const { stopReason } = await second.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Asked later' }],
    });
    expect(stopReason).toBe('end_turn');
    expect((await second.agent.request('session/list', { cwd: project })).sessions).toEqual([
      expect.objectContaining({ sessionId, title: 'Asked later' }),
    ]);
    // Two processes, one after the other: their start-up is most of the time.
  }, 120_000);
});

describe('parley acp: two processes on one data folder', () => {
  it('both work, prompting at once: afterwards every prompt and its answer are in the store exactly once', async () => {
    const rounds = 4;
    const answers = (label: string): unknown => ({
      turns: Array.from({ length: rounds * 2 }, (_, index) => [{ type: 'text', text: `${label} answer ${index}.` }]),
    });
    const first = await startEditor(answers('first'));
    const one = await first.agent.request('session/new', { cwd: project, mcpServers: [] });
    const second = await startEditor(answers('second'));
    const two = await second.agent.request('session/new', { cwd: project, mcpServers: [] });
    // Each sees the other's session.
    const listed = await second.agent.request('session/list', { cwd: project });
    expect(listed.sessions.map((session) => session.sessionId).sort()).toEqual([one.sessionId, two.sessionId].sort());

    // Both processes write at once, each round.
    for (let round = 0; round < rounds; round += 1) {
      const batch = [
        first.agent.request('session/prompt', {
          sessionId: one.sessionId,
          prompt: [{ type: 'text', text: `first prompt ${round}` }],
        }),
        second.agent.request('session/prompt', {
          sessionId: two.sessionId,
          prompt: [{ type: 'text', text: `second prompt ${round}` }],
        }),
      ];
      expect((await Promise.all(batch)).map((answer) => answer.stopReason)).toEqual(['end_turn', 'end_turn']);
    }
    // The second process goes on with the first's session; the first process shows its answer too.
    await second.agent.request('session/load', { sessionId: one.sessionId, cwd: project, mcpServers: [] });
    const seen = first.updatesOf(one.sessionId).length;
    await second.agent.request('session/prompt', {
      sessionId: one.sessionId,
      prompt: [{ type: 'text', text: 'first session, from the second process' }],
    });
    await first.waitFor(() => agentText(first.updatesOf(one.sessionId).slice(seen)) === 'second answer 4.');
    for (const editor of editors.splice(0)) expect(await editor.close()).toBe(0);

    const store = await createFileStore({ dataDir: join(project, '.parley') });
    try {
      for (const [sessionId, expected] of [
        [
          one.sessionId,
          [
            ...Array.from({ length: rounds }, (_, round) => `first prompt ${round}`),
            'first session, from the second process',
          ],
        ],
        [two.sessionId, Array.from({ length: rounds }, (_, round) => `second prompt ${round}`)],
      ] as const) {
        const events: StreamEvent[] = [];
        for await (const event of store.readLog(sessionId)) events.push(event);
        expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
        const state = applyEvents(emptyConversation(sessionId), events);
        const said = state.blocks.flatMap((block) => (block.type === 'user_message' ? [block.content] : []));
        expect(said).toEqual(expected);
        const answered = state.blocks.filter((block) => block.type === 'assistant_text');
        expect(answered).toHaveLength(expected.length);
        expect(new Set(state.blocks.map((block) => block.id)).size).toBe(state.blocks.length);
      }
    } finally {
      await store.close();
    }
    // Two processes and ten turns on a shared machine.
  }, 120_000);
});
