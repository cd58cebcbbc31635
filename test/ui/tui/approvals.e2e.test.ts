import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../../src/backends/index.js';
import type { ToolResultBlock } from '../../../src/conversation/index.js';
import { checkSystemPart, TMUX } from '../../helpers/system-part.js';
import { startTestServer, type TestServer } from '../../server/helpers.js';
import { Terminal } from './tmux-terminal.js';

/**
 * Approving the workspace tools in a real terminal: `parley tui --url` (tmux) attached to an
 * in-test server whose dev draft (scripted back end) asks before a write and three commands. The
 * first request is waiting when the TUI attaches (`get_permissions`); each is answered with its key,
 * each way, and a denied command leaves the file system unchanged.
 */

const tmux = checkSystemPart(TMUX);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(tmux.skip)('approvals in the terminal (tmux)', () => {
  it('y allows once, n denies (nothing changes), a allows always (not asked again)', async () => {
    const server: TestServer = await startTestServer();
    cleanups.push(async () => {
      await server.stop();
      await fs.rm(server.root, { recursive: true, force: true });
    });
    const notes = join(server.root, 'notes.txt');
    await fs.writeFile(notes, 'first\n');
    const channel = 'e2e-approvals';
    const driver = await server.client({ channel });
    const { sessionId } = await driver.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    server.backend.enqueue([
      step.tool('write_file', { path: 'notes.txt', content: 'second\n' }),
      step.tool('run_command', { command: 'rm notes.txt' }),
      step.tool('run_command', { command: 'ls -a' }),
      step.tool('run_command', { command: 'ls -l notes.txt' }),
      step.text('All done with the notes.'),
    ]);
    const firstRequest = new Promise<void>((resolve) => driver.on('permission_requested', () => resolve()));
    await driver.request('submit_prompt', { content: 'Update the notes.' });
    await firstRequest;

    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(server.root, {}, ['tui', '--url', server.server.url, '--channel', channel]);

    // 1. The write, waiting before the TUI attached: its diff, added green and removed red.
    let screen = await terminal.waitFor('Approve? Overwrite notes.txt');
    expect(screen).toContain('[y] allow once');
    expect(screen).toContain('[n] deny');
    const coloured = await terminal.colouredScreen();
    expect(coloured).toMatch(/\u001b\[32m\+second/);
    expect(coloured).toMatch(/\u001b\[31m-first/);
    await terminal.press('y');

    // 2. The command with its folder; denied.
    screen = await terminal.waitFor('Approve? Run');
    expect(screen).toContain('$ rm notes.txt');
    expect(screen).toContain('in .');
    expect(screen).toContain('[a] allow always: commands starting with "rm"');
    await terminal.press('n');

    // 3. Allowed always for "ls": the fourth command is not asked.
    await terminal.waitFor(/\$ ls -a/);
    await terminal.press('a');
    screen = await terminal.waitFor('All done with the notes.');
    await server.server.drafts.settled({ channelId: channel });
    screen = await terminal.waitFor((text: string) => !text.includes('Approve?'));

    expect(await fs.readFile(notes, 'utf8')).toBe('second\n');
    const { events } = await driver.request('get_events', { sessionId });
    const results = events.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'tool_result' ? [event.block as ToolResultBlock] : [],
    );
    expect(results).toHaveLength(4);
    expect(results[1]!.content).toMatch(/^Denied by the user/);
    expect(results[3]!.content).toContain('notes.txt');
    // The input line has the keys back.
    await terminal.press('hello');
    await terminal.waitFor('❯ hello');
  }, 240_000);
});
