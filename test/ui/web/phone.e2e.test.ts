import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFailed } from 'vitest';
import type { Page } from 'playwright-core';
import { step } from '../../../src/backends/index.js';
import { CODE_REVIEW, StandInRunService } from '../../helpers/stand-in-run-service.js';
import { SCREENSHOTS } from './web-harness.js';
import { useWebHarness } from './web-test-hooks.js';

/**
 * The web UI on a phone, in headless Chromium with a phone's viewport (390×844) and touch: the
 * page opens a `parley pair` link, trades the code for a device token of its own, and with it sees
 * and answers, with one tap each, an approval asked in another window's channel and a run's
 * question; the page is never wider than the screen. The picture in the user-interfaces guide is
 * taken here.
 */

const runs = new StandInRunService({ review: CODE_REVIEW });
const web = useWebHarness({ runService: runs });
const PHONE = { width: 390, height: 844 };
const DOCS_IMAGES = join(import.meta.dirname, '..', '..', '..', 'docs', 'images');

/** How wide the page is: wider than the screen means the user scrolls sideways. */
function pageWidth(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

describe.skipIf(web.part.skip)('the web UI on a phone', () => {
  it('pairs from the link, then answers another channel’s approval and a run’s question with one tap each, never wider than the screen', async () => {
    const harness = web.harness();
    // Another window (the desk) drafts an agent that asks before a command.
    const desk = await harness.client();
    const { sessionId } = await desk.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([
      step.text(
        'The parser fails on dates like `2026-12-02T06:00:00+01:00`:\n\n```ts\nconst parsed = parseDate(input, { zone: "Europe/Amsterdam", strict: true, fallback: undefined });\n```\n\nI will run the tests next.',
      ),
    ]);
    await desk.request('submit_prompt', { content: 'Why does the date parser fail on offsets?' });
    await harness.server.drafts.settled({ channelId: desk.channelId! });
    harness.backend.enqueue([
      step.tool('run_command', { command: 'ls -a' }),
      step.text('The folder has the project files.'),
    ]);
    const requested = new Promise<string>((resolve) =>
      desk.on('permission_requested', ({ request }) => resolve(request.requestId)),
    );
    await desk.request('submit_prompt', { content: 'List the project folder.' });
    const requestId = await requested;
    const run = await runs.startRun({ workflow: 'review' });
    const pairing = await desk.request('create_pairing');

    const context = await harness.browser.newContext({
      viewport: PHONE,
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
      colorScheme: 'light',
      userAgent:
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Mobile Safari/537.36',
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => harness.logs.push({ level: 'page', message: String(error) }));
    onTestFailed(async () => {
      await page.screenshot({ path: join(SCREENSHOTS, 'phone-failure.png') }).catch(() => undefined);
    });

    // 1. The pairing link: a device token of its own, and the code leaves the address bar.
    await page.goto(pairing.links[0]!);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    expect(new URL(page.url()).hash).toBe('');
    const stored = await page.evaluate(() => localStorage.getItem('parley.device'));
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(stored).not.toBe(harness.server.token);
    const devices = (await desk.request('list_devices')).devices;
    expect(devices).toEqual([expect.objectContaining({ name: 'Android phone', connections: 1 })]);

    // 2. The desk's approval, on the phone's own channel: the whole dialog on screen, one tap answers.
    const dialog = page.locator('dialog[data-testid="approval"]');
    await dialog.locator('#approval-title', { hasText: 'ls -a' }).waitFor();
    await page.goto(`${new URL(pairing.links[0]!).origin}/#session=${sessionId}`);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.locator('.block.assistant', { hasText: 'The parser fails on dates' }).waitFor();
    await dialog.locator('#approval-title', { hasText: 'ls -a' }).waitFor();
    expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);
    for (const button of await dialog.locator('button[data-decision]').all()) {
      const box = (await button.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
      expect(box.y + box.height).toBeLessThanOrEqual(PHONE.height);
      expect(box.height).toBeGreaterThanOrEqual(44);
    }
    await mkdir(DOCS_IMAGES, { recursive: true });
    await page.screenshot({ path: join(DOCS_IMAGES, 'web-ui-phone-approval.png') });
    const resolved = new Promise<string>((resolve) =>
      desk.on('permission_resolved', (params) => resolve(params.requestId)),
    );
    await dialog.locator('button[data-decision="allow_once"]').tap();
    expect(await resolved).toBe(requestId);
    await page.waitForFunction(
      () => !(document.querySelector('dialog[data-testid="approval"]') as HTMLDialogElement | null)?.open,
    );
    await harness.server.drafts.settled({ channelId: desk.channelId! });

    // 3. The conversation comes first, readable, and the page does not scroll sideways.
    await page.locator('.block.assistant', { hasText: 'The folder has the project files.' }).waitFor();
    const chat = (await page.locator('.chat').boundingBox())!;
    const sessions = (await page.locator('.sidebar').boundingBox())!;
    expect(chat.y).toBeLessThan(sessions.y);
    expect(chat.width).toBeLessThanOrEqual(PHONE.width);
    const fontSize = await page
      .locator('.block.assistant .text')
      .first()
      .evaluate((element) => parseFloat(getComputedStyle(element).fontSize));
    expect(fontSize).toBeGreaterThanOrEqual(15);
    expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await page.screenshot({ path: join(DOCS_IMAGES, 'web-ui-phone.png') });

    // 4. A run's question, opened by its link: one tap on a choice answers it.
    await page.evaluate((id) => (location.hash = `run=${id}`), run.id);
    const card = page.locator(`[data-testid="run"][data-run-id="${run.id}"]`);
    const choice = card.locator('[data-testid="run-choice"]', { hasText: 'approve' });
    await choice.waitFor();
    expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);
    const box = (await choice.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    await page.screenshot({ path: join(SCREENSHOTS, 'phone-run.png') });
    await choice.tap();
    await card.locator('[data-testid="run-status"]', { hasText: 'complete' }).waitFor();
    expect(await runs.getRun(run.id)).toMatchObject({ status: 'complete', result: { approved: true } });
    await context.close();
  });

  it('is installable: a manifest and icons, served with their content types', async () => {
    const base = web.harness().server.url.replace(/\/\?.*$/, '');
    const manifest = await fetch(`${base}/manifest.webmanifest`);
    expect(manifest.headers.get('content-type')).toBe('application/manifest+json; charset=utf-8');
    const body = (await manifest.json()) as { display: string; icons: Array<{ src: string; type: string }> };
    expect(body.display).toBe('standalone');
    for (const icon of body.icons) {
      const response = await fetch(`${base}/${icon.src}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(icon.type);
      const bytes = Buffer.from(await response.arrayBuffer());
      if (icon.type === 'image/png') expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
    }
    const page = await web.harness().page();
    await page.goto(`${base}/`);
    const linked = await page.evaluate(async () => {
      const link = document.querySelector('link[rel="manifest"]') as HTMLLinkElement;
      const response = await fetch(link.href);
      return response.ok;
    });
    expect(linked).toBe(true);
    await page.context().close();
  });

  it('a used pairing link says so and connects to nothing', async () => {
    const harness = web.harness();
    const owner = await harness.client();
    const pairing = await owner.request('create_pairing');
    const first = await fetch(new URL('/pair', pairing.links[0]!), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: pairing.code }),
    });
    expect(first.status).toBe(200);
    const page = await harness.page();
    await page.goto(pairing.links[0]!);
    await page.locator('.connect-detail', { hasText: 'was used already' }).waitFor();
    expect(await page.evaluate(() => localStorage.getItem('parley.device'))).toBeNull();
    await page.context().close();
  });
});
