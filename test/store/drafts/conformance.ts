import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isParleyError } from '../../../src/conversation/index.js';
import type { DraftSession, DraftStore, TaskFile } from '../../../src/store/index.js';
import { BAD_IDS, storeErrorOf } from '../builders.js';

/**
 * How a DraftStore's test file plugs into the shared suite. Every DraftStore (file, memory, and a
 * database one) runs every test below; a store that differs says so here as data with a reason.
 */
export interface DraftStoreInitializer {
  name: string;
  /** A fresh, empty store opened for a home project. */
  create(): Promise<DraftStore>;
  /** Releases what `create` made (temp folders); the store may already be closed. */
  destroy(store: DraftStore): Promise<void>;
}

const AT = '2025-01-02T03:04:05.000Z';

export function taskFile(slug: string, overrides: Partial<TaskFile> = {}): TaskFile {
  return {
    formatVersion: 1,
    slug,
    title: `Task ${slug}`,
    description: '',
    state: 'open',
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  };
}

export function draftRecord(
  project: string,
  taskSlug: string,
  channelId: string,
  sessionId: string,
  overrides: Partial<DraftSession> = {},
): DraftSession {
  return {
    formatVersion: 1,
    sessionId,
    role: 'dev',
    taskSlug,
    taskDir: `/somewhere/${taskSlug}`,
    channelId,
    startedAt: AT,
    lastActivityAt: AT,
    turnCount: 0,
    status: 'active',
    cumulativeCostUsd: 0,
    lastInputTokens: 0,
    lastOutputTokens: 0,
    contextWindow: 200_000,
    maxOutputTokens: 8192,
    project,
    backend: 'scripted',
    continuity: 'managed',
    nativeStarted: false,
    costUnknown: false,
    ...overrides,
  };
}

function closed(draft: DraftSession, closedAt = '2025-01-03T00:00:00.000Z'): DraftSession {
  return { ...draft, status: 'closed', closedAt, closeReason: 'undraft' };
}

