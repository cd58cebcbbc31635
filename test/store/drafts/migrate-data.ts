/**
 * A draft layer's worth of records for the `parley migrate` tests: the home project and another one,
 * tasks in both, a task with a closed draft and then an active one on the same channel, a task
 * whose only draft is closed, an active draft in the other project, and role files.
 */
import { expect } from 'vitest';
import { draftsOfTask } from '../../../src/store/drafts/digest.js';
import type { DraftSession, DraftStore, DraftStoreSide } from '../../../src/store/index.js';
import { draftRecord, taskFile } from './conformance.js';

export const DEV_ROLE = '---\nname: dev\nbackend: scripted\n---\nYou write code. Käse ✓\n';

function closedDraft(draft: DraftSession, closedAt: string): DraftSession {
  return {
    ...draft,
    status: 'closed',
    closedAt,
    closeReason: 'undraft',
    turnCount: 3,
    cumulativeCostUsd: 0.42,
    lastInputTokens: 1200,
  };
}

/** Fills `store` (opened for home project `home`); returns every record's id as the migration names it. */
export async function fillDraftLayer(store: DraftStore, home: string): Promise<void> {
  await store.createProject({ name: home, description: 'The shop', createdAt: '2025-01-01T00:00:00.000Z' });
  await store.createProject({ name: 'billing', description: 'Invoices', createdAt: '2025-01-02T00:00:00.000Z' });

  await store.createTask(
    home,
    taskFile('checkout', { title: 'Checkout page', description: 'Pay with a card', state: 'in_progress' }),
  );
  await store.createTask(home, taskFile('search', { state: 'done' }));
  await store.createTask('billing', taskFile('invoices'));

  // checkout: a closed draft on channel tui-1, then an active one on the same channel.
  const first = await store.claimDraft(
    draftRecord(home, 'checkout', 'tui-1', 's-checkout-1', { startedAt: '2025-01-03T00:00:00.000Z' }),
  );
  await store.releaseDraft(closedDraft(first, '2025-01-03T01:00:00.000Z'));
  const second = await store.claimDraft(
    draftRecord(home, 'checkout', 'tui-1', 's-checkout-2', {
      startedAt: '2025-01-04T00:00:00.000Z',
      model: 'claude-x',
    }),
  );
  await store.updateDraft({
    ...second,
    turnCount: 2,
    nativeSessionId: 'native-7',
    nativeStarted: true,
    continuity: 'native',
  });
  // search: only a closed draft, on a channel the billing draft holds now.
  const searched = await store.claimDraft(
    draftRecord(home, 'search', 'web-2', 's-search-1', { startedAt: '2025-01-02T12:00:00.000Z' }),
  );
  await store.releaseDraft(closedDraft(searched, '2025-01-02T13:00:00.000Z'));
  await store.claimDraft(
    draftRecord('billing', 'invoices', 'web-2', 's-invoices-1', {
      role: 'accountant',
      startedAt: '2025-01-05T00:00:00.000Z',
    }),
  );

  await store.writeRoleFile(home, 'dev', DEV_ROLE);
  await store.writeRoleFile('billing', 'accountant', '---\nname: accountant\n---\nYou keep the books.\n');
}

/** Record by record: the same projects (details), tasks, drafts of every task in claim order, and role files' text. */
export async function expectSameDraftLayer(original: DraftStoreSide, copy: DraftStoreSide): Promise<void> {
  const projects = await original.store.listProjects();
  expect(projects.length).toBeGreaterThan(0);
  for (const project of projects) {
    const copied = await copy.store.getProject(project.name);
    expect(copied, `project ${project.name}`).toBeDefined();
    expect({ description: copied!.description, createdAt: copied!.createdAt, home: copied!.home }).toEqual({
      description: project.description,
      createdAt: project.createdAt,
      home: project.home,
    });
    const tasks = await original.store.listTasks(project.name);
    expect(await copy.store.listTasks(project.name)).toEqual(tasks);
    for (const task of tasks) {
      expect(await draftsOfTask(copy.store, project.name, task.slug), `drafts of ${project.name}/${task.slug}`).toEqual(
        await draftsOfTask(original.store, project.name, task.slug),
      );
      expect(await copy.store.getDraft(project.name, task.slug)).toEqual(
        await original.store.getDraft(project.name, task.slug),
      );
    }
    const roles = (files: Array<{ name: string; text: string }>) => files.map(({ name, text }) => ({ name, text }));
    expect(roles((await copy.store.listRoleFiles(project.name)).files)).toEqual(
      roles((await original.store.listRoleFiles(project.name)).files),
    );
  }
  expect((await copy.store.listProjects()).map((project) => project.name).sort()).toEqual(
    projects.map((project) => project.name).sort(),
  );
  expect((await copy.store.listActiveDrafts()).drafts.map((draft) => draft.sessionId).sort()).toEqual(
    (await original.store.listActiveDrafts()).drafts.map((draft) => draft.sessionId).sort(),
  );
}
