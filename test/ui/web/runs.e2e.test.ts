import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CODE_REVIEW, RELEASE_NOTES, StandInRunService } from '../../helpers/stand-in-run-service.js';
import { SCREENSHOTS } from './web-harness.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * The web UI's Runs view in headless Chromium, against a server whose RunService is the
 * in-memory stand-in for the run core (test/helpers/stand-in-run-service.ts): a run's status, phases
 * and agents (linked to their sessions), its question with a button per choice or a text field, the
 * countdown to its deadline, and answering it.
 */

/** The code review's agents: the reviewer's session is made once the server is up. */
const review = {
  ...CODE_REVIEW,
  agents: [
    { key: 'reviewer', name: 'Reviewer', sessionId: '' },
    { key: 'fixer', name: 'Fixer' },
  ],
};
const runs = new StandInRunService({ review, notes: RELEASE_NOTES });
const web = useWebHarness({ runService: runs });

describe.skipIf(web.part.skip)('the Runs view of the web UI', () => {
  it('shows a waiting run with its phases, agents and question; counts down; a choice button answers it; an agent link opens its session', async () => {
    const manager = web.harness().server.manager;
    const reviewer = await manager.createSession({
      scope: { kind: 'workflow', harness: 'code-review', agent: 'reviewer' },
      agentType: 'reviewer',
      backend: 'scripted',
      title: 'code-review · reviewer',
    });
    const at = Date.now();
    await manager.appendEvents(reviewer.sessionId, [
      {
        type: 'block_complete',
        conversationId: 'main',
        block: { type: 'assistant_text', id: 'review', content: 'Two issues found in parse().', createdAt: at },
      },
    ]);
    review.agents[0]!.sessionId = reviewer.sessionId;
    const run = await runs.startRun({ workflow: 'review' });

    const page = await openConnected(web.harness(), 'runs-failure');
    await page.locator('[data-testid="runs-button"]', { hasText: '1 waiting' }).click();
    const card = page.locator(`[data-testid="run"][data-run-id="${run.id}"]`);
    await card.waitFor();
    expect(await card.locator('[data-testid="run-status"]').innerText()).toMatch(/waiting/i);
    expect(await card.locator('.run-phases li').allInnerTexts()).toEqual(['review', 'approval']);
    expect(await card.locator('.run-phases li.current').innerText()).toBe('approval');
    const question = card.locator('[data-testid="run-question"]');
    expect(await question.locator('.question-text').innerText()).toBe('Apply the suggested fixes?');
    expect(await question.locator('[data-testid="run-choice"]').allInnerTexts()).toEqual(['approve', 'reject']);
    const countdown = question.locator('[data-testid="run-countdown"]');
    const first = await countdown.innerText();
    expect(first).toMatch(/^Answer within \d+:\d\d\.$/);
    await expect.poll(() => countdown.innerText(), { timeout: 10_000 }).not.toBe(first);
    await page.screenshot({ path: join(SCREENSHOTS, 'runs-waiting.png') });

    await question.locator('[data-testid="run-choice"]', { hasText: 'approve' }).click();
    await card.locator('[data-testid="run-status"]', { hasText: 'complete' }).waitFor();
    expect(await card.locator('[data-testid="run-question"]').count()).toBe(0);
    expect(await card.locator('.run-result').innerText()).toContain('"approved": true');
    expect(await runs.getRun(run.id)).toMatchObject({ status: 'complete', result: { approved: true } });
    expect(await page.locator('[data-testid="runs-waiting"]').count()).toBe(0);

    await card.locator('[data-testid="run-agent"]', { hasText: 'Reviewer' }).click();
    await page.locator('[data-testid="runs-view"]').waitFor({ state: 'hidden' });
    await page.locator('[data-block-id="review"]', { hasText: 'Two issues found in parse().' }).waitFor();
    await page.context().close();
  });

  it("a question without choices takes text; a refused answer shows the validator's message and keeps waiting; one that arrives live shows", async () => {
    const page = await openConnected(web.harness(), 'runs-failure');
    await page.locator('[data-testid="runs-button"]').click();
    const run = await runs.startRun({ workflow: 'notes' });
    const card = page.locator(`[data-testid="run"][data-run-id="${run.id}"]`);
    await card.locator('[data-testid="run-question"]', { hasText: 'Which version is this?' }).waitFor();
    await page.locator('[data-testid="runs-waiting"]', { hasText: '1 waiting' }).waitFor();

    await card.locator('[data-testid="run-answer-text"]').fill('soon');
    await card.locator('[data-testid="run-answer-send"]').click();
    await card
      .locator('[data-testid="run-refused"]', { hasText: 'Refused: "soon" is not a version like 1.2.3.' })
      .waitFor();
    expect((await runs.getRun(run.id)).status).toBe('waiting');

    await card.locator('[data-testid="run-answer-text"]').fill('2.4.0');
    await card.locator('[data-testid="run-answer-send"]').click();
    await card.locator('[data-testid="run-status"]', { hasText: 'complete' }).waitFor();
    expect(await card.locator('[data-testid="run-refused"]').count()).toBe(0);
    expect((await runs.getRun(run.id)).result).toEqual({ version: '2.4.0' });
    await page.context().close();
  });

  it('another run updating does not take the focus from an answer being typed, nor swallow a click on a choice', async () => {
    const page = await openConnected(web.harness(), 'runs-failure');
    await page.locator('[data-testid="runs-button"]').click();
    const notes = await runs.startRun({ workflow: 'notes' });
    const review = await runs.startRun({ workflow: 'review' });
    const notesCard = page.locator(`[data-testid="run"][data-run-id="${notes.id}"]`);
    const reviewCard = page.locator(`[data-testid="run"][data-run-id="${review.id}"]`);
    await reviewCard.locator('[data-testid="run-choice"]').first().waitFor();
    const field = notesCard.locator('[data-testid="run-answer-text"]');
    await field.click();
    await page.keyboard.type('2.4');

    // A third run starts: every card is drawn again, and the one being typed in must not notice.
    const other = await runs.startRun({ workflow: 'notes' });
    await page.locator(`[data-testid="run"][data-run-id="${other.id}"]`).waitFor();
    await page.keyboard.type('.1');
    expect(await field.inputValue()).toBe('2.4.1');
    expect(await field.evaluate((element) => element === document.activeElement)).toBe(true);

    // A choice pressed while another run updates still answers.
    const approve = reviewCard.locator('[data-testid="run-choice"]', { hasText: 'approve' });
    const box = (await approve.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await runs.answerPrompt(other.id, (await runs.getRun(other.id)).pendingPrompts[0]!.promptId, '3.0.0');
    await page
      .locator(`[data-testid="run"][data-run-id="${other.id}"] [data-testid="run-status"]`, { hasText: 'complete' })
      .waitFor();
    await page.mouse.up();
    await reviewCard.locator('[data-testid="run-status"]', { hasText: 'complete' }).waitFor();
    expect((await runs.getRun(review.id)).result).toMatchObject({ approved: true });
    await page.context().close();
  });
});
