import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalBroker, commandPrefix, type ApprovalRequest } from '../../src/workspace/index.js';
import { tempWorkspace, toolRig } from './helpers.js';

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
beforeEach(async () => {
  dirs = await tempWorkspace();
  await fs.writeFile(path.join(dirs.root, 'file.txt'), 'old\n');
});
afterEach(() => dirs.cleanup());

/** A broker whose requests are collected; the test answers them. */
function collectingBroker(): {
  broker: ApprovalBroker;
  asked: ApprovalRequest[];
  next: () => Promise<ApprovalRequest>;
} {
  const broker = new ApprovalBroker();
  const asked: ApprovalRequest[] = [];
  const waiters: Array<(request: ApprovalRequest) => void> = [];
  broker.onRequested((request) => {
    asked.push(request);
    waiters.shift()?.(request);
  });
  let seen = 0;
  return {
    broker,
    asked,
    next: () =>
      asked.length > seen
        ? Promise.resolve(asked[seen++]!)
        : new Promise((resolve) => waiters.push((request) => (seen++, resolve(request)))),
  };
}

describe('permission modes', () => {
  it('default asks before an edit; allow_once edits, deny leaves the file unchanged and says "denied by the user"', async () => {
    const { broker, next } = collectingBroker();
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    const allowed = rig.call('edit_file', { path: 'file.txt', old_string: 'old', new_string: 'new' });
    const request = await next();
    expect(request).toMatchObject({
      sessionId: 'session-1',
      tool: 'edit_file',
      kind: 'edit',
      title: 'Edit file.txt',
      path: 'file.txt',
      allowAlwaysScope: 'every edit_file call in this session',
    });
    expect(request.diff).toContain('-old\n+new');
    expect(broker.pending().map((entry) => entry.requestId)).toEqual([request.requestId]);
    broker.answer(request.requestId, 'allow_once');
    expect((await allowed).isError).toBeUndefined();
    expect(await fs.readFile(path.join(dirs.root, 'file.txt'), 'utf8')).toBe('new\n');

    const denied = rig.call('write_file', { path: 'file.txt', content: 'gone' });
    broker.answer((await next()).requestId, 'deny');
    const result = await denied;
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^Denied by the user: this write was not made \(file.txt is unchanged\)/);
    expect(result.data).toEqual({ denied: true, path: 'file.txt' });
    expect(await fs.readFile(path.join(dirs.root, 'file.txt'), 'utf8')).toBe('new\n');
  });

  it('a denied command does not run', async () => {
    const { broker, next } = collectingBroker();
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    const pending = rig.call('run_command', { command: 'touch made-by-command' });
    const request = await next();
    expect(request).toMatchObject({
      kind: 'command',
      command: 'touch made-by-command',
      cwd: '.',
      title: 'Run `touch made-by-command`',
    });
    broker.answer(request.requestId, 'deny');
    expect((await pending).content).toMatch(/^Denied by the user: this command was not made/);
    await expect(fs.access(path.join(dirs.root, 'made-by-command'))).rejects.toThrow();
  });

  it('acceptEdits asks only for commands; bypassPermissions asks for nothing', async () => {
    const { broker, asked, next } = collectingBroker();
    const edits = await toolRig(dirs.root, { mode: 'acceptEdits', broker });
    await edits.call('edit_file', { path: 'file.txt', old_string: 'old', new_string: 'accepted' });
    expect(asked).toHaveLength(0);
    const command = edits.call('run_command', { command: 'echo hi' });
    const request = await next();
    expect(asked.map((entry) => entry.kind)).toEqual(['command']);
    broker.answer(request.requestId, 'allow_once');
    expect((await command).content).toBe('$ echo hi\nhi\n[exit code 0]');
    const bypass = await toolRig(dirs.root, { mode: 'bypassPermissions', broker });
    await bypass.call('run_command', { command: 'true' });
    expect(asked).toHaveLength(1);
  });

  it('plan refuses writes and commands, changing nothing, and still reads', async () => {
    const rig = await toolRig(dirs.root, { mode: 'plan' });
    const write = await rig.call('write_file', { path: 'file.txt', content: 'x' });
    expect(write.content).toMatch(/^Refused: the session is in plan mode, which allows reading only/);
    const command = await rig.call('run_command', { command: 'touch x' });
    expect(command.isError).toBe(true);
    await expect(fs.access(path.join(dirs.root, 'x'))).rejects.toThrow();
    expect((await rig.call('read_file', { path: 'file.txt' })).content).toBe('1\told');
  });
});

