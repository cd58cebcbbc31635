import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFileDraftStore, type DraftStore } from '../../../src/store/index.js';
import { storeErrorOf } from '../builders.js';
import { draftRecord, runDraftStoreConformance, taskFile } from './conformance.js';

const folders = new WeakMap<DraftStore, string>();

async function openIn(root: string): Promise<DraftStore> {
  return createFileDraftStore({ home: { name: 'home', path: root, dataDir: join(root, '.parley') } });
}

runDraftStoreConformance({
  name: 'file draft store',
  create: async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'parley-draft-store-'));
    const store = await openIn(root);
    folders.set(store, root);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    await fs.rm(folders.get(store)!, { recursive: true, force: true });
  },
});

describe('file draft store: the layout on disk', () => {
  const roots: string[] = [];
  afterEach(async () => {
    for (const root of roots.splice(0)) await fs.rm(root, { recursive: true, force: true });
  });
  async function tempRoot(): Promise<string> {
    const root = await fs.mkdtemp(join(tmpdir(), 'parley-draft-layout-'));
    roots.push(root);
    return root;
  }
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const readJson = async (file: string) => JSON.parse(await fs.readFile(file, 'utf8')) as Record<string, unknown>;

  it('reads a data folder written by an earlier Parley: project.json, projects.json, tasks, draft.json, drafts/, roles/', async () => {
    const root = await tempRoot();
    const dataDir = join(root, '.parley');
    const other = join(root, 'elsewhere');
    const taskDir = join(dataDir, 'tasks', 'login');
    await fs.mkdir(join(taskDir, 'drafts'), { recursive: true });
    await fs.mkdir(join(dataDir, 'roles'), { recursive: true });
    await fs.mkdir(join(other, '.parley'), { recursive: true });
    await fs.writeFile(
      join(dataDir, 'project.json'),
      json({ formatVersion: 1, name: 'shop', description: 'The shop', createdAt: '2025-01-01T00:00:00.000Z' }),
    );
    await fs.writeFile(
      join(dataDir, 'projects.json'),
      json({ formatVersion: 1, projects: [{ name: 'docs', path: other, createdAt: '2025-01-01T00:00:00.000Z' }] }),
    );
    await fs.writeFile(join(taskDir, 'task.json'), json(taskFile('login')));
    const active = draftRecord('shop', 'login', 'tui', 'new-session', { taskDir });
    const old = {
      ...draftRecord('shop', 'login', 'tui', 'old-session', { taskDir }),
      status: 'closed' as const,
      closedAt: '2025-01-02T00:00:00.000Z',
    };
    await fs.writeFile(join(taskDir, 'draft.json'), json(active));
    await fs.writeFile(join(taskDir, 'drafts', 'old-session.json'), json(old));
    await fs.writeFile(join(dataDir, 'roles', 'reviewer.md'), 'Review.\n');

    const store = await openIn(root);
    expect(await store.listProjects()).toEqual([
      { name: 'shop', path: root, dataDir, description: 'The shop', createdAt: '2025-01-01T00:00:00.000Z', home: true },
      {
        name: 'docs',
        path: other,
        dataDir: join(other, '.parley'),
        createdAt: '2025-01-01T00:00:00.000Z',
        home: false,
      },
    ]);
    expect(await store.listTasks('shop')).toEqual([taskFile('login')]);
    expect(await store.getDraft('shop', 'login')).toEqual(active);
    expect(await store.findActiveDraft('tui')).toEqual(active);
    expect(await store.listClosedDrafts('shop', 'login')).toEqual([old]);
    expect(await store.listRoleFiles('shop')).toEqual({
      files: [{ name: 'reviewer', location: join(dataDir, 'roles', 'reviewer.md'), text: 'Review.\n' }],
      errors: [],
    });
    // A task folder left without task.json (a crash between mkdir and write) is not a task, but its slug stays taken.
    await fs.mkdir(join(dataDir, 'tasks', 'half'));
    expect((await store.listTasks('shop')).map((task) => task.slug)).toEqual(['login']);
    expect((await storeErrorOf(() => store.createTask('shop', taskFile('half')))).code).toBe('TASK_EXISTS');
  });

  it("writes today's files: task.json, draft.json, drafts/<id>.json, projects.json, project.json, roles/<role>.md, and no temp file", async () => {
    const root = await tempRoot();
    const dataDir = join(root, '.parley');
    const store = await openIn(root);
    expect((await store.listProjects())[0]).toEqual({ name: 'home', path: root, dataDir, home: true });
    await store.createTask('home', taskFile('t'));
    const taskDir = join(dataDir, 'tasks', 't');
    expect(await readJson(join(taskDir, 'task.json'))).toEqual(taskFile('t'));
    const first = await store.claimDraft(draftRecord('home', 't', 'tui', 's-1'));
    expect(await readJson(join(taskDir, 'draft.json'))).toEqual(first);
    const firstClosed = {
      ...first,
      status: 'closed' as const,
      closedAt: '2025-01-03T00:00:00.000Z',
      closeReason: 'undraft' as const,
    };
    await store.releaseDraft(firstClosed);
    expect(await readJson(join(taskDir, 'draft.json'))).toEqual(firstClosed);
    const second = await store.claimDraft(draftRecord('home', 't', 'tui', 's-2'));
    expect(await readJson(join(taskDir, 'draft.json'))).toEqual(second);
    expect(await readJson(join(taskDir, 'drafts', 's-1.json'))).toEqual(firstClosed);
    expect((await fs.readdir(taskDir)).sort()).toEqual(['draft.json', 'drafts', 'task.json']);

    const billing = await store.createProject({
      name: 'billing',
      description: 'Invoices',
      createdAt: '2025-01-01T00:00:00.000Z',
    });
    expect(billing).toMatchObject({
      path: join(dataDir, 'projects', 'billing'),
      dataDir: join(dataDir, 'projects', 'billing', '.parley'),
    });
    expect(await readJson(join(billing.dataDir, 'project.json'))).toEqual({
      formatVersion: 1,
      name: 'billing',
      description: 'Invoices',
      createdAt: '2025-01-01T00:00:00.000Z',
    });
    expect(await readJson(join(dataDir, 'projects.json'))).toEqual({
      formatVersion: 1,
      projects: [
        {
          name: 'billing',
          path: billing.path,
          dataDir: billing.dataDir,
          description: 'Invoices',
          createdAt: '2025-01-01T00:00:00.000Z',
        },
      ],
    });
    await store.createTask('billing', taskFile('send'));
    expect(await fs.readdir(join(billing.dataDir, 'tasks'))).toEqual(['send']);
    await store.writeRoleFile('billing', 'dev', 'Billing dev.');
    expect(await fs.readFile(join(billing.dataDir, 'roles', 'dev.md'), 'utf8')).toBe('Billing dev.');
    expect(await fs.readdir(join(billing.dataDir, 'roles'))).toEqual(['dev.md']);
  });

  it('two stores over one data folder in one process share the claim', async () => {
    const root = await tempRoot();
    const [a, b] = [await openIn(root), await openIn(root)];
    await a.createTask('home', taskFile('one'));
    await a.createTask('home', taskFile('two'));
    const outcomes = await Promise.allSettled([
      a.claimDraft(draftRecord('home', 'one', 'tui', 's-a')),
      b.claimDraft(draftRecord('home', 'two', 'tui', 's-b')),
    ]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((await a.listActiveDrafts()).drafts).toHaveLength(1);
  });

  it('a damaged draft.json is reported by listActiveDrafts, refused by a claim on its task, and never overwritten', async () => {
    const root = await tempRoot();
    const store = await openIn(root);
    await store.createTask('home', taskFile('t'));
    const file = join(root, '.parley', 'tasks', 't', 'draft.json');
    await fs.writeFile(file, '{"formatVersion": 1, "sessionId":');
    expect(await store.listActiveDrafts()).toEqual({
      drafts: [],
      unreadable: [{ location: file, reason: expect.stringContaining('draft.json') }],
    });
    expect((await storeErrorOf(() => store.claimDraft(draftRecord('home', 't', 'tui', 's')))).code).toBe(
      'CORRUPT_FILE',
    );
    expect(await fs.readFile(file, 'utf8')).toBe('{"formatVersion": 1, "sessionId":');
  });
});
