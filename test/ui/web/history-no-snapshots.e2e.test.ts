import { describe, expect, it } from 'vitest';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * A server that keeps no file snapshots (the harness's default, as `parley serve --no-file-snapshots`):
 * the rewind confirmation offers the conversation only, says why the files cannot go back, and a
 * rewind made by another window (a Node client) reloads the page's view of the active branch.
 */
const web = useWebHarness();

describe.skipIf(web.part.skip)('the history tree on a server without file snapshots', () => {
  it('offers the files disabled with the reason, and follows a rewind made elsewhere', async () => {
    const harness = web.harness();
    const driver = await harness.client();
    const { sessionId } = await driver.request('draft', {
      role: 'dev',
      project: harness.project,
      task: 'first-task',
    });
    for (const content of ['Alpha.', 'Beta.']) {
      await driver.request('submit_prompt', { content });
      await harness.server.drafts.settled({ channelId: driver.channelId! });
    }
    const page = await openConnected(harness, 'history-no-snapshots-failure');
    await page.locator(`[data-session-id="${sessionId}"]`).first().click();
    const beta = page.locator('[data-testid="blocks"] > [data-block-type="user_message"]', { hasText: 'Beta.' });
    await beta.waitFor();
    // Another window's session: rewind and fork, but no edit (the prompt box is for this window's draft).
    await beta.hover();
    expect(await beta.locator('[data-testid="edit"]').count()).toBe(0);
    await beta.locator('[data-testid="rewind"]').click();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    await dialog.waitFor();
    expect(await dialog.locator('[data-testid="rewind-restore-files"]').isDisabled()).toBe(true);
    expect(await dialog.locator('[data-testid="rewind-restore-both"]').isDisabled()).toBe(true);
    expect(await dialog.locator('[data-testid="rewind-files-unavailable"]').innerText()).toContain(
      'this server keeps no file snapshots',
    );
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    // A rewind from the other window: the page reads the active branch again (history_changed).
    const { events } = await driver.request('get_events', { sessionId });
    const alphaAnswer = events.find(
      (event) => event.type === 'block_complete' && event.block.type === 'assistant_text',
    ) as Extract<(typeof events)[number], { type: 'block_complete' }>;
    await driver.request('rewind', { sessionId, to: alphaAnswer.block.id });
    await beta.waitFor({ state: 'detached' });
    const switcher = page.locator('[data-testid="branch-switch"]');
    await switcher.locator('[data-testid="branch-count"]', { hasText: /^2\/2$/ }).waitFor();
    // And back, from the page.
    await switcher.locator('[data-testid="branch-previous"]').click();
    await beta.waitFor();
    await page.context().close();
  }, 120_000);
});
