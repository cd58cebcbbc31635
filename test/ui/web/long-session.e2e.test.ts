import { describe, expect, it } from 'vitest';
import type { UnsequencedEvent } from '../../../src/conversation/index.js';
import { HISTORY_PAGING } from '../../../src/ui/web/history-pages.js';
import { useWebHarness } from './web-test-hooks.js';

/**
 * A session longer than the pages the web UI holds: it opens at its end (one read of the last
 * page), scrolling to the top reads older messages in and keeps the message the reader was looking
 * at where it was, and a search hit far back opens the session at that message.
 */
const web = useWebHarness();

/** Turns of a question and an answer: two events each. */
const TURNS = HISTORY_PAGING.pageSize * 3;

function turn(index: number): UnsequencedEvent[] {
  const at = 1_700_000_000_000 + index * 1_000;
  return [
    {
      type: 'block_complete',
      conversationId: 'main',
      block: { type: 'user_message', id: `u${index}`, content: `Question ${index}`, createdAt: at },
    },
    {
      type: 'block_complete',
      conversationId: 'main',
      block: {
        type: 'assistant_text',
        id: `a${index}`,
        content: index === 7 ? `Answer ${index} mentions the quokka` : `Answer ${index}`,
        createdAt: at,
      },
    },
  ];
}

describe.skipIf(web.part.skip)('a long session in the web UI', () => {
  it('opens at its end, reads older messages as the reader scrolls up, and opens at a search hit far back', async () => {
    const harness = web.harness();
    const manager = harness.server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'test', agent: 'long' },
      agentType: 'test',
      backend: 'scripted',
    });
    for (let from = 0; from < TURNS; from += 500)
      await manager.appendEvents(
        session.sessionId,
        Array.from({ length: 500 }, (_, index) => turn(from + index)).flat(),
      );

    const page = await harness.page();
    const reads: Array<Record<string, unknown>> = [];
    page.on('websocket', (socket) =>
      socket.on('framesent', ({ payload }) => {
        const frame = JSON.parse(String(payload)) as { method?: string; params?: Record<string, unknown> };
        if (frame.method === 'get_events' && frame.params?.['sessionId'] === session.sessionId)
          reads.push(frame.params);
      }),
    );
    await page.goto(harness.server.url);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.locator(`[data-session-id="${session.sessionId}"]`).first().click();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator(`[data-block-id="a${TURNS - 1}"]`).waitFor();
    // One read, of the last page: the first question of the session is not on the page.
    expect(reads).toEqual([
      { sessionId: session.sessionId, beforeSeq: Number.MAX_SAFE_INTEGER, limit: HISTORY_PAGING.pageSize },
    ]);
    expect(await page.locator('[data-block-id="u0"]').count()).toBe(0);
    const oldestShown = async () =>
      Number(
        (await blocks.locator('[data-block-type="user_message"]').first().getAttribute('data-block-id'))!.slice(1),
      );
    const firstOldest = await oldestShown();
    expect(firstOldest).toBeGreaterThan(TURNS - HISTORY_PAGING.pageSize);

    // Scrolled to the top, again and again: older messages come in, the one in view stays in view.
    const scroller = page.locator('[data-testid="blocks"]');
    let oldest = firstOldest;
    for (let round = 0; round < 100 && oldest > 0; round += 1) {
      const anchor = blocks.locator('[data-block-type="user_message"]').first();
      const anchorId = (await anchor.getAttribute('data-block-id'))!;
      await scroller.evaluate((element) => {
        element.scrollTop = 0;
        element.dispatchEvent(new Event('scroll'));
      });
      await expect.poll(oldestShown, { timeout: 30_000 }).toBeLessThan(oldest);
      oldest = await oldestShown();
      // The message the reader was at is still on screen, not pushed away by what came in above it.
      const box = await page.locator(`[data-block-id="${anchorId}"]`).boundingBox();
      const view = await scroller.boundingBox();
      expect(box).not.toBeNull();
      expect(box!.y + box!.height).toBeGreaterThan(view!.y);
      expect(box!.y).toBeLessThan(view!.y + view!.height);
    }
    expect(oldest).toBe(0);
    expect(reads.filter((params) => params['beforeSeq'] !== undefined).length).toBeGreaterThan(1);

    // Back down to the end: the newer pages, dropped while the reader went up, are read again.
    const newestShown = async () =>
      Number(
        (await blocks.locator('[data-block-type="assistant_text"]').last().getAttribute('data-block-id'))!.slice(1),
      );
    for (let round = 0; round < 20 && (await newestShown()) < TURNS - 1; round += 1) {
      const newest = await newestShown();
      await scroller.evaluate((element) => {
        element.scrollTop = element.scrollHeight;
        element.dispatchEvent(new Event('scroll'));
      });
      await expect.poll(newestShown, { timeout: 30_000 }).toBeGreaterThan(newest);
    }
    expect(await newestShown()).toBe(TURNS - 1);
    expect(await page.locator('[data-block-id="a7"]').count()).toBe(0);

    // A search hit at the eighth answer, far back from what is held: the session opens at that message.
    await page.locator('[data-testid="session-search"]').fill('quokka');
    await page.locator('[data-testid="search-hits"] .search-hit').first().click();
    await blocks.locator('[data-block-id="a7"]').waitFor();
    await page.context().close();
  }, 180_000);
});