export function runDraftStoreConformance(initializer: DraftStoreInitializer): void {
  describe(`DraftStore conformance: ${initializer.name}`, () => {
    let store: DraftStore;
    let home: string;

    beforeEach(async () => {
      store = await initializer.create();
      home = (await store.listProjects())[0]!.name;
    });
    afterEach(async () => {
      await initializer.destroy(store);
    });

    /** A home-project task with an active draft on `channel`. */
    async function claimed(slug: string, channel: string, sessionId = `s-${slug}`): Promise<DraftSession> {
      await store.createTask(home, taskFile(slug));
      return store.claimDraft(draftRecord(home, slug, channel, sessionId));
    }

    describe('projects', () => {
      it('lists the home project first, marked home', async () => {
        const projects = await store.listProjects();
        expect(projects).toHaveLength(1);
        expect(projects[0]).toMatchObject({ name: home, home: true });
        expect(await store.getProject(home)).toEqual(projects[0]);
      });

      it('creates projects that read back equal, in creation order, and refuses a taken name', async () => {
        const billing = await store.createProject({ name: 'billing', description: 'Invoices', createdAt: AT });
        expect(billing).toMatchObject({ name: 'billing', description: 'Invoices', createdAt: AT, home: false });
        await store.createProject({ name: 'docs', createdAt: AT });
        expect(await store.getProject('billing')).toEqual(billing);
        expect((await store.listProjects()).map((project) => project.name)).toEqual([home, 'billing', 'docs']);
        const error = await storeErrorOf(() =>
          store.createProject({ name: 'billing', description: 'again', createdAt: AT }),
        );
        expect(error.code).toBe('PROJECT_EXISTS');
        expect(error.message).toContain('billing');
        expect((await store.getProject('billing'))?.description).toBe('Invoices');
        expect(await store.getProject('nowhere')).toBeUndefined();
      });

      it('a home project never written down is written down once by createProject, keeping its folders; then its name is taken', async () => {
        const before = (await store.listProjects())[0]!;
        // A store that registers its home on open (a database) has it written down already: the data says which.
        if (before.createdAt === undefined) {
          const written = await store.createProject({
            name: home,
            description: 'The home project',
            createdAt: AT,
            path: '/elsewhere',
          });
          expect(written).toEqual({ ...before, description: 'The home project', createdAt: AT });
          expect(await store.listProjects()).toEqual([written]);
          expect(await store.getProject(home)).toEqual(written);
        }
        const error = await storeErrorOf(() =>
          store.createProject({ name: home, description: 'again', createdAt: AT }),
        );
        expect(error.code).toBe('PROJECT_EXISTS');
        expect(error.message).toContain(home);
        expect((await store.getProject(home))?.description).not.toBe('again');
      });

      it('two creations of one name racing: one wins', async () => {
        const outcomes = await Promise.allSettled([
          store.createProject({ name: 'same', createdAt: AT }),
          store.createProject({ name: 'same', createdAt: AT }),
        ]);
        expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
        expect((await store.listProjects()).filter((project) => project.name === 'same')).toHaveLength(1);
      });
    });

    describe('tasks', () => {
      it('round-trip, listed in slug order, in their own project', async () => {
        await store.createProject({ name: 'billing', createdAt: AT });
        const task = taskFile('send-invoices', {
          title: 'Send invoices',
          description: 'Monthly',
          state: 'in_progress',
        });
        expect(await store.createTask('billing', task)).toEqual(task);
        await store.createTask('billing', taskFile('archive'));
        expect(await store.getTask('billing', 'send-invoices')).toEqual(task);
        expect((await store.listTasks('billing')).map((entry) => entry.slug)).toEqual(['archive', 'send-invoices']);
        expect(await store.listTasks(home)).toEqual([]);
        expect(await store.getTask(home, 'send-invoices')).toBeUndefined();
      });

      it('refuses a taken slug with TASK_EXISTS and keeps the first', async () => {
        await store.createTask(home, taskFile('t', { title: 'first' }));
        const error = await storeErrorOf(() => store.createTask(home, taskFile('t', { title: 'second' })));
        expect(error.code).toBe('TASK_EXISTS');
        expect(error.message).toContain('"t"');
        expect((await store.getTask(home, 't'))?.title).toBe('first');
      });

      it('two creations of one slug racing: one wins', async () => {
        const outcomes = await Promise.allSettled([
          store.createTask(home, taskFile('t', { title: 'a' })),
          store.createTask(home, taskFile('t', { title: 'b' })),
        ]);
        expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
        expect(await store.listTasks(home)).toHaveLength(1);
      });

      it('an unknown project is PROJECT_NOT_FOUND, naming it', async () => {
        for (const call of [
          () => store.listTasks('ghost'),
          () => store.getTask('ghost', 't'),
          () => store.createTask('ghost', taskFile('t')),
        ]) {
          const error = await storeErrorOf(call);
          expect(error.code).toBe('PROJECT_NOT_FOUND');
          expect(error.message).toContain('ghost');
        }
      });

      it('refuses an invalid task record and stores nothing', async () => {
        await expect(store.createTask(home, { ...taskFile('t'), title: '' })).rejects.toSatisfy((error: unknown) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        expect(await store.listTasks(home)).toEqual([]);
      });
    });

    describe('drafts', () => {
      it('a claimed draft round-trips, is listed as active and found by its channel; updates replace it', async () => {
        const draft = await claimed('t', 'tui');
        expect(await store.getDraft(home, 't')).toEqual(draft);
        expect(await store.findActiveDraft('tui')).toEqual(draft);
        expect(await store.findActiveDraft('web')).toBeUndefined();
        expect(await store.listActiveDrafts()).toEqual({ drafts: [draft], unreadable: [] });
        expect(await store.listActiveDrafts({ project: home })).toEqual({ drafts: [draft], unreadable: [] });
        const later = {
          ...draft,
          turnCount: 3,
          cumulativeCostUsd: 0.5,
          nativeSessionId: 'native-1',
          lastActivityAt: '2025-01-02T04:00:00.000Z',
        };
        expect(await store.updateDraft(later)).toEqual(later);
        expect(await store.getDraft(home, 't')).toEqual(later);
        expect(await store.listClosedDrafts(home, 't')).toEqual([]);
      });

      it('refuses a claim on a busy channel with DRAFT_ALREADY_ACTIVE and changes nothing', async () => {
        const held = await claimed('first', 'tui');
        await store.createTask(home, taskFile('second'));
        const error = await storeErrorOf(() => store.claimDraft(draftRecord(home, 'second', 'tui', 's-second')));
        expect(error.code).toBe('DRAFT_ALREADY_ACTIVE');
        expect(error.message).toContain('tui');
        expect(error.data).toMatchObject({ channelId: 'tui', sessionId: held.sessionId });
        expect(await store.getDraft(home, 'second')).toBeUndefined();
        expect((await store.listActiveDrafts()).drafts).toEqual([held]);
      });

      it('a channel is one across projects', async () => {
        await claimed('t', 'tui');
        await store.createProject({ name: 'billing', createdAt: AT });
        await store.createTask('billing', taskFile('t'));
        expect((await storeErrorOf(() => store.claimDraft(draftRecord('billing', 't', 'tui', 's-billing')))).code).toBe(
          'DRAFT_ALREADY_ACTIVE',
        );
        // The same slug in another project is another task.
        await store.claimDraft(draftRecord('billing', 't', 'web', 's-billing'));
      });

      it('refuses a claim on a busy task with DRAFT_ALREADY_ACTIVE and changes nothing', async () => {
        const held = await claimed('t', 'tui');
        const error = await storeErrorOf(() => store.claimDraft(draftRecord(home, 't', 'web', 's-other')));
        expect(error.code).toBe('DRAFT_ALREADY_ACTIVE');
        expect(error.message).toContain('"t"');
        expect(await store.getDraft(home, 't')).toEqual(held);
        expect(await store.findActiveDraft('web')).toBeUndefined();
      });

      it('claims racing at once for one channel, or for one task: exactly one wins', async () => {
        for (const slug of ['a', 'b', 'c', 'd']) await store.createTask(home, taskFile(slug));
        const sameChannel = await Promise.allSettled(
          ['a', 'b', 'c'].map((slug) => store.claimDraft(draftRecord(home, slug, 'tui', `s-${slug}`))),
        );
        expect(sameChannel.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of sameChannel)
          if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });
        const sameTask = await Promise.allSettled(
          ['x', 'y', 'z'].map((channel) => store.claimDraft(draftRecord(home, 'd', channel, `s-d-${channel}`))),
        );
        expect(sameTask.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of sameTask)
          if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });
        expect((await store.listActiveDrafts()).drafts).toHaveLength(2);
      });

      it('release frees the channel and the task; a new claim keeps the closed draft, listed oldest first', async () => {
        const first = await claimed('t', 'tui', 's-1');
        const released = closed({ ...first, turnCount: 2 });
        expect(await store.releaseDraft(released)).toEqual(released);
        expect(await store.getDraft(home, 't')).toEqual(released);
        expect(await store.findActiveDraft('tui')).toBeUndefined();
        expect((await store.listActiveDrafts()).drafts).toEqual([]);
        expect(await store.listClosedDrafts(home, 't')).toEqual([released]);
        // Releasing again rewrites it (a late save of a closing draft).
        expect(await store.releaseDraft(released)).toEqual(released);

        const second = await store.claimDraft(
          draftRecord(home, 't', 'tui', 's-2', { startedAt: '2025-01-04T00:00:00.000Z', role: 'qa' }),
        );
        expect(await store.getDraft(home, 't')).toEqual(second);
        const secondClosed = closed(second, '2025-01-05T00:00:00.000Z');
        await store.releaseDraft(secondClosed);
        await store.claimDraft(draftRecord(home, 't', 'web', 's-3', { startedAt: '2025-01-06T00:00:00.000Z' }));
        expect(await store.listClosedDrafts(home, 't')).toEqual([released, secondClosed]);
      });

      it('update and release name the current draft: DRAFT_NOT_FOUND otherwise; a draft cannot change channel', async () => {
        const draft = await claimed('t', 'tui');
        expect((await storeErrorOf(() => store.updateDraft({ ...draft, sessionId: 'someone-else' }))).code).toBe(
          'DRAFT_NOT_FOUND',
        );
        expect(
          (await storeErrorOf(() => store.releaseDraft(closed({ ...draft, sessionId: 'someone-else' })))).code,
        ).toBe('DRAFT_NOT_FOUND');
        await store.createTask(home, taskFile('never'));
        expect((await storeErrorOf(() => store.updateDraft(draftRecord(home, 'never', 'x', 's-never')))).code).toBe(
          'DRAFT_NOT_FOUND',
        );
        await expect(store.updateDraft({ ...draft, channelId: 'web' })).rejects.toSatisfy((error: unknown) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        await store.releaseDraft(closed(draft));
        // A released draft is not active any more: it cannot be updated back to life.
        expect((await storeErrorOf(() => store.updateDraft({ ...draft, turnCount: 1 }))).code).toBe('DRAFT_NOT_FOUND');
        expect((await store.getDraft(home, 't'))?.status).toBe('closed');
      });

      it('claim takes an active draft, release a closed one; a missing task or project is refused', async () => {
        await store.createTask(home, taskFile('t'));
        await expect(store.claimDraft(closed(draftRecord(home, 't', 'tui', 's')))).rejects.toSatisfy((error: unknown) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        await expect(store.releaseDraft(draftRecord(home, 't', 'tui', 's'))).rejects.toSatisfy((error: unknown) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
        await expect(store.claimDraft({ ...draftRecord(home, 't', 'tui', 's'), turnCount: -1 })).rejects.toSatisfy(
          (error: unknown) => isParleyError(error, 'INVALID_INPUT'),
        );
        expect((await storeErrorOf(() => store.claimDraft(draftRecord(home, 'missing', 'tui', 's')))).code).toBe(
          'TASK_NOT_FOUND',
        );
        expect((await storeErrorOf(() => store.claimDraft(draftRecord('ghost', 't', 'tui', 's')))).code).toBe(
          'PROJECT_NOT_FOUND',
        );
        expect(await store.getDraft(home, 't')).toBeUndefined();
        expect(await store.findActiveDraft('tui')).toBeUndefined();
      });

      it("never keeps or hands out a caller's objects", async () => {
        await store.createTask(home, taskFile('t'));
        const draft = draftRecord(home, 't', 'tui', 's');
        const returned = await store.claimDraft(draft);
        draft.turnCount = 99;
        returned.turnCount = 98;
        const read = await store.getDraft(home, 't');
        read!.turnCount = 97;
        expect((await store.getDraft(home, 't'))?.turnCount).toBe(0);
        const [project] = await store.listProjects();
        project!.name = 'changed';
        expect((await store.listProjects())[0]!.name).toBe(home);
      });
    });

    describe('the draft lease', () => {
      const LONG = 60_000;

      it('is granted to the first owner, refused to another while live (naming the holder), and extended for its owner', async () => {
        const draft = await claimed('t', 'tui');
        const first = await store.acquireDraftLease(draft.sessionId, 'server-a', LONG);
        expect(first).toMatchObject({ granted: true, holder: 'server-a' });
        expect(first.takenFrom).toBeUndefined();
        expect(Date.parse(first.expiresAt!)).toBeGreaterThan(Date.now() + LONG / 2);
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toEqual({
          granted: false,
          holder: 'server-a',
          expiresAt: first.expiresAt,
        });
        expect(await store.acquireDraftLease(draft.sessionId, 'server-a', LONG)).toMatchObject({
          granted: true,
          holder: 'server-a',
        });
      });

      it('an expired lease is taken over, saying from whom; its old owner can no longer renew it', async () => {
        const draft = await claimed('t', 'tui');
        // A TTL of 0 expires at once: the store's clock has reached it by the next call.
        expect(await store.acquireDraftLease(draft.sessionId, 'server-a', 0)).toMatchObject({ granted: true });
        const taken = await store.acquireDraftLease(draft.sessionId, 'server-b', LONG);
        expect(taken).toMatchObject({ granted: true, holder: 'server-b', takenFrom: 'server-a' });
        expect(await store.renewDraftLease(draft.sessionId, 'server-a', LONG)).toMatchObject({
          granted: false,
          holder: 'server-b',
        });
        expect(await store.acquireDraftLease(draft.sessionId, 'server-a', LONG)).toMatchObject({
          granted: false,
          holder: 'server-b',
        });
      });

      it('renewal is by the owner only, and keeps an expired lease nobody took', async () => {
        const draft = await claimed('t', 'tui');
        await store.acquireDraftLease(draft.sessionId, 'server-a', 0);
        const renewed = await store.renewDraftLease(draft.sessionId, 'server-a', LONG);
        expect(renewed).toMatchObject({ granted: true, holder: 'server-a' });
        expect(await store.renewDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({
          granted: false,
          holder: 'server-a',
        });
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({
          granted: false,
          holder: 'server-a',
        });
      });

      it('a released lease is free at once; the next owner learns whom it took the draft from', async () => {
        const draft = await claimed('t', 'tui');
        await store.acquireDraftLease(draft.sessionId, 'server-a', LONG);
        // Another owner's release changes nothing.
        await store.releaseDraftLease(draft.sessionId, 'server-b');
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({
          granted: false,
          holder: 'server-a',
        });
        await store.releaseDraftLease(draft.sessionId, 'server-a');
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({
          granted: true,
          holder: 'server-b',
          takenFrom: 'server-a',
        });
      });

      it('only an active draft has a lease; releasing the draft drops it', async () => {
        expect((await storeErrorOf(() => store.acquireDraftLease('nobody', 'server-a', LONG))).code).toBe(
          'DRAFT_NOT_FOUND',
        );
        const draft = await claimed('t', 'tui');
        await store.acquireDraftLease(draft.sessionId, 'server-a', LONG);
        await store.releaseDraft(closed(draft));
        expect((await storeErrorOf(() => store.acquireDraftLease(draft.sessionId, 'server-a', LONG))).code).toBe(
          'DRAFT_NOT_FOUND',
        );
        expect(await store.renewDraftLease(draft.sessionId, 'server-a', LONG)).toEqual({ granted: false });
      });

      it('reading a lease names its live holder and changes nothing; an expired, released or dropped one reads as nobody', async () => {
        const draft = await claimed('t', 'tui');
        expect(await store.readDraftLease(draft.sessionId)).toBeUndefined();
        const granted = await store.acquireDraftLease(draft.sessionId, 'server-a', LONG);
        expect(await store.readDraftLease(draft.sessionId)).toEqual({
          holder: 'server-a',
          expiresAt: granted.expiresAt,
        });
        // Reading took nothing: another owner is still refused, the holder still renews.
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({ granted: false });
        await store.releaseDraftLease(draft.sessionId, 'server-a');
        expect(await store.readDraftLease(draft.sessionId)).toBeUndefined();
        await store.acquireDraftLease(draft.sessionId, 'server-b', 0);
        expect(await store.readDraftLease(draft.sessionId)).toBeUndefined();
        await store.acquireDraftLease(draft.sessionId, 'server-b', LONG);
        await store.releaseDraft(closed(draft));
        expect(await store.readDraftLease(draft.sessionId)).toBeUndefined();
        expect((await storeErrorOf(() => store.readDraftLease('../escape'))).code).toBe('INVALID_ID');
      });

      it('owners racing for one lease: exactly one is granted', async () => {
        const draft = await claimed('t', 'tui');
        const outcomes = await Promise.all(
          ['a', 'b', 'c', 'd'].map((owner) => store.acquireDraftLease(draft.sessionId, `server-${owner}`, LONG)),
        );
        const granted = outcomes.filter((outcome) => outcome.granted);
        expect(granted).toHaveLength(1);
        for (const outcome of outcomes) expect(outcome.holder).toBe(granted[0]!.holder);
      });

      it('refuses a bad session id, owner or TTL and changes nothing', async () => {
        const draft = await claimed('t', 'tui');
        expect((await storeErrorOf(() => store.acquireDraftLease('../x', 'server-a', LONG))).code).toBe('INVALID_ID');
        for (const [owner, ttl] of [
          ['', LONG],
          ['server-a', -1],
          ['server-a', 1.5],
          ['server-a', Number.NaN],
          ['server-a', 1e12],
        ] as const) {
          await expect(store.acquireDraftLease(draft.sessionId, owner, ttl)).rejects.toSatisfy((error: unknown) =>
            isParleyError(error, 'INVALID_INPUT'),
          );
          await expect(store.renewDraftLease(draft.sessionId, owner, ttl)).rejects.toSatisfy((error: unknown) =>
            isParleyError(error, 'INVALID_INPUT'),
          );
        }
        expect(await store.renewDraftLease(draft.sessionId, 'server-a', LONG)).toEqual({ granted: false });
        expect(await store.acquireDraftLease(draft.sessionId, 'server-b', LONG)).toMatchObject({
          granted: true,
          holder: 'server-b',
        });
      });
    });

    describe('role files', () => {
      it('round-trip their text, listed in name order; a rewrite replaces', async () => {
        expect(await store.listRoleFiles(home)).toEqual({ files: [], errors: [] });
        const text = '---\nname: reviewer\npermissions: [projects-list]\n---\nReview things.\n';
        const written = await store.writeRoleFile(home, 'reviewer', text);
        expect(written).toMatchObject({ name: 'reviewer', text });
        expect(written.location).toContain('reviewer.md');
        await store.writeRoleFile(home, 'analyst', 'Plain instructions.');
        expect(await store.readRoleFile(home, 'reviewer')).toEqual(written);
        expect((await store.listRoleFiles(home)).files.map((file) => [file.name, file.text])).toEqual([
          ['analyst', 'Plain instructions.'],
          ['reviewer', text],
        ]);
        await store.writeRoleFile(home, 'analyst', 'Changed.');
        expect((await store.readRoleFile(home, 'analyst'))?.text).toBe('Changed.');
        expect(await store.readRoleFile(home, 'nobody')).toBeUndefined();
      });

      it('are per project', async () => {
        await store.createProject({ name: 'billing', createdAt: AT });
        await store.writeRoleFile('billing', 'dev', 'Billing dev.');
        expect((await store.listRoleFiles(home)).files).toEqual([]);
        expect((await store.readRoleFile('billing', 'dev'))?.text).toBe('Billing dev.');
      });
    });

    describe('ids', () => {
      it('refuses every bad project name, slug and role name with INVALID_ID and touches nothing', async () => {
        await store.createTask(home, taskFile('t'));
        for (const bad of BAD_IDS) {
          const calls: Array<() => Promise<unknown>> = [
            () => store.getProject(bad),
            () => store.createProject({ name: bad, createdAt: AT }),
            () => store.listTasks(bad),
            () => store.getTask(home, bad),
            () => store.createTask(home, taskFile(bad)),
            () => store.getDraft(home, bad),
            () => store.listClosedDrafts(home, bad),
            () => store.claimDraft(draftRecord(home, bad, 'tui', 's')),
            () => store.claimDraft(draftRecord(bad, 't', 'tui', 's')),
            () => store.updateDraft(draftRecord(home, bad, 'tui', 's')),
            () => store.releaseDraft(closed(draftRecord(home, bad, 'tui', 's'))),
            () => store.listRoleFiles(bad),
            () => store.readRoleFile(home, bad),
            () => store.writeRoleFile(home, bad, 'x'),
          ];
          for (const call of calls) {
            const error = await storeErrorOf(call);
            expect(error.code, `${JSON.stringify(bad)}: ${String(call)}`).toBe('INVALID_ID');
          }
        }
        expect((await store.listProjects()).map((project) => project.name)).toEqual([home]);
        expect((await store.listTasks(home)).map((task) => task.slug)).toEqual(['t']);
        expect(await store.listRoleFiles(home)).toEqual({ files: [], errors: [] });
        expect(await store.findActiveDraft('tui')).toBeUndefined();
      });
    });

    it('after close, every call is STORE_CLOSED', async () => {
      await store.close();
      for (const call of [
        () => store.listProjects(),
        () => store.listTasks(home),
        () => store.claimDraft(draftRecord(home, 't', 'c', 's')),
        () => store.acquireDraftLease('s', 'server-a', 1000),
        () => store.renewDraftLease('s', 'server-a', 1000),
        () => store.releaseDraftLease('s', 'server-a'),
        () => store.listRoleFiles(home),
      ]) {
        expect((await storeErrorOf(call)).code).toBe('STORE_CLOSED');
      }
    });
  });
}
