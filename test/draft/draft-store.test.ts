import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { createDraftService, type DraftService } from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryDraftStore, createMemoryStore, type DraftStore } from '../../src/store/index.js';
import { closeAll, harness, tempProject } from './helpers.js';

// The draft service over a DraftStore passed in (the seam a database store plugs into), and the
// claims the store now holds.

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await closeAll();
});

async function overStore(
  draftStore: DraftStore,
  manager?: SessionManager,
): Promise<{ service: DraftService; manager: SessionManager; root: string; dataDir: string }> {
  const project = await tempProject();
  const sessions = manager ?? (await createSessionManager({ store: createMemoryStore() }));
  const service = await createDraftService({
    manager: sessions,
    projectRoot: project.root,
    dataDir: project.dataDir,
    draftStore,
    backendFor: () => createScriptedBackend({ turns: [[step.text('done')]] }),
  });
  cleanups.push(async () => {
    await service.close();
    if (!manager) await sessions.close();
    await project.cleanup();
  });
  return { service, manager: sessions, root: project.root, dataDir: project.dataDir };
}

describe('the draft service over a DraftStore passed in', () => {
  it('keeps projects, tasks, drafts and roles in that store, and nothing in the data folder', async () => {
    const draftStore = createMemoryDraftStore({
      home: { name: 'shop', path: '/srv/shop', dataDir: '/srv/shop/.parley' },
    });
    await draftStore.writeRoleFile('shop', 'reviewer', '---\ndescription: Reviews\n---\nReview things.\n');
    const { service, dataDir } = await overStore(draftStore);

    const [project] = await service.listProjects();
    expect(project).toMatchObject({ name: 'shop', path: '/srv/shop', current: true });
    const task = await service.createTask({ project: 'shop', title: 'Fix login' });
    expect(await draftStore.getTask('shop', task.slug)).toMatchObject({ title: 'Fix login', state: 'open' });
    expect((await service.listRoles({})).roles.map((role) => role.name)).toContain('reviewer');

    const { sessionId } = await service.draft({ channelId: 'tui', role: 'reviewer', project: 'shop', task: task.slug });
    expect(await draftStore.findActiveDraft('tui')).toMatchObject({ sessionId, role: 'reviewer', status: 'active' });
    expect((await service.listTasks({ project: 'shop' }))[0]!.activeDraft).toEqual({
      sessionId,
      role: 'reviewer',
      channelId: 'tui',
    });
    await service.submitPrompt({ channelId: 'tui', content: 'go' });
    await service.settled({ channelId: 'tui' });
    expect(await draftStore.getDraft('shop', task.slug)).toMatchObject({ turnCount: 1 });

    await service.undraft({ channelId: 'tui' });
    expect(await draftStore.getDraft('shop', task.slug)).toMatchObject({ status: 'closed', closeReason: 'undraft' });
    await service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    expect((await draftStore.listClosedDrafts('shop', task.slug)).map((draft) => draft.sessionId)).toEqual([sessionId]);

    await expect(fs.readdir(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    // A store passed in is the caller's: closing the service leaves it open.
    await service.close();
    expect(await draftStore.listProjects()).toHaveLength(1);
  });

  it('a channel held in the store by a draft this service does not run is refused before anything is made', async () => {
    const draftStore = createMemoryDraftStore({
      home: { name: 'shop', path: '/srv/shop', dataDir: '/srv/shop/.parley' },
    });
    const manager = await createSessionManager({ store: createMemoryStore() });
    cleanups.push(() => manager.close());
    const first = await overStore(draftStore, manager);
    const second = await overStore(draftStore, manager);
    const one = await first.service.createTask({ project: 'shop', title: 'One' });
    const two = await first.service.createTask({ project: 'shop', title: 'Two' });
    await first.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: one.slug });
    const sessionsBefore = (await manager.listSessions()).length;

    await expect(
      second.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: two.slug }),
    ).rejects.toMatchObject({
      code: 'DRAFT_ALREADY_ACTIVE',
      message: expect.stringContaining('not running'),
    });
    await expect(
      second.service.draft({ channelId: 'web', role: 'dev', project: 'shop', task: one.slug }),
    ).rejects.toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });
    expect(await manager.listSessions()).toHaveLength(sessionsBefore);
  });

  it('two services racing for one channel through one store: one wins, the loser keeps no draft and its session (if made) is archived', async () => {
    const draftStore = createMemoryDraftStore({
      home: { name: 'shop', path: '/srv/shop', dataDir: '/srv/shop/.parley' },
    });
    const manager = await createSessionManager({ store: createMemoryStore() });
    cleanups.push(() => manager.close());
    const [a, b] = [await overStore(draftStore, manager), await overStore(draftStore, manager)];
    const one = await a.service.createTask({ project: 'shop', title: 'One' });
    const two = await a.service.createTask({ project: 'shop', title: 'Two' });
    const outcomes = await Promise.allSettled([
      a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: one.slug }),
      b.service.draft({ channelId: 'tui', role: 'qa', project: 'shop', task: two.slug }),
    ]);
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });
    const winner = (won[0] as PromiseFulfilledResult<{ sessionId: string }>).value.sessionId;
    expect((await draftStore.listActiveDrafts()).drafts.map((draft) => draft.sessionId)).toEqual([winner]);
    for (const session of await manager.listSessions()) {
      expect(session.status, session.sessionId).toBe(session.sessionId === winner ? 'active' : 'archived');
    }
  });
  it('a claim the store refuses after the session was made (another process got there first) archives that session', async () => {
    const draftStore = createMemoryDraftStore({
      home: { name: 'shop', path: '/srv/shop', dataDir: '/srv/shop/.parley' },
    });
    const manager = await createSessionManager({ store: createMemoryStore() });
    cleanups.push(() => manager.close());
    const a = await overStore(draftStore, manager);
    // B's look-ahead misses A's draft, as it would when A claims between B's check and B's claim.
    const late: DraftStore = Object.assign(Object.create(draftStore) as DraftStore, {
      findActiveDraft: async () => undefined,
    });
    const b = await overStore(late, manager);
    const one = await a.service.createTask({ project: 'shop', title: 'One' });
    const two = await a.service.createTask({ project: 'shop', title: 'Two' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: one.slug });
    await expect(
      b.service.draft({ channelId: 'tui', role: 'qa', project: 'shop', task: two.slug }),
    ).rejects.toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });
    const sessions = await manager.listSessions();
    expect(sessions).toHaveLength(2);
    for (const session of sessions)
      expect(session.status).toBe(session.sessionId === sessionId ? 'active' : 'archived');
    expect(await draftStore.getDraft('shop', two.slug)).toBeUndefined();
    expect((await b.service.getDraftStatus({ channelId: 'tui' })).active).toBe(false);
  });
});

