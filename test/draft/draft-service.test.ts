import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { isParleyError, type UnsequencedEvent } from '../../src/conversation/index.js';
import { createDraftService, DraftSessionSchema, type DraftService } from '../../src/draft/index.js';
import { createSessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { closeAll, gate, harness, nativeScripted, tempProject, writeRole } from './helpers.js';

afterEach(closeAll);

async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  return error as Error;
}

async function draftOnNewTask(service: DraftService, channelId: string, role = 'dev', title = 'Add login') {
  const [project] = await service.listProjects();
  const task = await service.createTask({ project: project!.name, title });
  const drafted = await service.draft({ channelId, role, project: project!.name, task: task.slug });
  return { project: project!, task, drafted };
}

async function readDraftJson(taskDir: string) {
  return DraftSessionSchema.parse(JSON.parse(await fs.readFile(path.join(taskDir, 'draft.json'), 'utf8')));
}

describe('drafts: lifecycle', () => {
  it('draft registers the agent, persists draft.json, and undraft closes it with a summary', async () => {
    const { service, recorder } = await harness();
    const { project, task, drafted } = await draftOnNewTask(service, 'tui-1');
    expect(drafted).toEqual({ sessionId: expect.any(String), taskSlug: 'add-login', project: project.name });

    const onDisk = await readDraftJson(task.taskDir);
    expect(onDisk).toMatchObject({
      sessionId: drafted.sessionId,
      role: 'dev',
      taskSlug: 'add-login',
      channelId: 'tui-1',
      status: 'active',
      turnCount: 0,
      backend: 'scripted',
      continuity: 'managed',
    });
    expect(await service.listAgents({ channelId: 'tui-1' })).toEqual([
      expect.objectContaining({ agentId: drafted.sessionId, kind: 'draft', status: 'running' }),
    ]);
    expect((await service.listTasks({ project: project.name }))[0]!.activeDraft).toEqual({
      sessionId: drafted.sessionId,
      role: 'dev',
      channelId: 'tui-1',
    });

    const status = await service.getDraftStatus({ channelId: 'tui-1' });
    expect(status).toMatchObject({
      active: true,
      session: {
        sessionId: drafted.sessionId,
        role: 'dev',
        turnCount: 0,
        contextWindow: 200_000,
        contextPct: 0,
        turnRunning: false,
      },
    });

    const summary = await service.undraft({ channelId: 'tui-1' });
    expect(summary).toMatchObject({ sessionId: drafted.sessionId, taskSlug: 'add-login', turns: 0, cost: 0 });
    expect(summary.durationMs).toBeGreaterThanOrEqual(0);
    expect(await readDraftJson(task.taskDir)).toMatchObject({ status: 'closed', closeReason: 'undraft' });
    expect(await service.getDraftStatus({ channelId: 'tui-1' })).toEqual({ active: false });
    expect(await service.listAgents({ channelId: 'tui-1' })).toEqual([]);
    expect(recorder.of('agent_status').map((notice) => notice.agent.status)).toEqual(['running', 'completed']);
  });

  it('the data model round-trips through draft.json field for field', async () => {
    const { service } = await harness({
      backends: {
        default: createScriptedBackend({
          turns: [
            [
              step.text('ok'),
              step.usage({ inputTokens: 1500, outputTokens: 20, cacheReadTokens: 500 }),
              step.cost(0.25),
            ],
          ],
        }),
      },
    });
    const { task } = await draftOnNewTask(service, 'c');
    await service.submitPrompt({ channelId: 'c', content: 'hello' });
    await service.settled({ channelId: 'c' });
    const raw = JSON.parse(await fs.readFile(path.join(task.taskDir, 'draft.json'), 'utf8')) as Record<string, unknown>;
    // Seed 000's fields, every one of them, with their types.
    for (const field of [
      'sessionId',
      'role',
      'taskSlug',
      'taskDir',
      'channelId',
      'startedAt',
      'lastActivityAt',
      'turnCount',
      'status',
      'cumulativeCostUsd',
      'lastInputTokens',
      'lastOutputTokens',
      'contextWindow',
      'maxOutputTokens',
    ]) {
      expect(raw, field).toHaveProperty(field);
    }
    const parsed = DraftSessionSchema.parse(raw);
    expect(DraftSessionSchema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
    expect(new Date(parsed.startedAt).toISOString()).toBe(parsed.startedAt);
    expect(parsed).toMatchObject({
      turnCount: 1,
      cumulativeCostUsd: 0.25,
      lastInputTokens: 2000,
      lastOutputTokens: 20,
      contextWindow: 200_000,
      maxOutputTokens: 8192,
    });
  });

  it('one draft per channel: DRAFT_ALREADY_ACTIVE, and two channels hold two drafts', async () => {
    const { service } = await harness();
    const first = await draftOnNewTask(service, 'left', 'dev', 'Task one');
    const error = await expectCode(draftOnNewTask(service, 'left', 'qa', 'Task two'), 'DRAFT_ALREADY_ACTIVE');
    expect(error.message).toContain('left');
    const second = await draftOnNewTask(service, 'right', 'qa', 'Task three');
    expect(second.drafted.sessionId).not.toBe(first.drafted.sessionId);

    // The same task cannot be drafted twice either (it has one draft.json).
    await expectCode(
      service.draft({ channelId: 'third', role: 'qa', project: first.project.name, task: first.task.slug }),
      'DRAFT_ALREADY_ACTIVE',
    );
    // Concurrent drafts race for nothing: one wins, the other is refused.
    const racing = await service.createTask({ project: first.project.name, title: 'Raced' });
    const outcomes = await Promise.allSettled([
      service.draft({ channelId: 'x', role: 'dev', project: first.project.name, task: racing.slug }),
      service.draft({ channelId: 'y', role: 'dev', project: first.project.name, task: racing.slug }),
      service.draft({ channelId: 'x', role: 'qa', project: first.project.name, task: 'task-one' }),
    ]);
    // Which of the two racing channels wins depends on I/O completion order; exactly one does.
    const [onX, onY, busy] = outcomes;
    expect([onX!.status, onY!.status].sort()).toEqual(['fulfilled', 'rejected']);
    const loser = (onX!.status === 'rejected' ? onX : onY) as PromiseRejectedResult;
    expect(loser.reason.code).toBe('DRAFT_ALREADY_ACTIVE');
    expect(busy!.status).toBe('rejected');
    expect((busy as PromiseRejectedResult).reason.code).toBe('DRAFT_ALREADY_ACTIVE');

    await service.submitPrompt({ channelId: 'left', content: 'to the dev' });
    await service.submitPrompt({ channelId: 'right', content: 'to qa' });
    await Promise.all([service.settled({ channelId: 'left' }), service.settled({ channelId: 'right' })]);
    expect((await service.getDraftStatus({ channelId: 'left' })).session).toMatchObject({ role: 'dev', turnCount: 1 });
    expect((await service.getDraftStatus({ channelId: 'right' })).session).toMatchObject({ role: 'qa', turnCount: 1 });
    expect((await service.listAgents({})).filter((agent) => agent.kind === 'draft')).toHaveLength(3);
  });

  it('NO_ACTIVE_DRAFT for undraft and for a prompt with neither a draft nor a role', async () => {
    const { service } = await harness();
    await expectCode(service.undraft({ channelId: 'nobody' }), 'NO_ACTIVE_DRAFT');
    await expectCode(service.submitPrompt({ channelId: 'nobody', content: 'hi' }), 'NO_ACTIVE_DRAFT');
    expect(await service.cancel({ channelId: 'nobody' })).toEqual({ cancelled: false });
  });

  it('unknown project, task and role are NOT_FOUND; bad ids are INVALID_INPUT and touch nothing', async () => {
    const { service } = await harness();
    const [project] = await service.listProjects();
    const task = await service.createTask({ project: project!.name, title: 'Real task' });
    await expectCode(
      service.draft({ channelId: 'c', role: 'dev', project: 'elsewhere', task: task.slug }),
      'NOT_FOUND',
    );
    await expectCode(
      service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: 'missing' }),
      'NOT_FOUND',
    );
    const error = await expectCode(
      service.draft({ channelId: 'c', role: 'ghost', project: project!.name, task: task.slug }),
      'NOT_FOUND',
    );
    expect(error.message).toContain('product-analyst');
    await expectCode(
      service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: '../../etc' }),
      'INVALID_INPUT',
    );
    expect(await service.getDraftStatus({ channelId: 'c' })).toEqual({ active: false });
    // A failed draft leaves the channel free.
    await service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
  });

  it('drafting a role whose file is malformed fails naming the file and the field', async () => {
    const { service, dataDir } = await harness();
    const file = await writeRole(
      dataDir,
      'reviewer.md',
      '---\nname: reviewer\npermissions: [agent-draft, fly]\n---\nReview things.\n',
    );
    const [project] = await service.listProjects();
    const task = await service.createTask({ project: project!.name, title: 'T' });
    const error = await expectCode(
      service.draft({ channelId: 'c', role: 'reviewer', project: project!.name, task: task.slug }),
      'INVALID_INPUT',
    );
    expect(error.message).toContain(file);
    expect(error.message).toContain('permissions.1');
    // The other roles still work.
    await service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
  });
});

