import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { step } from '../../../src/backends/index.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * A click is a mousedown and a mouseup on the same element. Parts of the page that update live (a
 * session's row, the inspector's action buttons) must keep the element under the pointer, or a
 * `session_updated` landing between the two swallows the click: the user clicked and nothing
 * happened. Each test presses the mouse, lets another window's turn update the session, then
 * releases it, and expects the click to have worked.
 */
const web = useWebHarness();

/** Long enough that a summary is worth it (a compaction that saves under 5 % is not kept). */
const NOTES =
  ' Notes from the review: the parser accepted empty strings and two-digit years, and its error did not name the input.'.repeat(
    40,
  );

async function draftedSession(driver: ProtocolClient, task: string): Promise<string> {
  await web.harness().server.drafts.createTask({ project: web.harness().project, title: task, slug: task });
  const { sessionId } = await driver.request('draft', { role: 'qa', project: web.harness().project, task });
  await turn(driver, `Review the fix.${NOTES}`);
  return sessionId;
}

/** Submits a prompt from the driver's window and resolves when its turn has ended. */
async function turn(driver: ProtocolClient, content: string): Promise<void> {
  const done = new Promise<void>((resolve) => {
    const off = driver.on('draft_status', () => {
      off();
      resolve();
    });
  });
  await driver.request('submit_prompt', { content });
  await done;
}

async function pressOn(page: Page, target: Locator): Promise<void> {
  await target.scrollIntoViewIfNeeded();
  const box = (await target.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
}

describe.skipIf(web.part.skip)('clicks on parts of the page that update live', () => {
  it('a Force compact pressed while the session updates still compacts', async () => {
    const driver = await web.harness().client();
    const sessionId = await draftedSession(driver, 'compact-click');
    const page = await openConnected(web.harness());
    const row = page.locator(`[data-session-id="${sessionId}"]`);
    await row.click();
    await page.locator('[data-testid="blocks"] [data-block-type="assistant_text"]').first().waitFor();
    const before = await row.innerText();

    await pressOn(page, page.locator('[data-testid="force-compact"]'));
    web
      .harness()
      .backend.enqueue([
        step.text('An answer from the other window.'),
        step.usage({ inputTokens: 9_000, outputTokens: 300 }),
      ]);
    await turn(driver, 'And the changelog?');
    // The update reached the page (the row's tokens changed) while the button was held down.
    await page.waitForFunction(
      ([id, text]) => (document.querySelector(`[data-session-id="${id}"]`) as HTMLElement | null)?.innerText !== text,
      [sessionId, before] as const,
    );
    await page.mouse.up();

    await page.locator('[data-testid="current-checkpoint"][data-version="1"]').waitFor();
    await row.filter({ hasText: '⟳ 1' }).waitFor();
    await page.context().close();
  });

  it('a session row pressed while that session updates still opens it', async () => {
    const driver = await web.harness().client();
    const live = await draftedSession(driver, 'row-click-live');
    const page = await openConnected(web.harness());
    const row = page.locator(`[data-session-id="${live}"]`);
    await row.waitFor();
    const before = await row.innerText();

    await pressOn(page, row);
    web
      .harness()
      .backend.enqueue([step.text('Another answer.'), step.usage({ inputTokens: 12_000, outputTokens: 400 })]);
    await turn(driver, 'One more round.');
    await page.waitForFunction(
      ([id, text]) => (document.querySelector(`[data-session-id="${id}"]`) as HTMLElement | null)?.innerText !== text,
      [live, before] as const,
    );
    await page.mouse.up();

    await page.locator(`[data-session-id="${live}"][aria-current="true"]`).waitFor();
    await page
      .locator('[data-testid="blocks"] [data-block-type="assistant_text"]', { hasText: 'Another answer.' })
      .waitFor();
    expect(await row.innerText()).not.toBe(before);
    await page.context().close();
  });
});
