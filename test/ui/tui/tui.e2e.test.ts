import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkSystemPart, TMUX } from '../../helpers/system-part.js';
import { startServeProcess, type ServeProcess } from '../../server/serve-process.js';
import { Terminal } from './tmux-terminal.js';
import { SAMPLE_ANSWER } from './render/sample-answer.js';

/**
 * `parley` in a real terminal: tmux runs it from source against the scripted back end in a temp
 * project folder; the test types into it with send-keys and reads the screen with capture-pane,
 * waiting on what a user would see (polling, bounded by a deadline), never on fixed sleeps.
 */

const tmux = checkSystemPart(TMUX);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function project(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'parley-tui-e2e-'));
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  return folder;
}

describe.skipIf(tmux.skip)('parley in a terminal (tmux)', () => {
  it('starts a server for the project, drafts, talks, shows /context and undrafts', async () => {
    const folder = await project();
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder);

    let screen = await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');
    expect(screen).toContain('No model back end is configured, so Parley uses the scripted back end');
    expect(screen).toContain('run `parley backends` to check.');

    await terminal.type('/task new Demo');
    await terminal.waitFor('Created task demo ("Demo")');
    await terminal.type('/draft dev');
    screen = await terminal.waitFor('Parley ● Connected | Draft: dev | Context: 0% | Turns: 0 | $0.00');
    expect(screen).toContain('Drafted dev on task demo');

    await terminal.type('Hello from tmux, are you there?');
    screen = await terminal.waitFor(/Parley ● Connected \| Draft: dev \| Context: (<1|\d+)% \| Turns: 1 \| \$0\.00/);
    expect(screen).toContain('❯ Hello from tmux, are you there?');
    expect(screen).toContain('Echo: Hello from tmux, are you there?');

    await terminal.type('/context');
    screen = await terminal.waitFor(/Turns +1\n/);
    expect(screen).toContain('Context · dev on task demo · scripted / scripted-1');
    expect(screen).toMatch(/Input tokens +\d+ \(last request/);
    expect(screen).toContain('Context window 200,000');
    expect(screen).toMatch(/Sections +role \d+ · context \d+ · checkpoint \d+ · conversation \d+ · next prompt 0/);
    expect(screen).toMatch(/Compaction +at 90,000 tokens \(90% of the 100,000-token budget\): [\d,]+ tokens to go/);
    expect(screen).toMatch(/Cost +\$0\.00 cumulative/);

    await terminal.type('/undraft');
    screen = await terminal.waitFor(/Undrafted dev \(task demo\): 1 turn, \$0\.00, \d+(s|m \d\ds)\./);
    expect(screen).toContain('Parley ● Connected | No draft | Agents: 0');

    await terminal.type('/quit');
    await terminal.exited();
    expect(await terminal.screen()).toContain('Parley stopped.');
    // The in-process server stopped with the TUI; the channel stays for the next start.
    expect(existsSync(join(folder, '.parley', 'server.json'))).toBe(false);
    expect((await readFile(join(folder, '.parley', 'tui-channel'), 'utf8')).trim()).toMatch(/^tui-[0-9a-f-]{36}$/);
  }, 240_000);

  it('on a fresh folder the first thing typed is a message: one step makes the task, drafts the default role and answers', async () => {
    const folder = await project();
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder);
    await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');

    await terminal.type('Fix the login bug, it fails after the redirect');
    let screen = await terminal.waitFor('Echo: Fix the login bug, it fails after the redirect');
    // Ink wraps the long line itself: read it as one.
    expect(screen.replace(/\s+/g, ' ')).toContain(
      "Created task fix-the-login-bug-it-fails-after-the-redirect and drafted product-analyst on it (the project's default role; /undraft to change).",
    );
    expect(screen).toContain('❯ Fix the login bug, it fails after the redirect');
    expect(screen).not.toContain('✗');
    screen = await terminal.waitFor(/Parley ● Connected \| Draft: product-analyst \| Context: (<1|\d+)% \| Turns: 1/);
    const task = JSON.parse(
      await readFile(
        join(folder, '.parley', 'tasks', 'fix-the-login-bug-it-fails-after-the-redirect', 'task.json'),
        'utf8',
      ),
    ) as { title: string };
    expect(task.title).toBe('Fix the login bug, it fails after the redirect');
  }, 240_000);

  it('starts its own server when server.json names a live process that is not a Parley server', async () => {
    const folder = await project();
    // A port nobody listens on, and a pid that is alive (this test's): what a crash leaves once the pid is reused.
    const port = await new Promise<number>((done) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address() as { port: number };
        probe.close(() => done(address.port));
      });
    });
    await mkdir(join(folder, '.parley'), { recursive: true });
    const stale = {
      url: `http://127.0.0.1:${port}/?token=${'0'.repeat(64)}`,
      wsUrl: `ws://127.0.0.1:${port}/rpc`,
      host: '127.0.0.1',
      port,
      token: '0'.repeat(64),
      pid: process.pid,
      protocolVersion: 1,
      projectRoot: folder,
      startedAt: new Date().toISOString(),
    };
    await writeFile(join(folder, '.parley', 'server.json'), JSON.stringify(stale));
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder);
    const screen = await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');
    expect(screen).toContain('No model back end is configured');
    const written = JSON.parse(await readFile(join(folder, '.parley', 'server.json'), 'utf8')) as {
      port: number;
      pid: number;
    };
    expect(written.port).not.toBe(port);
    expect(written.pid).not.toBe(process.pid);
  }, 240_000);

  it('`parley tui --url` attaches to a server by its URL and token, and says why when the token is wrong', async () => {
    const folder = await project();
    const server = await startServeProcess(folder);
    cleanups.push(async () => {
      server.child.kill('SIGKILL');
      await server.exited;
    });
    const elsewhere = await project();
    const wrong = new Terminal();
    cleanups.push(() => wrong.close());
    await wrong.open(elsewhere, {}, ['tui', '--url', `${server.info.wsUrl}?token=${'f'.repeat(64)}`]);
    // The title bar may turn to Disconnected a frame before the reason is drawn: wait for the reason.
    const refused = await wrong.waitFor(/Could not connect to ws:\/\/127\.0\.0\.1:\d+\/rpc: .*401/);
    expect(refused).toContain('Parley ○ Disconnected | No draft');
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(elsewhere, {}, ['tui', '--url', server.info.url, '--channel', 'e2e-url']);
    const screen = await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');
    expect(screen).toContain(`attached to ${server.info.wsUrl}`);
    await terminal.type('/project');
    await terminal.waitFor(
      new RegExp(`› parley-tui-e2e-\\w+ +${folder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +\\(this folder\\)`),
    );
    // Attaching leaves the folder it runs in alone.
    expect(existsSync(join(elsewhere, '.parley'))).toBe(false);
  }, 240_000);

  it('attaches to a running `parley serve`, and when it restarts reconnects and carries on with nothing lost or doubled', async () => {
    const folder = await project();
    let server: ServeProcess = await startServeProcess(folder);
    cleanups.push(async () => {
      server.child.kill('SIGKILL');
      await server.exited;
    });
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder);

    let screen = await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');
    // Attached, not started: the notice comes from a server this terminal started.
    expect(screen).not.toContain('No model back end is configured');
    await terminal.type('/task new Restart');
    await terminal.waitFor('Created task restart');
    await terminal.type('/draft qa');
    await terminal.waitFor('Draft: qa | Context: 0% | Turns: 0');
    await terminal.type('first message');
    await terminal.waitFor('Echo: first message');
    await terminal.waitFor('Turns: 1');

    server.child.kill('SIGKILL');
    await server.exited;
    await terminal.waitFor('Parley ● Reconnecting | Draft: qa');
    server = await startServeProcess(folder);
    await terminal.waitFor('Parley ● Connected | Draft: qa');
    await terminal.type('second message');
    screen = await terminal.waitFor('Echo: second message');
    await terminal.waitFor('Turns: 2');
    screen = await terminal.screen();
    expect(screen.split('❯ first message').length - 1).toBe(1);
    expect(screen.split('Echo: first message').length - 1).toBe(1);
    expect(screen.split('❯ second message').length - 1).toBe(1);
    expect(screen.split('Echo: second message').length - 1).toBe(1);
  }, 240_000);

  it('shows answers as Markdown, edits as coloured diffs and commands as terminal blocks', async () => {
    const folder = await project();
    const script = join(folder, 'answers.json');
    const before = ['export const cookie = {', "  sameSite: 'strict',", '  path: "/",', '};'].join('\n');
    const after = ['export const cookie = {', "  sameSite: 'lax',", '  secure: true,', '  path: "/",', '};'].join('\n');
    await writeFile(
      script,
      JSON.stringify({
        turns: [
          [
            { type: 'text', text: SAMPLE_ANSWER },
            {
              type: 'tool',
              name: 'Edit',
              input: { file_path: 'src/cookie.ts', old_string: before, new_string: after },
              output: 'The file src/cookie.ts has been updated.',
            },
            {
              type: 'tool',
              name: 'Bash',
              input: { command: 'npm test -- cookie' },
              output: 'PASS test/cookie.test.ts\nTests  3 passed (3)',
            },
            { type: 'text', text: 'The cookie is **fixed** and the `cookie` tests pass.' },
          ],
        ],
      }),
    );
    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder, { PARLEY_SCRIPTED_SCRIPT: script });
    await terminal.waitFor('Parley ● Connected | No draft | Agents: 0');

    // One turn: a second message sent the moment the first turn's end shows can still find the server's turn running.
    await terminal.type('Why does login fail after the redirect? Fix it and run the tests.');
    await terminal.waitFor(
      (screen) =>
        screen.includes('Turns: 1') && screen.includes('the cookie tests pass.') && !screen.includes('Esc interrupts'),
    );

    const coloured = await terminal.coloured();
    const screen = coloured.replace(/\u001b\[[0-9;:]*m/g, '');
    // Markdown, not its markers.
    expect(screen).not.toContain('**');
    expect(screen).not.toContain('```');
    expect(screen).not.toMatch(/^#+ /m);
    expect(screen).toContain('Login fix');
    expect(screen).toContain('• auth.ts: the cookie is set with SameSite=Lax');
    expect(screen).toContain('☐ tell the team');
    // The table, drawn with box characters.
    expect(screen).toMatch(/┌─+┬─+┬─+┐/);
    expect(screen).toMatch(/│ test\/auth\.test\.ts +│ +40 │ a redirect that keeps the session +│/);
    expect(screen).toMatch(/└─+┴─+┴─+┘/);
    // Code without its fence, highlighted.
    expect(screen).toContain('  export function cookie(name: string): string {');
    expect(coloured).toMatch(/\u001b\[[0-9;]*34mexport/);
    // The edit as a diff, - red and + green; the command as a terminal block.
    expect(screen).toContain('✓ Edit(src/cookie.ts)');
    expect(screen).toContain('⎿ Updated src/cookie.ts (+2 −1)');
    expect(coloured).toMatch(/\u001b\[[0-9;]*31m2 - {3}sameSite: 'strict',/);
    expect(coloured).toMatch(/\u001b\[[0-9;]*32m2 \+ {3}sameSite: 'lax',/);
    expect(coloured).toMatch(/\u001b\[[0-9;]*32m3 \+ {3}secure: true,/);
    expect(screen).toContain('⎿ $ npm test -- cookie');
    expect(screen).toContain('│ Tests  3 passed (3)');
    expect(screen).toContain('The cookie is fixed and the cookie tests pass.');
  }, 240_000);
});
