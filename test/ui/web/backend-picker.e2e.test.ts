import { describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../../src/backends/index.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * Carrying a conversation to another back end from the web page: the prompt box offers
 * the server's back ends (`list_backends`), the draft's own selected; choosing another sends the next
 * message there (`submit_prompt { backend }`), the page shows the move and the new back end's answer,
 * and the picker then shows the draft on its new back end. One the server cannot make is offered
 * disabled, with the reason.
 */
const home = createScriptedBackend({ defaultTurn: () => [step.text('Answered on the home back end.')] });
const reviewer = createScriptedBackend({
  name: 'reviewer-bot',
  idPrefix: 'reviewer',
  defaultTurn: () => [step.text('Answered by the reviewer bot.')],
});
const web = useWebHarness({
  backendFor: (name) => {
    if (name === 'reviewer-bot') return reviewer as AgentBackend;
    if (name === undefined || name === 'scripted') return home as AgentBackend;
    throw new Error(`${name} is not configured here: set its key in parley.config.json.`);
  },
  backendNames: ['scripted', 'reviewer-bot', 'claude-sdk'],
});

describe.skipIf(web.part.skip)('the web page moves a draft to another back end', () => {
  it('offers the back ends, sends the next message to the chosen one, and shows the draft on it', async () => {
    const page = await openConnected(web.harness());
    const form = page.locator('[data-testid="draft-form"]');
    await form.locator('select[name="role"]').selectOption('dev');
    await form.locator('select[name="project"]').selectOption(web.harness().project);
    await form.locator('select[name="task"]').selectOption('first-task');
    await form.locator('button[type="submit"]').click();
    await page.locator('[data-testid="draft-pill"]').waitFor();

    const picker = page.locator('[data-testid="backend-picker"]');
    await picker.waitFor({ state: 'visible' });
    expect(await picker.inputValue()).toBe('scripted');
    const options = picker.locator('option');
    expect(await options.allInnerTexts()).toEqual(['scripted', 'reviewer-bot', 'claude-sdk (not available)']);
    expect(await options.nth(2).isDisabled()).toBe(true);
    expect(await options.nth(2).getAttribute('title')).toContain('claude-sdk is not configured here');

    const blocks = page.locator('[data-testid="blocks"]');
    await page.locator('[data-testid="prompt"]').fill('First question.');
    await page.locator('[data-testid="send"]').click();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Answered on the home back end.' }).waitFor();
    await page.locator('[data-testid="send"]:not([disabled])').waitFor();

    await picker.selectOption('reviewer-bot');
    await page.locator('[data-testid="prompt"]').fill('Second question, for the reviewer.');
    await page.locator('[data-testid="send"]').click();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Answered by the reviewer bot.' }).waitFor();
    // The move is in the conversation, and the picker now shows the draft's new back end.
    expect(await blocks.innerText()).toContain('reviewer-bot');
    await page.waitForFunction(
      () =>
        (document.querySelector('[data-testid="backend-picker"]') as HTMLSelectElement | null)?.value ===
        'reviewer-bot',
    );
    expect(reviewer.calls).toHaveLength(1);
    expect(home.calls).toHaveLength(1);
    await page.context().close();
  });
});
