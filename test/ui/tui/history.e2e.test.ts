import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../../src/backends/index.js';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { checkSystemPart, TMUX } from '../../helpers/system-part.js';
import { startTestServer, type TestServer } from '../../server/helpers.js';
import { Terminal } from './tmux-terminal.js';

/**
 * The way back in a real terminal: `parley tui --url` (tmux) attached to an in-test server whose
 * dev draft runs on the scripted back end. The test types and presses keys as a user would and
 * checks both the screen and what the server holds (the active branch, the files on disk).
 */

const tmux = checkSystemPart(TMUX);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  server: TestServer;
  driver: ProtocolClient;
  sessionId: string;
  terminal: Terminal;
  channel: string;
}

async function setup(options: Parameters<typeof startTestServer>[0] = {}): Promise<Setup> {
  const server = await startTestServer(options);
  cleanups.push(async () => {
    await server.stop();
    await fs.rm(server.root, { recursive: true, force: true });
  });
  const channel = 'e2e-history';
  const driver = await server.client({ channel });
  const { sessionId } = await driver.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
  const terminal = new Terminal();
  cleanups.push(() => terminal.close());
  await terminal.open(server.root, {}, ['tui', '--url', server.server.url, '--channel', channel]);
  await terminal.waitFor(/Draft: dev \| Context: [^|]+\| Turns: 0/);
  return { server, driver, sessionId, terminal, channel };
}

/** The user messages of the session's active branch, as the server reads it. */
async function activeMessages(driver: ProtocolClient, sessionId: string): Promise<string[]> {
  const { events } = await driver.request('get_events', { sessionId });
  return events.flatMap((event) =>
    event.type === 'block_complete' && event.block.type === 'user_message' ? [event.block.content] : [],
  );
}

async function say(terminal: Terminal, text: string, turns: number): Promise<void> {
  await terminal.type(text);
  await terminal.waitFor(new RegExp(`Turns: ${turns} \\|`));
}