describe('drafts: turns', () => {
  it('a turn stores the user message, streams every event as channel_message with its seq, then pushes draft_status', async () => {
    const backend = createScriptedBackend({
      turns: [
        [
          step.thinking('plan'),
          step.text('Here is the plan.'),
          step.usage({ inputTokens: 1000, outputTokens: 50 }),
          step.cost(0.1),
        ],
      ],
    });
    const { service, recorder, manager } = await harness({ backends: { default: backend } });
    const { drafted } = await draftOnNewTask(service, 'c');
    const submitted = await service.submitPrompt({ channelId: 'c', content: 'What next?' });
    expect(submitted).toMatchObject({ mode: 'draft', accepted: true, sessionId: drafted.sessionId });
    // Acknowledged: the message is durable in the log at the returned seq.
    const log = await manager.getEvents(drafted.sessionId);
    expect(log.find((event) => event.seq === (submitted as { seq: number }).seq)).toMatchObject({
      type: 'block_complete',
      block: { type: 'user_message', content: 'What next?' },
    });
    await service.settled({ channelId: 'c' });

    const messages = recorder.of('channel_message');
    const all = await manager.getEvents(drafted.sessionId);
    expect(messages.map((message) => message.event.seq)).toEqual(all.map((event) => event.seq));
    expect(messages.every((message) => message.channelId === 'c' && message.sessionId === drafted.sessionId)).toBe(
      true,
    );
    expect(messages.some((message) => message.event.type === 'text_delta')).toBe(true);

    const statuses = recorder.of('draft_status');
    expect(statuses).toHaveLength(1);
    expect(statuses[0]).toMatchObject({
      channelId: 'c',
      sessionId: drafted.sessionId,
      role: 'dev',
      turnCount: 1,
      costUsd: 0.1,
      contextPct: 0.5,
    });
    // The draft_status comes after the turn's last event.
    const order = recorder.all.map((entry) => entry.name);
    expect(order.lastIndexOf('channel_message')).toBeLessThan(order.indexOf('draft_status'));
    // The drafted agent gets its role's instructions, the read-only tools, and (a managed back end) the workspace tools.
    expect(backend.calls[0]!.profile?.name).toBe('dev');
    // A managed back end gets Parley's request building, opening with the role's instructions.
    expect(backend.calls[0]!.systemPrompt).toContain('# Your Role');
    expect(backend.calls[0]!.systemPrompt).toContain('You are a software developer on this project.');
    expect(backend.calls[0]!.tools?.map((tool) => tool.name)).toEqual([
      'list_tasks',
      'list_roles',
      'read_file',
      'list_files',
      'glob',
      'grep',
      'edit_file',
      'write_file',
      'run_command',
    ]);
  });

  it('cumulative cost is the sum of per-turn deltas and turn count grows per exchange', async () => {
    const backend = createScriptedBackend({
      turns: [
        [step.text('one'), step.usage({ inputTokens: 100, outputTokens: 10 }), step.cost(0.01)],
        [step.text('two'), step.usage({ inputTokens: 300, outputTokens: 20, cacheWriteTokens: 100 }), step.cost(0.02)],
      ],
    });
    const { service, recorder } = await harness({ backends: { default: backend } });
    await draftOnNewTask(service, 'c');
    for (const content of ['first', 'second']) {
      await service.submitPrompt({ channelId: 'c', content });
      await service.settled({ channelId: 'c' });
    }
    const status = (await service.getDraftStatus({ channelId: 'c' })).session!;
    expect(status.turnCount).toBe(2);
    expect(status.cumulativeCostUsd).toBeCloseTo(0.03, 10);
    // Occupancy of the last request only: input + cache write.
    expect(status.lastInputTokens).toBe(400);
    expect(status.lastOutputTokens).toBe(20);
    expect(status.contextPct).toBe(0.2);
    expect(recorder.of('draft_status').map((notice) => notice.turnCount)).toEqual([1, 2]);
  });

  it("the status asked the moment the turn's end streams already counts that turn", async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('first answer'), step.usage({ inputTokens: 100, outputTokens: 10 }), step.cost(0.01)]],
    });
    const { service } = await harness({ backends: { default: backend } });
    await draftOnNewTask(service, 'c');
    const status = new Promise<unknown>((resolve) => {
      const off = service.on('channel_message', ({ event }) => {
        if (event.type !== 'metadata_update' || event.metadata.turnComplete !== true) return;
        off();
        // As the TUI's /context does on seeing the end: the draft is still saving its metrics.
        resolve(service.getDraftStatus({ channelId: 'c' }));
      });
    });
    await service.submitPrompt({ channelId: 'c', content: 'hello' });
    expect(await status).toMatchObject({
      active: true,
      session: { turnCount: 1, turnRunning: false, cumulativeCostUsd: 0.01 },
    });
    await service.settled({ channelId: 'c' });
  });

  it('a second submit while a turn runs is TURN_IN_PROGRESS; cancel aborts it and keeps the partial output', async () => {
    const hold = gate();
    const backend = createScriptedBackend({
      turns: [[step.text('partial answer'), step.wait(hold.promise), step.text('never said')]],
    });
    const { service, manager } = await harness({ backends: { default: backend } });
    const { drafted } = await draftOnNewTask(service, 'c');
    const textShown = new Promise<void>((resolve) =>
      service.on('channel_message', ({ event }) => {
        if (event.type === 'block_complete' && event.block.type === 'assistant_text') resolve();
      }),
    );
    await service.submitPrompt({ channelId: 'c', content: 'long task' });
    await textShown;
    await expectCode(service.submitPrompt({ channelId: 'c', content: 'impatient' }), 'TURN_IN_PROGRESS');
    expect((await service.getDraftStatus({ channelId: 'c' })).session?.turnRunning).toBe(true);
    expect(await service.cancel({ channelId: 'c' })).toEqual({ cancelled: true });
    await service.settled({ channelId: 'c' });
    hold.open();
    const conversation = await manager.loadConversation(drafted.sessionId);
    const types = conversation.blocks.map((block) =>
      block.type === 'system' ? `system:${block.subtype}` : block.type,
    );
    expect(types).toEqual(['user_message', 'assistant_text', 'system:aborted']);
    expect(conversation.blocks[1]).toMatchObject({ content: 'partial answer' });
    // The aborted turn counts and the channel takes the next prompt.
    expect((await service.getDraftStatus({ channelId: 'c' })).session).toMatchObject({
      turnCount: 1,
      turnRunning: false,
    });
    await service.submitPrompt({ channelId: 'c', content: 'again' });
    await service.settled({ channelId: 'c' });
  });

  it("a prompt sent the moment the turn's end streams is taken after the turn saves its state, not refused", async () => {
    const backend = createScriptedBackend({ turns: [[step.text('first answer')], [step.text('second answer')]] });
    const { service, manager } = await harness({ backends: { default: backend } });
    const { drafted } = await draftOnNewTask(service, 'c');
    const second = new Promise<unknown>((resolve) => {
      const off = service.on('channel_message', ({ event }) => {
        if (event.type !== 'metadata_update' || event.metadata.turnComplete !== true) return;
        off();
        // As a client would, on seeing the end: the draft is still saving its state.
        resolve(service.submitPrompt({ channelId: 'c', content: 'and then?' }).catch((error: unknown) => error));
      });
    });
    await service.submitPrompt({ channelId: 'c', content: 'hello' });
    expect(await second).toMatchObject({ mode: 'draft', accepted: true });
    await service.settled({ channelId: 'c' });
    const conversation = await manager.loadConversation(drafted.sessionId);
    expect(
      conversation.blocks
        .filter((block) => block.type === 'user_message' || block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content),
    ).toEqual(['hello', 'first answer', 'and then?', 'second answer']);
  });

  it('undraft during a running turn ends it cleanly before closing', async () => {
    const hold = gate();
    const backend = createScriptedBackend({ turns: [[step.text('working'), step.wait(hold.promise)]] });
    const { service, manager } = await harness({ backends: { default: backend } });
    const { drafted, task } = await draftOnNewTask(service, 'c');
    await service.submitPrompt({ channelId: 'c', content: 'go' });
    const summary = await service.undraft({ channelId: 'c' });
    expect(summary.turns).toBe(1);
    const conversation = await manager.loadConversation(drafted.sessionId);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'system', subtype: 'aborted' });
    expect(await readDraftJson(task.taskDir)).toMatchObject({ status: 'closed', turnCount: 1 });
    hold.open();
  });

  it("the back end's own compaction and Parley's are both reported as context_compacted", async () => {
    const backend = createScriptedBackend({ turns: [[step.text('after compaction')]] });
    const { service, recorder, manager } = await harness({ backends: { default: backend } });
    const { drafted } = await draftOnNewTask(service, 'c');
    // A back end's compact_boundary arrives as a system block of subtype "compaction" in the turn.
    const native = nativeCompaction(backend);
    await service.submitPrompt({ channelId: 'c', content: 'long conversation' });
    await service.settled({ channelId: 'c' });
    expect(native.played).toBe(true);
    expect(recorder.of('context_compacted')).toEqual([
      { channelId: 'c', sessionId: drafted.sessionId, preTokens: 990_013, trigger: 'auto' },
    ]);

    // Parley's own compaction of a managed session is announced by the SessionManager.
    (manager as unknown as { emit: (name: string, payload: unknown) => void }).emit('session:compaction-complete', {
      sessionId: drafted.sessionId,
      trigger: 'manual',
      version: 1,
      tokensBefore: 5000,
      tokensAfter: 800,
    });
    expect(recorder.of('context_compacted').at(-1)).toEqual({
      channelId: 'c',
      sessionId: drafted.sessionId,
      preTokens: 5000,
      trigger: 'manual',
    });
  });

  it('a native back end is resumed by its session id on later turns', async () => {
    const inner = createScriptedBackend({ turns: [[step.text('first')], [step.text('second')]] });
    const backend = nativeScripted(inner);
    const { service, manager } = await harness({ backends: { default: backend } });
    const { drafted, task } = await draftOnNewTask(service, 'c');
    expect(await readDraftJson(task.taskDir)).toMatchObject({
      continuity: 'native',
      backend: 'scripted-native',
      nativeStarted: false,
    });
    for (const content of ['one', 'two']) {
      await service.submitPrompt({ channelId: 'c', content });
      await service.settled({ channelId: 'c' });
    }
    expect(inner.calls[0]).toMatchObject({ sessionId: drafted.sessionId, isNewSession: true, prompt: 'one' });
    expect(inner.calls[0]!.systemPrompt).toBeUndefined();
    expect(inner.calls[1]).toMatchObject({
      sessionId: drafted.sessionId,
      isNewSession: false,
      nativeSessionId: drafted.sessionId,
      prompt: 'two',
    });
    expect(await readDraftJson(task.taskDir)).toMatchObject({
      nativeSessionId: drafted.sessionId,
      nativeStarted: true,
      turnCount: 2,
    });
    expect((await manager.getSession(drafted.sessionId)).native).toEqual({
      backend: 'scripted-native',
      nativeSessionId: drafted.sessionId,
    });
  });

  it('a native resume that fails is recovered by the ladder: the turn runs managed on a new native session, the user is told, the draft stays', async () => {
    const inner = createScriptedBackend({
      turns: [
        [step.text('hello')],
        [step.error('No conversation found with session ID', { code: 'NATIVE_RESUME_FAILED' })],
        [step.text('Back again.')],
      ],
    });
    const { service, manager } = await harness({ backends: { default: nativeScripted(inner) } });
    const { drafted } = await draftOnNewTask(service, 'c');
    await service.submitPrompt({ channelId: 'c', content: 'one' });
    await service.settled({ channelId: 'c' });
    await service.submitPrompt({ channelId: 'c', content: 'two' });
    await service.settled({ channelId: 'c' });
    expect((await service.getDraftStatus({ channelId: 'c' })).active).toBe(true);
    const conversation = await manager.loadConversation(drafted.sessionId);
    const codes = conversation.blocks.flatMap((block) =>
      block.type === 'system' ? [(block.data as { code?: string } | undefined)?.code] : [],
    );
    expect(codes).toEqual(['NATIVE_RESUME_FAILED', 'NATIVE_RESUME_MANAGED']);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'assistant_text', content: 'Back again.' });
    // The last rung: a managed request built from the log, on a new native session.
    expect(inner.calls[2]).toMatchObject({ isNewSession: true, prompt: 'two' });
    expect(inner.calls[2]!.systemPrompt).toContain('one');
    expect(inner.calls[2]!.nativeSessionId).not.toBe(drafted.sessionId);
  });

  it('submit_prompt with a back end moves the draft there: its session continues on it from that turn on, and draft.json remembers it', async () => {
    const native = nativeScripted(createScriptedBackend({ turns: [[step.text('On the other back end.')]] }));
    const { service, manager } = await harness({
      backends: { default: createScriptedBackend({ turns: [[step.text('hello')]] }), 'scripted-native': native },
    });
    const { drafted, task } = await draftOnNewTask(service, 'c');
    await service.submitPrompt({ channelId: 'c', content: 'one' });
    await service.settled({ channelId: 'c' });
    await service.submitPrompt({ channelId: 'c', content: 'two', backend: 'scripted-native' });
    await service.settled({ channelId: 'c' });
    const conversation = await manager.loadConversation(drafted.sessionId);
    expect(conversation.blocks.find((block) => block.type === 'system')).toMatchObject({
      subtype: 'info',
      data: { code: 'BACKEND_MOVED', to: 'scripted-native' },
    });
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'assistant_text', content: 'On the other back end.' });
    // No transcript writer: the first turn there is built from the log.
    expect(native.inner.calls[0]!.systemPrompt).toContain('one');
    expect(await readDraftJson(task.taskDir)).toMatchObject({ backend: 'scripted-native', continuity: 'native' });
    expect((await service.getDraftStatus({ channelId: 'c' })).session).toMatchObject({ backend: 'scripted-native' });
    await expect(
      service.submitPrompt({ channelId: 'c', content: 'three', backend: 'telepathy' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(
      service.submitPrompt({ channelId: 'nobody', content: 'hi', backend: 'scripted-native' }),
    ).rejects.toMatchObject({ code: 'NO_ACTIVE_DRAFT' });
  });

  it('a native session that cannot be resumed even managed: notify, auto-undraft, history stays readable', async () => {
    const resumeFailed = step.error('No conversation found with session ID', {
      code: 'RESUME_FAILED',
      advice: 'Draft again.',
    });
    const inner = createScriptedBackend({
      turns: [[step.text('hello')], [resumeFailed], [resumeFailed]],
    });
    const { service, recorder, manager } = await harness({ backends: { default: nativeScripted(inner) } });
    const { drafted, task } = await draftOnNewTask(service, 'c');
    await service.submitPrompt({ channelId: 'c', content: 'one' });
    await service.settled({ channelId: 'c' });
    await service.submitPrompt({ channelId: 'c', content: 'two' });
    await service.settled({ channelId: 'c' });
    expect(recorder.of('draft_closed')[0]).toMatchObject({
      channelId: 'c',
      sessionId: drafted.sessionId,
      reason: 'native_resume_failed',
    });
    expect(await service.getDraftStatus({ channelId: 'c' })).toEqual({ active: false });
    expect(await readDraftJson(task.taskDir)).toMatchObject({ status: 'closed', closeReason: 'native_resume_failed' });
    const conversation = await manager.loadConversation(drafted.sessionId);
    expect(
      conversation.blocks
        .filter((block) => block.type === 'user_message')
        .map((block) => (block as { content: string }).content),
    ).toEqual(['one', 'two']);
    expect(conversation.blocks.at(-1)).toMatchObject({
      type: 'system',
      subtype: 'error',
      data: { code: 'NATIVE_RESUME_FAILED' },
    });
    // The notice reached the channel as a message too.
    expect(
      recorder
        .of('channel_message')
        .some(
          (message) =>
            message.event.type === 'block_complete' &&
            message.event.block.type === 'system' &&
            (message.event.block.data as { code?: string } | undefined)?.code === 'NATIVE_RESUME_FAILED',
        ),
    ).toBe(true);
    // A fresh draft of the same task works.
    await service.draft({ channelId: 'c', role: 'dev', project: drafted.project, task: task.slug });
  });
});

