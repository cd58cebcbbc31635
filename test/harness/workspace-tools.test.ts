import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { defineAgent, defineHarness } from '../../src/harness/index.js';
import type { ApprovalRequest } from '../../src/workspace/index.js';
import { expectThrowsCode, openManager, tempDir } from './helpers.js';

describe('a workflow agent with workspace tools', () => {
  it('asks the workflow’s onPermissionRequest callback: an allowed write happens, a denied command does not run', async () => {
    const root = await tempDir();
    const backend = createScriptedBackend({
      turns: [
        [
          step.tool('write_file', { path: 'plan.md', content: '# Plan\n' }),
          step.tool('run_command', { command: 'touch forbidden' }),
          step.text('Wrote the plan.'),
        ],
      ],
    });
    const asked: ApprovalRequest[] = [];
    const writer = defineAgent({
      name: 'Writer',
      role: 'You write plans.',
      backend,
      workspace: {
        root,
        sandbox: 'none',
        onPermissionRequest: (request) => {
          asked.push(request);
          return request.kind === 'command' ? 'deny' : 'allow_once';
        },
      },
    });
    const harness = defineHarness({
      name: 'plan',
      agents: { writer },
      run: ({ agents }) => agents.writer.run('Write the plan.'),
    });
    const result = await harness.create(undefined, { sessionManager: await openManager() }).run();
    expect(result.result).toBe('Wrote the plan.');
    expect(asked.map((request) => [request.tool, request.title])).toEqual([
      ['write_file', 'Create plan.md'],
      ['run_command', 'Run `touch forbidden`'],
    ]);
    expect(await fs.readFile(path.join(root, 'plan.md'), 'utf8')).toBe('# Plan\n');
    await expect(fs.access(path.join(root, 'forbidden'))).rejects.toThrow();
    expect(backend.calls[0]!.tools!.map((tool) => tool.name)).toEqual([
      'read_file',
      'list_files',
      'glob',
      'grep',
      'edit_file',
      'write_file',
      'run_command',
    ]);
    expect(backend.calls[0]!.cwd).toBe(root);
  });

  it('defineAgent refuses a mode that asks without a callback to answer', () => {
    const backend = createScriptedBackend();
    const error = expectThrowsCode(
      () => defineAgent({ name: 'x', role: 'r', backend, workspace: { root: '/tmp' } }),
      'INVALID_DEFINITION',
    ) as Error;
    expect(error.message).toContain('workspace.onPermissionRequest');
    expect(
      defineAgent({ name: 'x', role: 'r', backend, workspace: { root: '/tmp', mode: 'plan' } }).workspace?.mode,
    ).toBe('plan');
  });
});
