import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../src/backends/index.js';
import type { ConversationBlock } from '../../src/conversation/index.js';
import { createDraftService, DraftSessionSchema, type DraftService } from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, type SessionStore } from '../../src/store/index.js';
import { closeAll, gate, harness, nativeScripted, tempProject, until, writeRole } from './helpers.js';

afterEach(closeAll);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A "process": a file store over the project's data folder, a SessionManager and a DraftService.
 * `crash()` drops it without shutting the service down (the turn in flight is simply never
 * finished) and only releases the store's lock, as a dead process's stale lock would be taken over.
 */
async function processOver(project: { root: string; dataDir: string }, backend: AgentBackend) {
  const store: SessionStore = await createFileStore({ dataDir: project.dataDir, onWarning: () => undefined });
  const manager: SessionManager = await createSessionManager({ store });
  const service: DraftService = await createDraftService({
    manager,
    projectRoot: project.root,
    dataDir: project.dataDir,
    backendFor: () => backend,
  });
  return { store, manager, service, crash: () => store.close() };
}

function shape(blocks: readonly ConversationBlock[]): string[] {
  return blocks.map((block) =>
    block.type === 'system'
      ? `system:${block.subtype}`
      : block.type === 'user_message' || block.type === 'assistant_text'
        ? `${block.type}:${block.content}`
        : block.type,
  );
}

async function draftJson(taskDir: string) {
  return DraftSessionSchema.parse(JSON.parse(await fs.readFile(path.join(taskDir, 'draft.json'), 'utf8')));
}

