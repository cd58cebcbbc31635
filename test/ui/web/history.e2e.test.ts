import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { step } from '../../../src/backends/index.js';
import type { ProtocolClient } from '../../../src/protocol/index.js';
import { SCREENSHOTS } from './web-harness.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * The history tree in headless Chromium, against `parley serve`'s own server with file snapshots
 * on over a real project folder (the harness's temp folder, a shadow git beside it): rewinding
 * from a message with its confirmation, the `‹ 2/3 ›` switcher, edit and resend, files put back
 * (and a file the user changed listed, then overwritten on request), a rewind refused while a turn
 * runs, a checkpoint version made current again, and a fork opened from an answer.
 */
const web = useWebHarness({ fileSnapshots: {} });

/** The guide's pictures (docs/guides/user-interfaces.md), taken as the test goes. */
const DOCS_IMAGES = join(import.meta.dirname, '..', '..', '..', 'docs', 'images');

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

function userMessage(page: Page, text: string): Locator {
  return page.locator('[data-testid="blocks"] > [data-block-type="user_message"]', { hasText: text });
}

async function send(page: Page, text: string): Promise<void> {
  await page.locator('[data-testid="prompt"]').fill(text);
  await page.locator('[data-testid="send"]').click();
  await page
    .locator('[data-testid="blocks"] [data-block-type="assistant_text"]', { hasText: `Echo: ${text}` })
    .waitFor();
  await page.locator('[data-testid="send"]:not([disabled])').waitFor();
}

/** The texts of the user messages shown, in order. */
async function userTexts(page: Page): Promise<string[]> {
  const texts = await page.locator('[data-testid="blocks"] > [data-block-type="user_message"] .text').allInnerTexts();
  return texts.map((text) => text.trim());
}

/** A draft of `dev` on a new task, from a Node client: its channel, session and client. */
async function driverDraft(title: string): Promise<{ driver: ProtocolClient; sessionId: string }> {
  const harness = web.harness();
  const driver = await harness.client();
  const { task } = await driver.request('create_task', { project: harness.project, title });
  const { sessionId } = await driver.request('draft', { role: 'dev', project: harness.project, task: task.slug });
  await driver.request('set_permission_mode', { mode: 'bypassPermissions' });
  return { driver, sessionId };
}

/** The page on the driver's channel (as a reload of the window that drafted would be), the draft's session open. */
async function openOnChannel(driver: ProtocolClient, sessionId: string): Promise<Page> {
  const page = await web.harness().page();
  await page.addInitScript((channel) => sessionStorage.setItem('parley.channel', channel), driver.channelId!);
  await page.goto(web.harness().server.url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  await page.locator(`[data-session-id="${sessionId}"]`).first().click();
  await page.locator('[data-testid="blocks"] > [data-block-type="user_message"]').first().waitFor();
  return page;
}

async function turnsSettled(driver: ProtocolClient): Promise<void> {
  await web.harness().server.drafts.settled({ channelId: driver.channelId! });
}

describe.skipIf(web.part.skip)('the history tree in the web UI', () => {
  it('rewinds to before a message after a confirmation, switches branches with ‹ ›, and edits and resends a message', async () => {
    const page = await openConnected(web.harness(), 'history-conversation-failure');
    const form = page.locator('[data-testid="draft-form"]');
    await form.locator('select[name="role"]').selectOption('dev');
    await form.locator('select[name="project"]').selectOption(web.harness().project);
    await form.locator('select[name="task"]').selectOption('first-task');
    await form.locator('button[type="submit"]').click();
    await page.locator('[data-testid="draft-pill"]').waitFor();
    for (const text of ['First question.', 'Second question.', 'Third question.']) await send(page, text);
    expect(await page.locator('[data-testid="branch-switch"]').count()).toBe(0);

    // Rewind: the confirmation says what goes back, to where, and that nothing is deleted.
    const second = userMessage(page, 'Second question.');
    await second.hover();
    await second.locator('[data-testid="rewind"]').click();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    await dialog.waitFor();
    expect(await dialog.locator('h2').innerText()).toBe('Rewind to before message 2 of 3: “Second question.”');
    const summary = await dialog.locator('[data-testid="rewind-summary"]').innerText();
    expect(summary).toContain('it and what followed (2 turns) leave the active branch');
    expect(summary).toContain('Nothing is deleted');
    expect(summary).toContain("The project's files stay as they are.");
    expect(await dialog.locator('[data-testid="rewind-restore-conversation"]').isChecked()).toBe(true);
    expect(await dialog.locator('[data-testid="rewind-restore-files"]').isDisabled()).toBe(false);
    await page.screenshot({ path: join(DOCS_IMAGES, 'web-history-rewind.png') });
    // Cancel changes nothing.
    await dialog.locator('[data-testid="rewind-cancel"]').click();
    expect(await userTexts(page)).toEqual(['First question.', 'Second question.', 'Third question.']);

    await second.hover();
    await second.locator('[data-testid="rewind"]').click();
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 1);
    expect(await userTexts(page)).toEqual(['First question.']);
    // The branch that was left is one ‹ away; the message is offered again in the prompt box.
    const switcher = page.locator('[data-testid="branch-switch"]');
    await switcher.waitFor();
    await switcher.locator('[data-testid="branch-count"]', { hasText: /^2\/2$/ }).waitFor();
    expect(await switcher.innerText()).toContain('You rewound here');
    expect(await page.locator('[data-testid="prompt"]').inputValue()).toBe('Second question.');

    await send(page, 'Second question, asked differently.');
    expect(await userTexts(page)).toEqual(['First question.', 'Second question, asked differently.']);
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid="branch-switch"]')
          ?.nextElementSibling?.textContent?.includes('asked differently') === true,
    );
    await switcher.locator('[data-testid="branch-count"]', { hasText: /^2\/2$/ }).waitFor();

    // ‹ goes to the branch that was left, › back.
    await switcher.locator('[data-testid="branch-previous"]').click();
    await userMessage(page, 'Third question.').waitFor();
    expect(await userTexts(page)).toEqual(['First question.', 'Second question.', 'Third question.']);
    await switcher.locator('[data-testid="branch-count"]', { hasText: /^1\/2$/ }).waitFor();
    await switcher.locator('[data-testid="branch-next"]').focus();
    await page.keyboard.press('Enter');
    await userMessage(page, 'asked differently').waitFor();
    expect(await userTexts(page)).toEqual(['First question.', 'Second question, asked differently.']);

    // Edit and resend the first message: a new branch from the start, the old one kept.
    const first = userMessage(page, 'First question.');
    await first.hover();
    await first.locator('[data-testid="edit"]').click();
    const editor = page.locator('[data-testid="message-editor"] textarea');
    expect(await editor.inputValue()).toBe('First question.');
    await editor.fill('First question, edited.');
    await page.screenshot({ path: join(SCREENSHOTS, 'history-edit.png') });
    await editor.press('Enter');
    await page.locator('[data-block-type="assistant_text"]', { hasText: 'Echo: First question, edited.' }).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 1);
    expect(await userTexts(page)).toEqual(['First question, edited.']);
    const top = page.locator('[data-testid="branch-switch"][data-fork-seq="-1"]');
    await top.waitFor();
    await top.locator('[data-testid="branch-count"]', { hasText: /^2\/2$/ }).waitFor();
    for (const close of await page.locator('[data-testid="notices"] button.close').all()) await close.click();
    await page.screenshot({ path: join(DOCS_IMAGES, 'web-history-switcher.png') });
    await top.locator('[data-testid="branch-previous"]').click();
    await userMessage(page, 'asked differently').waitFor();
    expect(await userTexts(page)).toEqual(['First question.', 'Second question, asked differently.']);
    await page.context().close();
  }, 120_000);

  it('rewinds the files with the conversation, lists a file the user changed, and overwrites it only when asked', async () => {
    const harness = web.harness();
    const notes = join(harness.root, 'notes.txt');
    await writeFile(notes, 'before\n');
    const { driver, sessionId } = await driverDraft('Files task');
    for (const turn of [1, 2]) {
      harness.backend.enqueue([
        step.tool('write_file', { path: 'notes.txt', content: `turn ${turn}\n` }),
        step.text(`Wrote turn ${turn}.`),
      ]);
      await driver.request('submit_prompt', { content: `Write turn ${turn}.` });
      await turnsSettled(driver);
    }
    expect(await readFile(notes, 'utf8')).toBe('turn 2\n');
    const page = await openOnChannel(driver, sessionId);

    const second = userMessage(page, 'Write turn 2.');
    await second.hover();
    await second.locator('[data-testid="rewind"]').click();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    await dialog.locator('[data-testid="rewind-restore-both"]').check();
    expect(await dialog.locator('[data-testid="rewind-summary"]').innerText()).toContain(
      "The project's files go back to how they were before this message was sent.",
    );
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 1);
    expect(await readFile(notes, 'utf8')).toBe('turn 1\n');
    expect(await userTexts(page)).toEqual(['Write turn 1.']);

    // The user edits the file; a files rewind to before the first message lists it and changes nothing.
    await writeFile(notes, 'my own edit\n');
    const first = userMessage(page, 'Write turn 1.');
    await first.hover();
    await first.locator('[data-testid="rewind"]').click();
    await dialog.locator('[data-testid="rewind-restore-files"]').check();
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    const error = dialog.locator('[data-testid="rewind-error"][data-code="RESTORE_CONFLICT"]');
    await error.waitFor().catch(async (caught: unknown) => {
      console.log('DIALOG', await dialog.innerText());
      throw caught;
    });
    expect(await error.locator('[data-testid="rewind-conflicts"]').innerText()).toContain('notes.txt');
    expect(await readFile(notes, 'utf8')).toBe('my own edit\n');
    await page.screenshot({ path: join(SCREENSHOTS, 'history-restore-conflict.png') });
    await error.locator('[data-testid="rewind-overwrite"]').click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await readFile(notes, 'utf8')).toBe('before\n');
    // A files rewind leaves the conversation.
    expect(await userTexts(page)).toEqual(['Write turn 1.']);
    await page.context().close();
  }, 120_000);

  it('shows a rewind refused while a turn runs, and its button stops the turn', async () => {
    const harness = web.harness();
    const { driver, sessionId } = await driverDraft('Busy task');
    await driver.request('submit_prompt', { content: 'A quick one.' });
    await turnsSettled(driver);
    const page = await openOnChannel(driver, sessionId);
    const halfway = gate();
    harness.backend.enqueue([step.text('Working on it…'), step.wait(halfway.promise), step.text('Done.')]);
    await page.locator('[data-testid="prompt"]').fill('A quick one, again.');
    await page.locator('[data-testid="send"]').click();
    await page.locator('[data-block-type="assistant_text"]', { hasText: 'Working on it' }).waitFor();

    const first = userMessage(page, 'A quick one.');
    await first.hover();
    await first.locator('[data-testid="rewind"]').click();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    const error = dialog.locator('[data-testid="rewind-error"][data-code="TURN_IN_PROGRESS"]');
    await error.waitFor();
    expect(await error.innerText()).toMatch(/cancel it first|turn/i);
    expect(await userTexts(page)).toEqual(['A quick one.', 'A quick one, again.']);
    await error.locator('[data-testid="rewind-stop-turn"]').click();
    await turnsSettled(driver);
    halfway.open();
    // Stopped: the same rewind now goes through.
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    await dialog.waitFor({ state: 'hidden' });
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 0);
    await page.context().close();
  }, 120_000);

  it('makes an earlier checkpoint version current again from the inspector, and rewinds to a checkpoint', async () => {
    const { driver, sessionId } = await driverDraft('Checkpoint task');
    // Long enough that a checkpoint is smaller than what it summarizes (a compaction must shrink the request).
    const notes = ' The parser took empty strings, dates without a year and two-digit years.'.repeat(40);
    for (const content of [`Plan the change.${notes}`, `Make the change.${notes}`]) {
      await driver.request('submit_prompt', { content });
      await turnsSettled(driver);
      await driver.request('force_compact', { sessionId }, { timeoutMs: 0 });
    }
    const page = await openOnChannel(driver, sessionId);
    const checkpoints = page.locator('[data-testid="checkpoints"]');
    await checkpoints.locator('[data-testid="current-checkpoint"][data-version="2"]').waitFor();
    const earlier = checkpoints.locator('details.checkpoint[data-version="1"]');
    await earlier.locator('summary').click();
    const restore = earlier.locator('[data-testid="restore-checkpoint"]');
    expect(await restore.isDisabled()).toBe(false);
    await restore.click();
    await checkpoints
      .locator('[data-testid="current-checkpoint"][data-version="3"]', { hasText: 'copy of v1' })
      .waitFor();
    const versions = await driver.request('get_checkpoint', { sessionId });
    expect(versions.versions.map((version) => version.version)).toEqual([1, 2, 3]);
    expect(versions.current?.restoredFrom).toBe(1);

    // The first compaction's notice has a rewind of its own: through that checkpoint.
    const notice = page.locator('[data-testid="blocks"] > [data-subtype="compaction"]').first();
    await notice.hover();
    await notice.locator('[data-testid="rewind"]').click();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    expect(await dialog.locator('h2').innerText()).toBe('Rewind to checkpoint v1 (after 1 turn)');
    await dialog.locator('[data-testid="rewind-confirm"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 1);
    expect((await userTexts(page)).map((text) => text.slice(0, 16))).toEqual(['Plan the change.']);
    // Version 2 summarizes the branch that was left: it cannot be made current from here.
    await checkpoints.locator('details.checkpoint[data-version="2"] summary', { hasText: 'another branch' }).waitFor();
    await page.context().close();
  }, 120_000);

  it('forks from an answer into a new session that says where it came from, and the draft goes on in the fork', async () => {
    const { driver, sessionId } = await driverDraft('Fork task');
    for (const content of ['One.', 'Two.']) {
      await driver.request('submit_prompt', { content });
      await turnsSettled(driver);
    }
    const page = await openOnChannel(driver, sessionId);
    const forkFrom = async (text: string) => {
      const answer = page.locator('[data-testid="blocks"] > [data-block-type="assistant_text"]', { hasText: text });
      await answer.hover();
      await answer.locator('[data-testid="fork"]').click();
      const dialog = page.locator('dialog[data-testid="fork-dialog"]');
      expect(await dialog.locator('[data-testid="fork-backend"] option').first().innerText()).toBe(
        'Same back end (scripted)',
      );
      await dialog.locator('[data-testid="fork-confirm"]').click();
    };
    /** The user messages of a session's active branch, as the server has them. */
    const userMessagesOf = async (id: string) => {
      const { events } = await driver.request('get_events', { sessionId: id });
      return events.flatMap((event) =>
        event.type === 'block_complete' && event.block.type === 'user_message' ? [event.block.content] : [],
      );
    };
    const selectedId = () =>
      page.evaluate(() => document.querySelector('.session-row[aria-current="true"]')?.getAttribute('data-session-id'));

    await forkFrom('Echo: One.');
    await page.waitForFunction((source) => {
      const selected = document.querySelector('.session-row[aria-current="true"]')?.getAttribute('data-session-id');
      return selected !== null && selected !== undefined && selected !== source;
    }, sessionId);
    const origin = page.locator('[data-testid="forked-from"]');
    await origin.waitFor();
    expect(await origin.innerText()).toMatch(/Forked from .* at seq \d+/);
    await page.waitForFunction(() => document.querySelectorAll('[data-block-type="user_message"]').length === 1);
    expect(await userTexts(page)).toEqual(['One.']);
    // This window had the source's draft: it goes on in the fork, and the prompt box sends there.
    const forkId = (await selectedId())!;
    expect(forkId).not.toBe(sessionId);
    await expect.poll(async () => (await driver.request('get_draft_status')).session?.sessionId).toBe(forkId);
    await page.locator('[data-testid="prompt"]').waitFor();
    expect((await driver.request('get_session', { sessionId: forkId })).session.forkedFrom?.sessionId).toBe(sessionId);
    await send(page, 'Three, in the fork.');
    expect(await userTexts(page)).toEqual(['One.', 'Three, in the fork.']);
    await turnsSettled(driver);
    expect(await userMessagesOf(forkId)).toEqual(['One.', 'Three, in the fork.']);
    expect(await userMessagesOf(sessionId)).toEqual(['One.', 'Two.']);

    // The source opens from the header, unchanged; a fork of it (not this window's draft any more)
    // opens read-only, and Continue here (once this window's draft is undrafted) drafts on it.
    await origin.locator('[data-testid="open-fork-source"]').click();
    await userMessage(page, 'Two.').waitFor();
    expect(await userTexts(page)).toEqual(['One.', 'Two.']);
    await forkFrom('Echo: Two.');
    await page.waitForFunction((source) => {
      const selected = document.querySelector('.session-row[aria-current="true"]')?.getAttribute('data-session-id');
      return selected !== null && selected !== undefined && selected !== source;
    }, sessionId);
    const secondFork = (await selectedId())!;
    expect(secondFork).not.toBe(forkId);
    await page.locator('[data-testid="prompt-note"]', { hasText: 'this window has a draft already' }).waitFor();
    await page.locator('[data-testid="undraft"]').click();
    await page.locator('[data-testid="continue-fork"]').click();
    await expect.poll(async () => (await driver.request('get_draft_status')).session?.sessionId).toBe(secondFork);
    await page.locator('[data-testid="prompt"]').waitFor();
    await send(page, 'Four, continued here.');
    await turnsSettled(driver);
    expect(await userMessagesOf(secondFork)).toEqual(['One.', 'Two.', 'Four, continued here.']);
    expect(await userMessagesOf(forkId)).toEqual(['One.', 'Three, in the fork.']);
    expect(await userMessagesOf(sessionId)).toEqual(['One.', 'Two.']);
    await page.context().close();
  }, 120_000);

  it('on a phone, the actions and the switcher are 44 px tap targets and the dialog fits the screen', async () => {
    const { driver, sessionId } = await driverDraft('Phone task');
    for (const content of ['Small screen.', 'Still small.']) {
      await driver.request('submit_prompt', { content });
      await turnsSettled(driver);
    }
    const { events } = await driver.request('get_events', { sessionId });
    const firstAnswer = events.find(
      (event) => event.type === 'block_complete' && event.block.type === 'assistant_text',
    ) as Extract<(typeof events)[number], { type: 'block_complete' }>;
    await driver.request('rewind', { sessionId, to: firstAnswer.block.id });
    await driver.request('submit_prompt', { content: 'Another way.' });
    await turnsSettled(driver);
    const context = await web.harness().browser.newContext({
      viewport: { width: 390, height: 844 },
      hasTouch: true,
      isMobile: true,
    });
    await context.addInitScript((channel) => sessionStorage.setItem('parley.channel', channel), driver.channelId!);
    const page = await context.newPage();
    await page.goto(web.harness().server.url);
    await page.locator(`[data-session-id="${sessionId}"]`).first().click();
    const switcher = page.locator('[data-testid="branch-switch"]');
    await switcher.waitFor();
    for (const button of [
      switcher.locator('[data-testid="branch-previous"]'),
      userMessage(page, 'Small screen.').locator('[data-testid="rewind"]'),
      userMessage(page, 'Small screen.').locator('[data-testid="fork"]'),
    ]) {
      const box = (await button.boundingBox())!;
      expect(box.height).toBeGreaterThanOrEqual(44);
      expect(box.width).toBeGreaterThanOrEqual(44);
    }
    await userMessage(page, 'Small screen.').locator('[data-testid="rewind"]').tap();
    const dialog = page.locator('dialog[data-testid="rewind-dialog"]');
    await dialog.waitFor();
    const box = (await dialog.boundingBox())!;
    expect(box.width).toBeLessThanOrEqual(390);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(SCREENSHOTS, 'history-phone.png') });
    await context.close();
  }, 120_000);
});
