import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../../src/backends/index.js';
import { CHROMIUM, checkSystemPart } from '../../helpers/system-part.js';
import { SCREENSHOTS, startWebHarness, type WebHarness } from './web-harness.js';

/**
 * The user steps into a conversation between agents from the web page: an analyst
 * (scripted back end) opens a conversation with a dev (another scripted back end) and waits; the
 * page shows the thread live with a note field; a note the server refuses shows its error and
 * reaches nobody, a note it takes reaches the dev with the analyst's next message.
 */

const chromiumPart = checkSystemPart(CHROMIUM);
const analyst = createScriptedBackend({ idPrefix: 'analyst' });
const dev = createScriptedBackend({ idPrefix: 'dev', defaultTurn: () => [step.text('Dev: keep it in memory.')] });
let harness: WebHarness;

beforeAll(async () => {
  if (chromiumPart.skip) return;
  harness = await startWebHarness({ backendFor: (name) => (name === 'dev-backend' ? dev : analyst) as AgentBackend });
  await mkdir(join(harness.dataDir, 'roles'), { recursive: true });
  await writeFile(
    join(harness.dataDir, 'roles', 'dev.md'),
    '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
  );
}, 60_000);

afterAll(async () => {
  if (harness?.logs.length) console.log(harness.logs.map((entry) => `${entry.level}: ${entry.message}`).join('\n'));
  await harness?.close();
});

describe.skipIf(chromiumPart.skip)('a conversation between agents in the web UI', () => {
  it('shows the thread live and sends the user’s note to both agents; a refused note shows the server’s error', async () => {
    const driver = await harness.client();
    const { sessionId } = await driver.request('draft', {
      role: 'product-analyst',
      project: harness.project,
      task: 'first-task',
    });
    const ref = { conversationId: '' };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'Caching' }),
      { type: 'wait', until: gate },
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Redis or memory?',
      }),
      step.tool('close_conversation', {
        get conversationId() {
          return ref.conversationId;
        },
      }),
      step.text('Memory, as the dev advised.'),
    ]);

    const page = await harness.page();
    onTestFailed(async () => {
      release();
      await page.screenshot({ path: join(SCREENSHOTS, 'conversation-failure.png') }).catch(() => undefined);
    });
    await page.addInitScript((channel) => sessionStorage.setItem('parley.channel', channel), driver.channelId!);
    await page.goto(harness.server.url);
    await page.locator(`[data-session-id="${sessionId}"]`).click();
    await driver.request('submit_prompt', { content: 'Discuss caching with a developer.' });

    // The thread arrives live while the analyst's turn is still running.
    const thread = page.locator('details.block.worker[data-status="running"]', { hasText: 'conversation with dev' });
    await thread.waitFor();
    ref.conversationId = (await thread.locator('.thread').getAttribute('data-thread-id'))!;
    expect(ref.conversationId).not.toBe('');
    await thread.locator('summary').first().click();
    const note = thread.locator('[data-testid="conversation-note"]');
    const error = thread.locator('[data-testid="conversation-note-error"]');

    // Refused (longer than the protocol takes): the server's error shows, the text stays, nobody reads it.
    const tooLong = 'x'.repeat(100_001);
    await note.fill(tooLong);
    await thread.locator('[data-testid="conversation-note-send"]').click();
    await error.filter({ hasText: /message/i }).waitFor();
    expect(await note.inputValue()).toBe(tooLong);

    // Taken: the field clears, the error goes, and the dev reads it with the next message.
    await note.fill('Keep it in memory for now.');
    await thread.locator('[data-testid="conversation-note-send"]').click();
    await page.waitForFunction(
      () => (document.querySelector('[data-testid="conversation-note"]') as HTMLInputElement | null)?.value === '',
    );
    expect(await error.isHidden()).toBe(true);
    await thread
      .locator('.block.user', { hasText: 'Keep it in memory for now.' })
      .locator('.who', { hasText: 'You · note to both agents' })
      .waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'conversation-note.png') });
    release();
    await harness.server.drafts.settled({ channelId: driver.channelId! });

    expect(dev.calls).toHaveLength(1);
    expect(dev.calls[0]!.prompt).toContain('[A note from the user to both of you: Keep it in memory for now.]');
    expect(dev.calls[0]!.prompt).not.toContain('xxxxx');
    // The reply streams into the thread; once the conversation ends the note field goes with it.
    const closed = page.locator(
      `details.block.worker[data-status="success"]:has(.thread[data-thread-id="${ref.conversationId}"])`,
    );
    await closed.locator('[data-block-type="assistant_text"]', { hasText: 'Dev: keep it in memory.' }).waitFor();
    await closed
      .locator('.block.user', { hasText: 'Redis or memory?' })
      .locator('.who', { hasText: 'From product-analyst' })
      .waitFor();
    expect(await closed.locator('[data-testid="conversation-note"]').count()).toBe(0);
    await page.context().close();
  }, 120_000);
});
