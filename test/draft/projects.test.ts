import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBackendConfig } from '../../src/backends/index.js';
import { ProjectCatalog, slugify } from '../../src/draft/index.js';
import { closeAll, harness, tempProject } from './helpers.js';

afterEach(closeAll);

describe('projects and tasks', () => {
  it('the current project is the folder, named after it unless project.json names it', async () => {
    const { service, root, dataDir } = await harness();
    const [current] = await service.listProjects();
    expect(current).toEqual({
      name: slugify(path.basename(root)),
      path: root,
      dataDir,
      current: true,
      defaultRole: 'product-analyst',
    });
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(
      path.join(dataDir, 'project.json'),
      JSON.stringify({ formatVersion: 1, name: 'shop', description: 'The shop', createdAt: new Date().toISOString() }),
    );
    expect((await service.listProjects())[0]).toMatchObject({ name: 'shop', description: 'The shop' });
  });

  it("create_project with the home project's name is refused, and writes no project.json", async () => {
    const { service, dataDir } = await harness();
    const [home] = await service.listProjects();
    await expect(service.createProject({ name: home!.name, description: 'again' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('already exists'),
    });
    await expect(fs.stat(path.join(dataDir, 'project.json'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('tasks have a slug, title, description and state in <dataDir>/tasks/<slug>/task.json', async () => {
    const { service, dataDir } = await harness();
    const [project] = await service.listProjects();
    const first = await service.createTask({
      project: project!.name,
      title: 'Add Login & Sign-up!',
      description: 'Email + password',
    });
    expect(first).toMatchObject({
      project: project!.name,
      slug: 'add-login-sign-up',
      title: 'Add Login & Sign-up!',
      description: 'Email + password',
      state: 'open',
    });
    expect(first.taskDir).toBe(path.join(dataDir, 'tasks', 'add-login-sign-up'));
    const onDisk = JSON.parse(await fs.readFile(path.join(first.taskDir, 'task.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(onDisk).toMatchObject({ formatVersion: 1, slug: 'add-login-sign-up', state: 'open' });
    // A second task with the same title gets the next free slug; an explicit taken slug is refused.
    expect((await service.createTask({ project: project!.name, title: 'Add login & sign-up' })).slug).toBe(
      'add-login-sign-up-2',
    );
    await expect(
      service.createTask({ project: project!.name, title: 'x', slug: 'add-login-sign-up' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(service.createTask({ project: project!.name, title: '  ' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect((await service.listTasks({ project: project!.name })).map((task) => task.slug)).toEqual([
      'add-login-sign-up',
      'add-login-sign-up-2',
    ]);
  });

  it('ids and slugs cannot leave the data folder', async () => {
    const { service, root } = await harness();
    const [project] = await service.listProjects();
    for (const slug of ['../escape', '..', '.hidden', 'a/b', '']) {
      await expect(service.createTask({ project: project!.name, title: 't', slug })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    await expect(service.listTasks({ project: '../..' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(service.createProject({ name: '../evil' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await fs.readdir(path.dirname(root))).not.toContain('escape');
  });

  it('create_project registers a project; its tasks live in its own data folder', async () => {
    const { service, dataDir, root } = await harness();
    const created = await service.createProject({ name: 'billing', description: 'Invoices' });
    expect(created).toEqual({
      name: 'billing',
      path: path.join(dataDir, 'projects', 'billing'),
      dataDir: path.join(dataDir, 'projects', 'billing', '.parley'),
      description: 'Invoices',
      current: false,
      defaultRole: 'product-analyst',
    });
    const elsewhere = await service.createProject({ name: 'docs', path: 'docs-site' });
    expect(elsewhere.path).toBe(path.join(root, 'docs-site'));
    expect((await service.listProjects()).map((project) => project.name)).toEqual([
      expect.any(String),
      'billing',
      'docs',
    ]);
    await expect(service.createProject({ name: 'billing' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });

    const task = await service.createTask({ project: 'billing', title: 'Send invoices' });
    expect(task.taskDir).toBe(path.join(created.dataDir, 'tasks', 'send-invoices'));
    expect(await service.listTasks({ project: 'billing' })).toHaveLength(1);
    // A draft into another project's task works the same way.
    const drafted = await service.draft({ channelId: 'c', role: 'dev', project: 'billing', task: task.slug });
    expect(drafted.project).toBe('billing');
    expect(JSON.parse(await fs.readFile(path.join(task.taskDir, 'draft.json'), 'utf8'))).toMatchObject({
      project: 'billing',
      status: 'active',
    });
  });

  it("a project's default role is product-analyst unless its parley.config.json names another; a missing role fails when drafted; a bad name is refused by the config", async () => {
    const { service, root } = await harness();
    const other = await service.createProject({ name: 'docs', path: 'docs-site' });
    await fs.writeFile(path.join(root, 'parley.config.json'), JSON.stringify({ defaultRole: 'dev' }));
    await fs.writeFile(
      path.join(other.path, 'parley.config.json'),
      JSON.stringify({ backend: 'scripted', defaultRole: 'reviewer' }),
    );
    const [current, docs] = await service.listProjects();
    expect(current!.defaultRole).toBe('dev');
    expect(docs).toMatchObject({ name: 'docs', defaultRole: 'reviewer' });

    // Whether the role exists is checked when it is drafted, with the usual error.
    const task = await service.createTask({ project: 'docs', title: 'Write the guide' });
    await expect(
      service.draft({ channelId: 'c', role: docs!.defaultRole, project: 'docs', task: task.slug }),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('No role "reviewer"'),
    });

    // A name that is not a role name is refused naming the file and field, where the file is read for back ends
    // (parley serve refuses to start); listing projects does not break on it and gives the default.
    await fs.writeFile(path.join(root, 'parley.config.json'), JSON.stringify({ defaultRole: '../roles/dev' }));
    await expect(resolveBackendConfig({ projectDir: root })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/parley\.config\.json: .*defaultRole.*must be 1–200 letters/),
    });
    expect((await service.listProjects())[0]!.defaultRole).toBe('product-analyst');
    expect(await service.listTasks({ project: current!.name })).toEqual([]);
  });

  it('a corrupt file is reported naming the file, not swallowed', async () => {
    const { service, dataDir } = await harness();
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(path.join(dataDir, 'projects.json'), '{ not json');
    await expect(service.listProjects()).rejects.toMatchObject({
      code: 'CORRUPT_FILE',
      message: expect.stringContaining('projects.json'),
    });
  });

  it('writes are atomic: no temp files are left beside draft.json', async () => {
    const project = await tempProject();
    try {
      const catalog = new ProjectCatalog({ projectRoot: project.root, dataDir: project.dataDir, clock: Date.now });
      const location = await catalog.current();
      const task = await catalog.createTask(location, { title: 'T' });
      const base = {
        formatVersion: 1 as const,
        sessionId: 's1',
        role: 'dev',
        taskSlug: task.slug,
        taskDir: task.taskDir,
        channelId: 'c',
        startedAt: new Date(0).toISOString(),
        lastActivityAt: new Date(0).toISOString(),
        turnCount: 0,
        status: 'active' as const,
        cumulativeCostUsd: 0,
        lastInputTokens: 0,
        lastOutputTokens: 0,
        contextWindow: 0,
        maxOutputTokens: 0,
        project: location.name,
        backend: 'scripted',
        continuity: 'managed' as const,
        nativeStarted: false,
        costUnknown: false,
      };
      // The draft is claimed in the store once, then saved after each turn.
      await catalog.claimDraft(base);
      await Promise.all(Array.from({ length: 20 }, (_, turnCount) => catalog.saveDraft({ ...base, turnCount })));
      expect((await fs.readdir(task.taskDir)).sort()).toEqual(['draft.json', 'task.json']);
      expect((await catalog.readDraft(location, task.slug))!.turnCount).toBeGreaterThanOrEqual(0);
    } finally {
      await project.cleanup();
    }
  });
});

describe('slugify', () => {
  it('makes valid ids from free text', () => {
    expect(slugify('Hello, World!')).toBe('hello-world');
    expect(slugify('Ünïcödé café')).toBe('unicode-cafe');
    expect(slugify('...a..b...')).toBe('a.b');
    expect(slugify('!!!')).toBeUndefined();
  });
});