describe.skipIf(tmux.skip)('going back in the terminal (tmux)', () => {
  it('Esc Esc opens the rewind picker; it rewinds the conversation, the message comes back to edit, and /branches switches back', async () => {
    const { driver, sessionId, terminal } = await setup();
    await say(terminal, 'first question', 1);
    await say(terminal, 'second question', 2);
    await say(terminal, 'third question', 3);
    await terminal.waitFor('Echo: third question');

    // Esc Esc on the empty prompt: the picker, the last message selected; Esc cancels it.
    await terminal.keys('Escape', 'Escape');
    let screen = await terminal.waitFor('Rewind: go back to before which message of yours?');
    expect(screen).toContain('1. first question');
    expect(screen).toContain('❯ 3. third question');
    await terminal.keys('Escape');
    await terminal.waitFor('Rewind cancelled: nothing was changed.');
    expect(await activeMessages(driver, sessionId)).toEqual(['first question', 'second question', 'third question']);

    // /rewind: ↑ to the second message, Enter, then the conversation.
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 3. third question');
    await terminal.keys('Up');
    await terminal.waitFor('❯ 2. second question');
    await terminal.keys('Enter');
    screen = await terminal.waitFor('Rewind to before "second question": what goes back?');
    expect(screen).toContain('1. The conversation');
    await terminal.keys('Enter');
    screen = await terminal.waitFor('Rewound the conversation to before "second question"');
    await terminal.waitFor(/Turns: 1 \|/);
    expect(await activeMessages(driver, sessionId)).toEqual(['first question']);
    // The message is back in the prompt: edited and sent, it starts a new branch.
    await terminal.waitFor('❯ second question');
    await terminal.press(', edited');
    await terminal.keys('Enter');
    await terminal.waitFor('Echo: second question, edited');
    await terminal.waitFor(/Turns: 2 \|/);
    expect(await activeMessages(driver, sessionId)).toEqual(['first question', 'second question, edited']);

    // /branches: the branch that was left and the new one; switch back to the old one.
    await terminal.type('/branches');
    screen = await terminal.waitFor('Branches of this conversation (2): switch to which?');
    expect(screen).toMatch(/❯ 2\. b\d+ \(active\)/);
    expect(screen).toMatch(/1\. b0 +from the start · 3 turns · \$0\.00 · .*"Echo: third question"/);
    await terminal.keys('Up', 'Enter');
    await terminal.waitFor(/Switched to branch b0: the conversation goes on from seq \d+/);
    await terminal.waitFor(/Turns: 3 \|/);
    expect(await activeMessages(driver, sessionId)).toEqual(['first question', 'second question', 'third question']);
    const { branches } = await driver.request('list_branches', { sessionId });
    expect(branches.map((branch) => [branch.id, branch.active])).toEqual([
      ['b0', true],
      [expect.stringMatching(/^b\d+$/), false],
    ]);
  }, 240_000);

  it('restores the files of a real folder from its snapshots, lists a file you changed and keeps it unless you overwrite it', async () => {
    const { server, driver, sessionId, terminal } = await setup({ fileSnapshots: {} });
    const notes = join(server.root, 'notes.txt');
    await fs.writeFile(notes, 'v0\n');
    await driver.request('set_permission_mode', { mode: 'acceptEdits' });
    server.backend.enqueue(
      [step.tool('write_file', { path: 'notes.txt', content: 'v1\n' }), step.text('Wrote v1.')],
      [step.tool('write_file', { path: 'notes.txt', content: 'v2\n' }), step.text('Wrote v2.')],
    );
    await say(terminal, 'Write v1', 1);
    await terminal.waitFor('Wrote v1.');
    await say(terminal, 'Write v2', 2);
    await terminal.waitFor('Wrote v2.');
    expect(await fs.readFile(notes, 'utf8')).toBe('v2\n');

    // The files only, back to when "Write v2" was sent: v1; the conversation stays.
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 2. Write v2');
    await terminal.keys('Enter');
    let screen = await terminal.waitFor('Rewind to before "Write v2": what goes back?');
    expect(screen).toContain('2. The files');
    await terminal.press('2');
    await terminal.waitFor('Restored 1 file: notes.txt.');
    expect(await fs.readFile(notes, 'utf8')).toBe('v1\n');
    expect(await activeMessages(driver, sessionId)).toEqual(['Write v1', 'Write v2']);

    // The user edits the file; both, back to "Write v1": the file is listed, and kept.
    await fs.writeFile(notes, 'mine\n');
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 2. Write v2');
    await terminal.keys('Up', 'Enter');
    await terminal.waitFor('Rewind to before "Write v1": what goes back?');
    await terminal.press('3');
    screen = await terminal.waitFor('You changed 1 file since the agent last touched them:');
    expect(screen).toContain('notes.txt');
    expect(screen).toContain('2. Overwrite them');
    await terminal.press('1');
    await terminal.waitFor('Nothing was restored: your changes stay, and so does the conversation.');
    expect(await fs.readFile(notes, 'utf8')).toBe('mine\n');
    expect(await activeMessages(driver, sessionId)).toEqual(['Write v1', 'Write v2']);

    // Again, overwriting: the file as it was before the first turn, and the conversation before it too.
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 2. Write v2');
    await terminal.keys('Up');
    await terminal.waitFor('❯ 1. Write v1');
    await terminal.keys('Enter');
    await terminal.waitFor('Rewind to before "Write v1": what goes back?');
    await terminal.press('3');
    await terminal.waitFor('You changed 1 file since the agent last touched them:');
    await terminal.press('2');
    await terminal.waitFor('Restored 1 file: notes.txt.');
    await terminal.waitFor('Rewound the conversation to before "Write v1"');
    await terminal.waitFor('❯ Write v1');
    expect(await fs.readFile(notes, 'utf8')).toBe('v0\n');
    expect(await activeMessages(driver, sessionId)).toEqual([]);
  }, 240_000);

  it('/fork goes on in a fork, the session it came from unchanged; a back end that does not exist is refused', async () => {
    const { driver, sessionId, terminal } = await setup();
    await say(terminal, 'before the fork', 1);

    await terminal.type('/fork nosuch');
    await terminal.waitFor(/✗ Could not fork: .*nosuch/);
    expect((await driver.request('get_draft_status')).session?.sessionId).toBe(sessionId);

    await terminal.type('/fork');
    const screen = await terminal.waitFor(
      /Forked the conversation into session (\S+), and the draft goes on in the fork/,
    );
    const fork = /Forked the conversation into session (\S+),/.exec(screen.replace(/\s+/g, ' '))![1]!;
    expect(fork).not.toBe(sessionId);
    await terminal.waitFor(/Draft: dev \| Context: [^|]+\| Turns: 1 \|/);
    await say(terminal, 'after the fork', 2);
    await terminal.waitFor('Echo: after the fork');

    expect((await driver.request('get_draft_status')).session?.sessionId).toBe(fork);
    expect(await activeMessages(driver, fork)).toEqual(['before the fork', 'after the fork']);
    expect(await activeMessages(driver, sessionId)).toEqual(['before the fork']);
    const { sessions } = await driver.request('list_sessions', {});
    expect(sessions.find((session) => session.sessionId === fork)?.forkedFrom).toMatchObject({ sessionId });

    // From the rewind picker: a fork up to before the chosen message, which comes back in the prompt.
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 2. after the fork');
    await terminal.keys('Enter');
    await terminal.waitFor('4. A fork from here');
    await terminal.press('4');
    const picked = await terminal.waitFor(
      /Forked the conversation at seq \d+ into session (\S+), and the draft goes on/,
    );
    const second = /at seq \d+ into session (\S+),/.exec(picked.replace(/\s+/g, ' '))![1]!;
    await terminal.waitFor('❯ after the fork');
    expect((await driver.request('get_draft_status')).session?.sessionId).toBe(second);
    expect(await activeMessages(driver, second)).toEqual(['before the fork']);
    expect(await activeMessages(driver, fork)).toEqual(['before the fork', 'after the fork']);
  }, 240_000);

  it('says why when nothing can go back: no file snapshots, a turn running, no checkpoint, a bad version', async () => {
    const { server, driver, sessionId, terminal } = await setup();
    await say(terminal, 'only message', 1);

    // No file snapshots on this server: files and both say why, the conversation still can.
    await terminal.type('/rewind');
    await terminal.waitFor('❯ 1. only message');
    await terminal.keys('Enter');
    let screen = await terminal.waitFor('Only the conversation can go back: this server keeps no file snapshots');
    await terminal.press('2');
    screen = await terminal.waitFor('✗ The files cannot go back: this server keeps no file snapshots');
    expect(screen).toContain('what goes back?');
    await terminal.keys('Escape');
    await terminal.waitFor('Rewind cancelled: nothing was changed.');
    expect(await activeMessages(driver, sessionId)).toEqual(['only message']);

    // A turn is running: the picker does not open, and /branches does not switch.
    let release!: () => void;
    server.backend.enqueue([
      step.wait(new Promise<void>((resolve) => (release = resolve))),
      step.text('Done waiting.'),
    ]);
    await terminal.type('wait for me');
    await terminal.waitFor('❯ wait for me');
    await terminal.type('/rewind');
    await terminal.waitFor('✗ A turn is running: press Esc to interrupt it (or wait for it to end), then try again.');
    await terminal.type('/branches b0');
    await terminal.waitFor((text) => (text.match(/✗ A turn is running/g) ?? []).length >= 2);
    release();
    await terminal.waitFor('Done waiting.');
    expect(await activeMessages(driver, sessionId)).toEqual(['only message', 'wait for me']);

    // Branches and checkpoints that do not exist.
    await terminal.type('/branches b999');
    await terminal.waitFor(/✗ Session "\S+" has no branch "b999"\. Its branches: b0 \(active\)/);
    await terminal.type('/checkpoints');
    await terminal.waitFor('No checkpoint yet: the conversation was never compacted (/compact writes one).');
    await terminal.type('/restore-checkpoint seven');
    await terminal.waitFor(
      '✗ Give a checkpoint version: /restore-checkpoint <version> (got "seven"). /checkpoints lists them.',
    );
    await terminal.type('/restore-checkpoint 7');
    screen = await terminal.waitFor(/✗ Session "\S+" has no checkpoint version 7/);
    expect(screen).toContain('its versions are none');

    // Two checkpoint versions (as two compactions write them), then /checkpoints makes the first current again.
    const { events } = await driver.request('get_events', { sessionId });
    for (const [index, event] of events.slice(0, 2).entries())
      await server.server.manager.store.writeCheckpoint(sessionId, {
        createdAt: new Date().toISOString(),
        trigger: 'manual',
        summary: { completed: [`part ${index + 1}`], inProgress: [], pending: [], decisions: [], blockers: [] },
        pinned: [],
        liveHandles: [],
        covers: { throughSeq: event.seq, messageCount: index + 1 },
        tokens: { checkpoint: 10, lastCompactionInput: 100, totalSaved: 90 },
      });
    await terminal.type('/checkpoints');
    screen = await terminal.waitFor('Checkpoints (2): make which version current again?');
    expect(screen).toMatch(/❯ 2\. v2 manual \(current\)/);
    await terminal.keys('Up');
    await terminal.waitFor(/❯ 1\. v1 manual/);
    await terminal.keys('Enter');
    await terminal.waitFor('Checkpoint v1 is current again, as v3 (a copy; no version was deleted).');
    const { current, versions } = await driver.request('get_checkpoint', { sessionId });
    expect(versions.map((checkpoint) => checkpoint.version)).toEqual([1, 2, 3]);
    expect(current).toMatchObject({ version: 3, restoredFrom: 1 });
  }, 240_000);
});