describe('allow always', () => {
  it('is remembered per session and per command prefix; a chained command is asked about each time', async () => {
    const { broker, next, asked } = collectingBroker();
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    const first = rig.call('run_command', { command: 'ls -a' });
    const request = await next();
    expect(request.allowAlwaysScope).toBe('commands starting with "ls"');
    broker.answer(request.requestId, 'allow_always');
    await first;
    expect((await rig.call('run_command', { command: 'ls -l file.txt' })).content).toContain('file.txt');
    expect(asked).toHaveLength(1);
    const chained = rig.call('run_command', { command: 'echo three && touch sneaky' });
    const chainedRequest = await next();
    expect(chainedRequest.allowAlwaysScope).toBeUndefined();
    broker.answer(chainedRequest.requestId, 'deny');
    await chained;
    await expect(fs.access(path.join(dirs.root, 'sneaky'))).rejects.toThrow();
    // Another session is asked again.
    expect(broker.isRemembered('session-1', 'command:ls')).toBe(true);
    expect(broker.isRemembered('session-2', 'command:ls')).toBe(false);
  });

  it('edits are remembered per tool', async () => {
    const { broker, next, asked } = collectingBroker();
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    const first = rig.call('edit_file', { path: 'file.txt', old_string: 'old', new_string: 'one' });
    broker.answer((await next()).requestId, 'allow_always');
    await first;
    await rig.call('edit_file', { path: 'file.txt', old_string: 'one', new_string: 'two' });
    expect(asked).toHaveLength(1);
    const write = rig.call('write_file', { path: 'file.txt', content: 'three' });
    broker.answer((await next()).requestId, 'allow_once');
    await write;
    expect(asked).toHaveLength(2);
  });

  it('command prefixes: program plus a plain subcommand', () => {
    expect(commandPrefix('npm test -- --watch')).toBe('npm test');
    expect(commandPrefix('git status')).toBe('git status');
    expect(commandPrefix('node --test')).toBe('node');
    expect(commandPrefix('ls | wc -l')).toBeUndefined();
    expect(commandPrefix('echo $(whoami)')).toBeUndefined();
    expect(commandPrefix('cat a > b')).toBeUndefined();
  });
});

describe('the broker', () => {
  it('an approver function answers; the first answer wins and a second is refused', async () => {
    const broker = new ApprovalBroker({ approver: (request) => (request.kind === 'command' ? 'deny' : 'allow_once') });
    const resolved: string[] = [];
    broker.onResolved((resolution) => resolved.push(`${resolution.decision}:${resolution.source}`));
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    expect((await rig.call('run_command', { command: 'touch x' })).content).toMatch(/^Denied by the user/);
    expect((await rig.call('write_file', { path: 'y.txt', content: 'y' })).isError).toBeUndefined();
    expect(resolved).toEqual(['deny:approver', 'allow_once:approver']);
    expect(() => broker.answer('no-such-id', 'allow_once')).toThrow(/No pending permission request "no-such-id"/);
  });

  it('with nobody to answer the request waits; aborting the turn denies it', async () => {
    const { broker, next } = collectingBroker();
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    const controller = new AbortController();
    const pending = rig.call('write_file', { path: 'file.txt', content: 'never' }, controller.signal);
    const request = await next();
    expect(broker.pending()).toHaveLength(1);
    controller.abort();
    expect((await pending).content).toMatch(/^Denied by the user/);
    expect(broker.pending()).toEqual([]);
    expect(() => broker.answer(request.requestId, 'allow_once')).toThrow(/answered already, cancelled, or never asked/);
    expect(await fs.readFile(path.join(dirs.root, 'file.txt'), 'utf8')).toBe('old\n');
  });

  it('an approver that throws denies', async () => {
    const broker = new ApprovalBroker({
      approver: () => {
        throw new Error('boom');
      },
    });
    const rig = await toolRig(dirs.root, { mode: 'default', broker });
    expect((await rig.call('write_file', { path: 'file.txt', content: 'x' })).content).toMatch(/^Denied by the user/);
  });
});
