import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, onTestFailed } from 'vitest';
import type { ServerOptions } from '../../../src/server/index.js';
import { CHROMIUM, checkSystemPart, type SystemPartCheck } from '../../helpers/system-part.js';
import { SCREENSHOTS, startWebHarness, type WebHarness } from './web-harness.js';

// The vitest side of the web harness (hooks, failure screenshots), apart from web-harness.ts, which
// the web bench imports outside vitest.

/**
 * One web harness for a test file: started before its tests (unless Chromium is missing, where the
 * file's `describe.skipIf(part.skip)` skips them), its page logs printed and everything closed after.
 * `harness()` is the running harness inside a test.
 */
export function useWebHarness(extra: Partial<ServerOptions> = {}): { part: SystemPartCheck; harness(): WebHarness } {
  const part = checkSystemPart(CHROMIUM);
  let running: WebHarness | undefined;
  beforeAll(async () => {
    if (!part.skip) running = await startWebHarness(extra);
  }, 60_000);
  afterAll(async () => {
    if (running?.logs.length) console.log(running.logs.map((entry) => `${entry.level}: ${entry.message}`).join('\n'));
    await running?.close();
  });
  return {
    part,
    harness() {
      if (!running) throw new Error('The web harness is not running (Chromium is missing, or beforeAll failed).');
      return running;
    },
  };
}

/** Opens the page with the server's token, as the URL `parley serve` prints, and waits until it is connected; a failing test leaves a screenshot named `failure`. */
export async function openConnected(harness: WebHarness, failure = 'failure'): Promise<Page> {
  const page = await harness.page();
  await page.goto(harness.server.url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  // What the user saw when a step failed.
  onTestFailed(async () => {
    await page.screenshot({ path: join(SCREENSHOTS, `${failure}.png`) }).catch(() => undefined);
  });
  return page;
}
