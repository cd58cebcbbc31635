import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFailed } from 'vitest';
import { step } from '../../../src/backends/index.js';
import type { ToolResultBlock } from '../../../src/conversation/index.js';
import { SCREENSHOTS } from './web-harness.js';
import { useWebHarness } from './web-test-hooks.js';

const web = useWebHarness();

/**
 * Approving the workspace tools in headless Chromium: a dev draft (scripted back end) asks before
 * a write and three commands; the page, attached to the draft's channel after the first request
 * was made, shows each in a dialog and answers with its buttons, each way. A denied command
 * leaves the file system as it was.
 */

describe.skipIf(web.part.skip)('approvals in the web UI', () => {
  it('shows a waiting request on connect, then each as it comes; allow once, deny and allow always each do what they say', async () => {
    const notes = join(web.harness().root, 'notes.txt');
    await writeFile(notes, 'first\n');
    const driver = await web.harness().client();
    const { sessionId } = await driver.request('draft', {
      role: 'dev',
      project: web.harness().project,
      task: 'first-task',
    });
    web.harness().backend.enqueue([
      step.tool('write_file', { path: 'notes.txt', content: 'second\n' }),
      step.tool('run_command', { command: 'rm notes.txt' }),
      step.tool('run_command', { command: 'ls -a' }),
      // Allowed always above: not asked again.
      step.tool('run_command', { command: 'ls -l notes.txt' }),
      step.text('Done.'),
    ]);
    const firstRequest = new Promise<void>((resolve) => driver.on('permission_requested', () => resolve()));
    await driver.request('submit_prompt', { content: 'Update the notes.' });
    await firstRequest;

    // The page joins the draft's channel (as a reload of the window that drafted would).
    const page = await web.harness().page();
    onTestFailed(async () => {
      await page.screenshot({ path: join(SCREENSHOTS, 'approvals-failure.png') }).catch(() => undefined);
    });
    await page.addInitScript((channel) => sessionStorage.setItem('parley.channel', channel), driver.channelId!);
    await page.goto(web.harness().server.url);
    const dialog = page.locator('dialog[data-testid="approval"]');

    // 1. The write, found with get_permissions on connect: its diff, coloured.
    await dialog.locator('#approval-title', { hasText: 'Overwrite notes.txt' }).waitFor();
    expect(await dialog.evaluate((element) => (element as HTMLDialogElement).open)).toBe(true);
    await expect(dialog.locator('.diff-del').innerText()).resolves.toContain('first');
    await expect(dialog.locator('.diff-add').innerText()).resolves.toContain('second');
    const added = await dialog.locator('.diff-add').evaluate((element) => getComputedStyle(element).backgroundColor);
    const removed = await dialog.locator('.diff-del').evaluate((element) => getComputedStyle(element).backgroundColor);
    expect(added).not.toBe(removed);
    await page.screenshot({ path: join(SCREENSHOTS, 'approval-edit.png') });
    await dialog.locator('button[data-decision="allow_once"]').click();

    // 2. The command, pushed while attached: the command and its folder; denied.
    await dialog.locator('#approval-title', { hasText: 'rm notes.txt' }).waitFor();
    await expect(dialog.locator('.terminal-command').innerText()).resolves.toContain('rm notes.txt');
    await expect(dialog.locator('.terminal-cwd').innerText()).resolves.toBe('in .');
    await expect(dialog.locator('button[data-decision="allow_always"]').innerText()).resolves.toBe(
      'Allow always: commands starting with "rm"',
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'approval-command.png') });
    await dialog.locator('button[data-decision="deny"]').click();

    // 3. Allowed always for "ls"; the fourth call is not asked.
    await dialog.locator('#approval-title', { hasText: 'ls -a' }).waitFor();
    await dialog.locator('button[data-decision="allow_always"]').click();
    await web.harness().server.drafts.settled({ channelId: driver.channelId! });
    await page.waitForFunction(
      () => !(document.querySelector('dialog[data-testid="approval"]') as HTMLDialogElement | null)?.open,
    );

    // The write happened, the denied rm did not.
    expect(await readFile(notes, 'utf8')).toBe('second\n');
    const { events } = await driver.request('get_events', { sessionId });
    const results = events.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'tool_result' ? [event.block as ToolResultBlock] : [],
    );
    expect(results).toHaveLength(4);
    expect(results[1]!.content).toMatch(/^Denied by the user/);
    expect(results[3]!.content).toContain('notes.txt');
    expect((await driver.request('get_permissions')).requests).toEqual([]);
    await page.context().close();
  }, 120_000);
});