describe('crash recovery', () => {
  it('after a crash mid-turn the draft resumes: the cut turn shows as interrupted, nothing acknowledged is lost, cost stays right', async () => {
    const project = await tempProject();
    cleanups.push(project.cleanup);
    const never = gate();
    const before = createScriptedBackend({
      idPrefix: 'first-process',
      turns: [
        [step.text('First answer.'), step.usage({ inputTokens: 100, outputTokens: 5 }), step.cost(0.1)],
        [
          step.text('Working on it'),
          step.tool('Read', { path: 'a.ts' }, 'contents'),
          step.wait(never.promise),
          step.text('never'),
        ],
      ],
    });
    const first = await processOver(project, before);
    const [info] = await first.service.listProjects();
    const task = await first.service.createTask({ project: info!.name, title: 'Crashy task' });
    const { sessionId } = await first.service.draft({
      channelId: 'tui',
      role: 'dev',
      project: info!.name,
      task: task.slug,
    });
    await first.service.submitPrompt({ channelId: 'tui', content: 'first question' });
    await first.service.settled({ channelId: 'tui' });
    const shown: string[] = [];
    first.service.on('channel_message', ({ event }) => {
      if (event.type === 'block_complete' && event.block.type === 'tool_result') shown.push('tool_result');
    });
    const acknowledged = await first.service.submitPrompt({ channelId: 'tui', content: 'second question' });
    await until(() => shown.length === 1, 'the tool result to be stored');
    await first.crash();

    const after = createScriptedBackend({
      idPrefix: 'second-process',
      turns: [
        [
          step.text('Picking up where we left off.'),
          step.usage({ inputTokens: 300, outputTokens: 9 }),
          step.cost(0.05),
        ],
      ],
    });
    const second = await processOver(project, after);
    cleanups.push(async () => {
      await second.service.close();
      await second.manager.close();
      await second.store.close();
    });
    // Before recovery the draft is the store's, run by nobody: shown, its cut turn not counted as running.
    const stored = await second.service.getDraftStatus({ channelId: 'tui' });
    expect(stored).toMatchObject({ active: true, session: { sessionId, turnCount: 1, turnRunning: false } });
    expect(stored.session!.runBy).toBeUndefined();
    expect(await second.service.recover()).toEqual({ recovered: 1, failed: [] });

    const conversation = await second.manager.loadConversation(sessionId);
    expect(shape(conversation.blocks)).toEqual([
      'user_message:first question',
      'assistant_text:First answer.',
      'user_message:second question',
      'assistant_text:Working on it',
      'tool_use',
      'tool_result',
      'system:interrupted',
    ]);
    // The acknowledged message is where submit_prompt said it was.
    expect(conversation.blocks[2]!.seq).toBe((acknowledged as { seq: number }).seq);
    const status = (await second.service.getDraftStatus({ channelId: 'tui' })).session!;
    expect(status).toMatchObject({
      sessionId,
      role: 'dev',
      turnCount: 2,
      cumulativeCostUsd: 0.1,
      runBy: { here: true },
    });
    expect(await draftJson(task.taskDir)).toMatchObject({ status: 'active', turnCount: 2, cumulativeCostUsd: 0.1 });

    // The next prompt resumes the same conversation.
    const next = await second.service.submitPrompt({ channelId: 'tui', content: 'are you still there?' });
    expect(next).toMatchObject({ mode: 'draft', sessionId });
    await second.service.settled({ channelId: 'tui' });
    const resumed = await second.manager.loadConversation(sessionId);
    expect(shape(resumed.blocks).slice(-2)).toEqual([
      'user_message:are you still there?',
      'assistant_text:Picking up where we left off.',
    ]);
    expect(after.calls[0]!.prompt).toContain('are you still there?');
    const saved = await draftJson(task.taskDir);
    expect(saved).toMatchObject({ turnCount: 3, lastInputTokens: 300 });
    expect(saved.cumulativeCostUsd).toBeCloseTo(0.15, 10);
    // Recovering again finds nothing new.
    expect(await second.service.recover()).toEqual({ recovered: 0, failed: [] });
    // `never` stays closed: the first process is dead, its turn never resumes.
  });

  it('a native draft resumes by its native session id after a restart', async () => {
    const project = await tempProject();
    cleanups.push(project.cleanup);
    const firstInner = createScriptedBackend({ idPrefix: 'n1', turns: [[step.text('noted')]] });
    const first = await processOver(project, nativeScripted(firstInner, { nativeId: () => 'native-abc' }));
    const [info] = await first.service.listProjects();
    const task = await first.service.createTask({ project: info!.name, title: 'Native' });
    const { sessionId } = await first.service.draft({
      channelId: 'tui',
      role: 'dev',
      project: info!.name,
      task: task.slug,
    });
    await first.service.submitPrompt({ channelId: 'tui', content: 'remember PINEAPPLE' });
    await first.service.settled({ channelId: 'tui' });
    expect(await draftJson(task.taskDir)).toMatchObject({ nativeSessionId: 'native-abc', nativeStarted: true });
    await first.crash();

    const secondInner = createScriptedBackend({ idPrefix: 'n2', turns: [[step.text('PINEAPPLE')]] });
    const second = await processOver(project, nativeScripted(secondInner));
    cleanups.push(async () => {
      await second.service.close();
      await second.manager.close();
      await second.store.close();
    });
    expect((await second.service.recover()).recovered).toBe(1);
    await second.service.submitPrompt({ channelId: 'tui', content: 'what word?' });
    await second.service.settled({ channelId: 'tui' });
    expect(secondInner.calls[0]).toMatchObject({
      sessionId,
      nativeSessionId: 'native-abc',
      isNewSession: false,
      prompt: 'what word?',
    });
  });

  it('graceful close ends the running turn as aborted and leaves the draft for recover', async () => {
    const hold = gate();
    const backend = createScriptedBackend({
      idPrefix: 'g1',
      turns: [[step.text('thinking aloud'), step.wait(hold.promise)]],
    });
    const h = await harness({ store: 'file', backends: { default: backend } });
    const [info] = await h.service.listProjects();
    const task = await h.service.createTask({ project: info!.name, title: 'Graceful' });
    const { sessionId } = await h.service.draft({
      channelId: 'tui',
      role: 'dev',
      project: info!.name,
      task: task.slug,
    });
    const streamed = new Promise<void>((resolve) =>
      h.service.on('channel_message', ({ event }) => {
        if (event.type === 'block_complete' && event.block.type === 'assistant_text') resolve();
      }),
    );
    await h.service.submitPrompt({ channelId: 'tui', content: 'go' });
    await streamed;
    await h.service.close();
    hold.open();
    expect(shape((await h.manager.loadConversation(sessionId)).blocks)).toEqual([
      'user_message:go',
      'assistant_text:thinking aloud',
      'system:aborted',
    ]);
    expect(await draftJson(task.taskDir)).toMatchObject({ status: 'active', turnCount: 1 });
    await expect(h.service.submitPrompt({ channelId: 'tui', content: 'x' })).rejects.toMatchObject({
      code: 'SERVICE_CLOSED',
    });

    const again = await createDraftService({
      manager: h.manager,
      projectRoot: h.root,
      dataDir: h.dataDir,
      backendFor: () => createScriptedBackend({ idPrefix: 'g2' }),
    });
    expect(await again.recover()).toEqual({ recovered: 1, failed: [] });
    // An aborted turn was already closed: nothing to repair.
    expect(shape((await h.manager.loadConversation(sessionId)).blocks).at(-1)).toBe('system:aborted');
    await again.close();
  });

  it('drafts that cannot be recovered are reported, and never crash recovery', async () => {
    const h = await harness({ store: 'file' });
    const [info] = await h.service.listProjects();
    const gone = await h.service.createTask({ project: info!.name, title: 'Session gone' });
    const broken = await h.service.createTask({ project: info!.name, title: 'Broken role' });
    const corrupt = await h.service.createTask({ project: info!.name, title: 'Corrupt file' });
    const fine = await h.service.createTask({ project: info!.name, title: 'Fine' });
    await writeRole(h.dataDir, 'fragile.md', '---\ndescription: ok for now\n---\nBody\n');
    await h.service.draft({ channelId: 'a', role: 'dev', project: info!.name, task: gone.slug });
    const fragile = await h.service.draft({ channelId: 'b', role: 'fragile', project: info!.name, task: broken.slug });
    await h.service.draft({ channelId: 'c', role: 'dev', project: info!.name, task: fine.slug });

    // The "restart": state dropped; meanwhile one session's data vanished, a role file broke, a draft.json was damaged.
    const goneDraft = await draftJson(gone.taskDir);
    await fs.writeFile(
      path.join(gone.taskDir, 'draft.json'),
      JSON.stringify({ ...goneDraft, sessionId: 'no-such-session' }),
    );
    await writeRole(h.dataDir, 'fragile.md', '---\npermissions: nope\n---\n');
    await fs.writeFile(path.join(corrupt.taskDir, 'draft.json'), '{"formatVersion": 1, "sessionId":');
    const fresh = await createDraftService({
      manager: h.manager,
      projectRoot: h.root,
      dataDir: h.dataDir,
      backendFor: () => createScriptedBackend({ idPrefix: 'r2' }),
    });
    try {
      const result = await fresh.recover();
      expect(result.recovered).toBe(1);
      expect(result.failed).toEqual(
        expect.arrayContaining([
          { sessionId: 'no-such-session', reason: expect.stringContaining('no-such-session') },
          { sessionId: fragile.sessionId, reason: expect.stringContaining('fragile.md') },
          { sessionId: path.join(corrupt.taskDir, 'draft.json'), reason: expect.stringContaining('draft.json') },
        ]),
      );
      expect(result.failed).toHaveLength(3);
      expect((await fresh.getDraftStatus({ channelId: 'c' })).active).toBe(true);
      expect((await fresh.getDraftStatus({ channelId: 'a' })).active).toBe(false);
    } finally {
      await fresh.close();
    }
  });
});
