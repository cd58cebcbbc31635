import { afterEach, describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, loadRoles, parseRoleFile, type RoleFileError, type RoleInfo } from '../../src/draft/index.js';
import { closeAll, harness, tempProject, writeRole } from './helpers.js';
import path from 'node:path';

afterEach(closeAll);

function asError(result: RoleInfo | RoleFileError): RoleFileError {
  expect('message' in result, `expected an error, got role ${JSON.stringify(result)}`).toBe(true);
  return result as RoleFileError;
}

describe('role files', () => {
  it('built-in roles: a product analyst that may draft workers, a developer and a QA reviewer', async () => {
    expect(BUILTIN_ROLES.map((role) => [role.name, role.permissions])).toEqual([
      ['product-analyst', ['agent-draft', 'agent-converse', 'projects-list', 'projects-create', 'files-read']],
      ['dev', ['files-read', 'files-write', 'shell']],
      ['qa', ['files-read', 'files-write', 'shell']],
    ]);
    for (const role of BUILTIN_ROLES) expect(role.instructions.length).toBeGreaterThan(50);
  });

  it('parses front matter into the role and the body into its instructions', async () => {
    const role = await parseRoleFile(
      [
        '---',
        'name: api-dev',
        'description: Builds the HTTP API',
        'backend: claude-sdk',
        'model: claude-sonnet-4-5',
        'permissions: [projects-list]',
        'allowedTools: [Read, Bash]',
        'permissionMode: acceptEdits',
        'maxTurns: 20',
        '---',
        'You build the API.',
        '',
        'Keep handlers small.',
        '',
      ].join('\n'),
      '/p/.parley/roles/whatever.md',
    );
    expect(role).toEqual({
      name: 'api-dev',
      description: 'Builds the HTTP API',
      backend: 'claude-sdk',
      model: 'claude-sonnet-4-5',
      permissions: ['projects-list'],
      allowedTools: ['Read', 'Bash'],
      permissionMode: 'acceptEdits',
      maxTurns: 20,
      instructions: 'You build the API.\n\nKeep handlers small.',
      source: '/p/.parley/roles/whatever.md',
    });
  });

  it('the name defaults to the file name; a file without front matter is all instructions', async () => {
    expect(await parseRoleFile('---\ndescription: d\n---\nBody\n', '/r/writer.md')).toMatchObject({
      name: 'writer',
      description: 'd',
      permissions: [],
      instructions: 'Body',
    });
    expect(await parseRoleFile('Just instructions.\nMore.', '/r/plain.md')).toMatchObject({
      name: 'plain',
      description: 'Just instructions.',
      instructions: 'Just instructions.\nMore.',
    });
    expect(await parseRoleFile('\uFEFF---\r\nname: crlf\r\n---\r\nWindows body\r\n', '/r/x.md')).toMatchObject({
      name: 'crlf',
      instructions: 'Windows body',
    });
  });

  it('a malformed file is an error naming the file and the field, never a crash', async () => {
    const file = '/r/bad.md';
    const badPermission = asError(await parseRoleFile('---\npermissions: [agent-draft, admin]\n---\nx', file));
    expect(badPermission).toMatchObject({ file, field: 'permissions.1' });
    expect(badPermission.message).toContain('"admin"');

    expect(asError(await parseRoleFile('---\npermision: [agent-draft]\n---\nx', file))).toMatchObject({
      file,
      field: 'permision',
    });
    expect(asError(await parseRoleFile('---\npermissions: agent-draft\n---\nx', file))).toMatchObject({
      file,
      field: 'permissions',
    });
    expect(asError(await parseRoleFile('---\nmaxTurns: -1\n---\nx', file))).toMatchObject({ field: 'maxTurns' });
    expect(asError(await parseRoleFile('---\nname: ../../etc\n---\nx', file))).toMatchObject({ field: 'name' });
    expect(asError(await parseRoleFile('---\nname: [unclosed\n---\nx', file)).message).toContain('not valid YAML');
    expect(asError(await parseRoleFile('---\n- a\n- b\n---\nx', file)).message).toContain('mapping');
    expect(asError(await parseRoleFile('---\nname: open\nno end', file)).message).toContain('never closed');
    expect(asError(await parseRoleFile('x', '/r/has space.md'))).toMatchObject({ field: 'name' });
  });

  it('loadRoles overlays project files on the built-ins and lists bad files in errors', async () => {
    const project = await tempProject();
    try {
      const rolesDir = path.join(project.dataDir, 'roles');
      await writeRole(
        project.dataDir,
        'dev.md',
        '---\ndescription: Our dev\nbackend: scripted\n---\nProject dev rules.\n',
      );
      await writeRole(project.dataDir, 'designer.md', '---\ndescription: Designs screens\n---\nDesign.\n');
      const broken = await writeRole(project.dataDir, 'broken.md', '---\npermissions: [everything]\n---\n');
      await writeRole(project.dataDir, 'twin.md', '---\nname: designer\n---\nA second designer.\n');
      await writeRole(project.dataDir, 'notes.txt', 'not a role');
      const { roles, errors } = await loadRoles(rolesDir);
      expect(roles.map((role) => role.name)).toEqual(['designer', 'dev', 'product-analyst', 'qa']);
      expect(roles.find((role) => role.name === 'dev')).toMatchObject({
        description: 'Our dev',
        backend: 'scripted',
        source: path.join(rolesDir, 'dev.md'),
      });
      expect(errors).toEqual([
        { file: broken, field: 'permissions.0', message: expect.stringContaining('everything') },
        { file: path.join(rolesDir, 'twin.md'), field: 'name', message: expect.stringContaining('already defined') },
      ]);
      expect(await loadRoles(path.join(project.root, 'missing'))).toEqual({
        roles: [...BUILTIN_ROLES].sort((a, b) => a.name.localeCompare(b.name)),
        errors: [],
      });
    } finally {
      await project.cleanup();
    }
  });

  it('list_roles of the service returns the roles and the errors', async () => {
    const { service, dataDir } = await harness();
    const file = await writeRole(dataDir, 'oops.md', '---\nmodel: 3\n---\n');
    const { roles, errors } = await service.listRoles({});
    expect(roles.map((role) => role.name)).toContain('product-analyst');
    expect(errors).toEqual([{ file, field: 'model', message: expect.any(String) }]);
    await expect(service.listRoles({ project: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
