import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { capMiddle, detectSandbox } from '../../src/workspace/index.js';
import { checkSystemPart } from '../helpers/system-part.js';
import { findOnPath, pathFoldersUnderTmp } from '../../src/workspace/sandbox.js';
import { eventually, processAlive, tempWorkspace, toolRig } from './helpers.js';

let dirs: Awaited<ReturnType<typeof tempWorkspace>>;
beforeEach(async () => {
  dirs = await tempWorkspace();
});
afterEach(() => dirs.cleanup());

describe('run_command', () => {
  it('returns the exit code and output, in the working folder', async () => {
    await fs.mkdir(path.join(dirs.root, 'sub'));
    const rig = await toolRig(dirs.root);
    const result = await rig.call('run_command', { command: 'pwd; echo oops >&2; exit 3', cwd: 'sub' });
    expect(result.content).toBe(`$ pwd; echo oops >&2; exit 3\n${path.join(dirs.root, 'sub')}\noops\n[exit code 3]`);
    expect(result.isError).toBe(true);
    expect(result.data).toMatchObject({ exitCode: 3, timedOut: false, cancelled: false, cwd: 'sub', sandbox: 'none' });
  });

  it('cuts the middle of long output and marks it', async () => {
    const rig = await toolRig(dirs.root);
    const result = await rig.call('run_command', {
      command: "node -e \"process.stdout.write('a'.repeat(20000) + 'b'.repeat(20000) + 'c'.repeat(20000))\"",
    });
    expect(result.content).toMatch(/^\$ node -e .*\naaaa/);
    expect(result.content).toMatch(/\n\[… 30000 characters cut from the middle …\]\n/);
    expect(result.content).toMatch(/cccc\n\[exit code 0\]$/);
    expect((result.data as { cutChars: number }).cutChars).toBe(30_000);
    expect(capMiddle('abcdef', 4)).toEqual({ text: 'ab\n[… 2 characters cut from the middle …]\nef', cut: 2 });
  });

  it('a timeout kills the whole process tree', async () => {
    const pidFile = path.join(dirs.root, 'grandchild.pid');
    const rig = await toolRig(dirs.root);
    const result = await rig.call('run_command', {
      command: `sleep 300 & echo $! > ${pidFile}; wait`,
      timeout_ms: 300,
    });
    expect(result.content).toMatch(
      /\[timed out after 300 ms: the command and every process it started were stopped\]$/,
    );
    expect(result.data).toMatchObject({ exitCode: null, timedOut: true });
    const grandchild = Number(await fs.readFile(pidFile, 'utf8'));
    await eventually(() => !processAlive(grandchild));
  });

  it('cancelling during a long command kills its process tree, grandchild included', async () => {
    const pidFile = path.join(dirs.root, 'grandchild.pid');
    let leader: number | undefined;
    const rig = await toolRig(dirs.root, { onCommandSpawn: (pid) => (leader = pid) });
    const controller = new AbortController();
    const running = rig.call(
      'run_command',
      { command: `sh -c 'sleep 300 & echo $! > ${pidFile}; wait'` },
      controller.signal,
    );
    await eventually(async () => (await fs.readFile(pidFile, 'utf8').catch(() => '')).trim() !== '');
    const grandchild = Number(await fs.readFile(pidFile, 'utf8'));
    expect(processAlive(grandchild)).toBe(true);
    controller.abort();
    const result = await running;
    expect(result.content).toMatch(/\[cancelled: the command and every process it started were stopped\]$/);
    await eventually(() => !processAlive(grandchild));
    expect(leader !== undefined && processAlive(leader)).toBe(false);
  });

  it('background jobs do not outlive the command', async () => {
    const pidFile = path.join(dirs.root, 'background.pid');
    const rig = await toolRig(dirs.root);
    const result = await rig.call('run_command', {
      command: `sleep 300 > /dev/null 2>&1 & echo $! > ${pidFile}; echo done`,
    });
    expect(result.content).toContain('[exit code 0]');
    const background = Number(await fs.readFile(pidFile, 'utf8'));
    await eventually(() => !processAlive(background));
  });
});

describe('the folders a sandbox keeps from PATH', () => {
  it('are the real folders under /tmp, not /tmp itself, relative entries or the project', async () => {
    const tools = await fs.mkdtemp('/tmp/parley-path-');
    try {
      await fs.mkdir(path.join(dirs.root, 'bin'));
      await fs.mkdir(path.join(tools, 'bin'));
      await fs.symlink(path.join(tools, 'bin'), path.join(tools, 'linked-bin'));
      const searchPath = [
        '/tmp',
        'relative/bin',
        path.join(dirs.root, 'bin'),
        path.join(tools, 'linked-bin'),
        '/usr/bin',
      ];
      expect(pathFoldersUnderTmp([...searchPath, '/missing'].join(':'), dirs.root)).toEqual([path.join(tools, 'bin')]);
    } finally {
      await fs.rm(tools, { recursive: true, force: true });
    }
  });
});