describe('recovery with store claims', () => {
  it('a draft whose session is gone is released (recovery_failed), so its channel and task can be drafted again', async () => {
    const h = await harness({ store: 'file' });
    const [info] = await h.service.listProjects();
    const task = await h.service.createTask({ project: info!.name, title: 'Gone' });
    await h.service.draft({ channelId: 'a', role: 'dev', project: info!.name, task: task.slug });
    const file = path.join(task.taskDir, 'draft.json');
    const onDisk = JSON.parse(await fs.readFile(file, 'utf8')) as Record<string, unknown>;
    await fs.writeFile(file, JSON.stringify({ ...onDisk, sessionId: 'no-such-session' }));

    const fresh = await createDraftService({
      manager: h.manager,
      projectRoot: h.root,
      dataDir: h.dataDir,
      backendFor: () => createScriptedBackend(),
    });
    cleanups.push(() => fresh.close());
    expect(await fresh.recover()).toEqual({
      recovered: 0,
      failed: [{ sessionId: 'no-such-session', reason: expect.stringContaining('no-such-session') }],
    });
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toMatchObject({
      sessionId: 'no-such-session',
      status: 'closed',
      closeReason: 'recovery_failed',
    });
    await fresh.draft({ channelId: 'a', role: 'dev', project: info!.name, task: task.slug });
    expect((await fresh.getDraftStatus({ channelId: 'a' })).active).toBe(true);
  });
});