/** Makes the scripted back end's next turn report a compact_boundary the way the claude-sdk back end does. */
function nativeCompaction(backend: ReturnType<typeof createScriptedBackend>): { played: boolean } {
  const state = { played: false };
  const execute = backend.execute.bind(backend);
  backend.execute = (request) => {
    const turn = execute(request);
    async function* events(): AsyncGenerator<UnsequencedEvent> {
      state.played = true;
      yield {
        type: 'block_complete',
        conversationId: 'main',
        at: 1,
        block: {
          id: 'compaction-1',
          type: 'system',
          subtype: 'compaction',
          content: 'Conversation compacted',
          createdAt: 1,
          data: { trigger: 'auto', preTokens: 990_013 },
        },
      };
      yield* turn.events;
    }
    return { ...turn, events: events() };
  };
  return state;
}

describe('drafts: default back ends', () => {
  it('without backendFor the registry resolves back ends from the project configuration (scripted offline)', async () => {
    const project = await tempProject();
    const manager = await createSessionManager({ store: createMemoryStore() });
    try {
      await fs.mkdir(project.dataDir, { recursive: true });
      await fs.writeFile(path.join(project.root, 'parley.config.json'), JSON.stringify({ backend: 'scripted' }));
      await writeRole(project.dataDir, 'ghost.md', '---\nbackend: no-such-backend\n---\nBoo.\n');
      const service = await createDraftService({ manager, projectRoot: project.root, dataDir: project.dataDir });
      const [info] = await service.listProjects();
      const task = await service.createTask({ project: info!.name, title: 'T' });
      const { sessionId } = await service.draft({ channelId: 'c', role: 'dev', project: info!.name, task: task.slug });
      await service.submitPrompt({ channelId: 'c', content: 'hello there' });
      await service.settled({ channelId: 'c' });
      expect((await manager.loadConversation(sessionId)).blocks.at(-1)).toMatchObject({
        type: 'assistant_text',
        content: 'Echo: hello there',
      });
      await service.undraft({ channelId: 'c' });
      const error = await expectCode(
        service.draft({ channelId: 'c', role: 'ghost', project: info!.name, task: task.slug }),
        'INVALID_INPUT',
      );
      expect(error.message).toContain('no-such-backend');
      await service.close();

      // A configuration that cannot be read does not stop the service; drafting names the file.
      await fs.writeFile(path.join(project.root, 'parley.config.json'), '{ "backend": 42 }');
      const broken = await createDraftService({ manager, projectRoot: project.root, dataDir: project.dataDir });
      const configError = await expectCode(
        broken.draft({ channelId: 'd', role: 'dev', project: info!.name, task: task.slug }),
        'INVALID_INPUT',
      );
      expect(configError.message).toContain('parley.config.json');
      await broken.close();
    } finally {
      await manager.close();
      await project.cleanup();
    }
  });
});