const bwrap = checkSystemPart({
  name: 'bubblewrap',
  purpose: 'the run_command sandbox tests',
  install: 'apt-get install -y bubblewrap',
  present: () => findOnPath('bwrap') !== undefined,
});

describe.skipIf(bwrap.skip)('run_command in the bwrap sandbox', () => {
  it('the project is writable; writing outside it fails', async () => {
    const info = await detectSandbox();
    expect(info.kind).toBe('bwrap');
    const rig = await toolRig(dirs.root, { sandbox: 'auto' });
    const inside = await rig.call('run_command', { command: 'echo made > inside.txt && cat inside.txt' });
    expect(inside.content).toContain('made');
    expect(inside.data).toMatchObject({ exitCode: 0, sandbox: 'bwrap' });
    // /var/tmp is writable outside the sandbox and on the read-only root inside it.
    const elsewhere = await fs.mkdtemp('/var/tmp/parley-sandbox-');
    try {
      const outside = await rig.call('run_command', {
        command: `echo escaped > ${path.join(elsewhere, 'escaped.txt')}`,
      });
      expect(outside.content).toMatch(/Read-only file system/);
      expect((outside.data as { exitCode: number }).exitCode).not.toBe(0);
      await expect(fs.access(path.join(elsewhere, 'escaped.txt'))).rejects.toThrow();
      // The project's sibling folder (here under /tmp, which is private inside) is out of reach too.
      await rig.call('run_command', { command: `echo escaped > ${path.join(dirs.outside, 'escaped.txt')}` });
      await expect(fs.access(path.join(dirs.outside, 'escaped.txt'))).rejects.toThrow();
    } finally {
      await fs.rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('Parley’s data folder is hidden from commands', async () => {
    await fs.mkdir(path.join(dirs.root, '.parley'));
    await fs.writeFile(path.join(dirs.root, '.parley', 'token'), 'secret');
    const rig = await toolRig(dirs.root, { sandbox: 'auto' });
    const result = await rig.call('run_command', { command: 'cat .parley/token' });
    expect(result.content).toMatch(/No such file/);
  });

  it('a network connection fails unless the role allows the network', async () => {
    const server = net.createServer((socket) => socket.end('hello\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const connect = `node -e "require('net').connect(${port}, '127.0.0.1').on('data', (d) => { console.log('got ' + d); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(7); })"`;
    try {
      const closed = await toolRig(dirs.root, { sandbox: 'auto' });
      const refused = await closed.call('run_command', { command: connect });
      expect(refused.content).toMatch(/ECONNREFUSED/);
      expect((refused.data as { exitCode: number }).exitCode).toBe(7);
      const open = await toolRig(dirs.root, { sandbox: 'auto', network: true });
      const allowed = await open.call('run_command', { command: connect });
      expect(allowed.content).toContain('got hello');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('the folders PATH names under /tmp stay reachable, read-only', async () => {
    expect((await detectSandbox()).kind).toBe('bwrap');
    // A user's folder of links to their tools under /tmp, the only place PATH finds node.
    const tools = await fs.mkdtemp('/tmp/parley-path-');
    await fs.symlink(process.execPath, path.join(tools, 'node'));
    const saved = process.env['PATH'];
    process.env['PATH'] = `${tools}:/nonexistent`;
    try {
      const rig = await toolRig(dirs.root, { sandbox: 'auto' });
      const result = await rig.call('run_command', {
        command: `command -v node && node -e "console.log(40 + 2)" && : > ${tools}/written`,
      });
      expect(result.content).toContain(`${tools}/node\n42\n`);
      expect(result.content).toMatch(/Read-only file system/);
      await expect(fs.access(path.join(tools, 'written'))).rejects.toThrow();
    } finally {
      process.env['PATH'] = saved;
      await fs.rm(tools, { recursive: true, force: true });
    }
  });

  it('the sandbox is found with a PATH whose only folder holds bwrap', async () => {
    const tools = await fs.mkdtemp('/tmp/parley-path-');
    await fs.symlink(findOnPath('bwrap')!, path.join(tools, 'bwrap'));
    const saved = process.env['PATH'];
    process.env['PATH'] = tools;
    try {
      // A fresh module: detection runs once per process.
      vi.resetModules();
      const fresh = await import('../../src/workspace/sandbox.js');
      expect(await fresh.detectSandbox()).toMatchObject({ kind: 'bwrap', binary: path.join(tools, 'bwrap') });
    } finally {
      process.env['PATH'] = saved;
      await fs.rm(tools, { recursive: true, force: true });
    }
  });

  it('cancel kills a sandboxed command and what it started', async () => {
    const rig = await toolRig(dirs.root, { sandbox: 'auto' });
    const controller = new AbortController();
    const running = rig.call(
      'run_command',
      { command: 'sleep 300 & echo started > started.txt; wait' },
      controller.signal,
    );
    await eventually(async () =>
      (await fs.readFile(path.join(dirs.root, 'started.txt'), 'utf8').catch(() => '')).includes('started'),
    );
    controller.abort();
    expect((await running).content).toMatch(/\[cancelled/);
  });
});
