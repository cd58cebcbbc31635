/**
 * `npm run soak -- --huge-session [--events 1000000]` (soak.ts): a session of that many events
 * opened in the web UI (headless Chromium, in-process server on the file store). Measured: the
 * time from the click to the frame that shows the newest block; the page's JavaScript heap and DOM
 * size once it is shown (Chrome's own Performance metrics); this process's peak RSS (server and
 * bench together); and how promptly the server answers another client while the page reads
 * (`list_projects` every 250 ms), and the time from opening the page to the first rows of its session list. The page must show the newest block, and the other client must
 * be answered throughout. What the numbers say about bounds is in bench/README.md.
 */
import type { UnsequencedEvent } from '../src/conversation/index.js';
import { createSessionManager } from '../src/sessions/index.js';
import { startWebHarness } from '../test/ui/web/web-harness.js';
import { table } from './stats.js';
import { turnEvents } from './web.bench.js';

export interface HugeSessionOptions {
  events: number;
  log: (line: string) => void;
}

export const hugeSessionDefaults = { events: 1_000_000 };

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

export async function runHugeSession(options: HugeSessionOptions): Promise<{ report: string; passed: boolean }> {
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 200);
  let written = 0;
  let turn = 0;
  let lastAnswerId = '';
  let sessionId = '';
  let writeS = 0;
  // Written before the server starts, by a manager of its own, as a server that restarted finds it:
  // the page's open reads it from the store, not from a conversation this process already holds.
  const harness = await startWebHarness(
    {},
    {
      beforeStart: async ({ root, dataDir }) => {
        const manager = await createSessionManager({ dataDir, projectRoot: root });
        try {
          const session = await manager.createSession({
            scope: { kind: 'workflow', harness: 'bench', agent: 'huge' },
            agentType: 'bench',
            backend: 'scripted',
          });
          sessionId = session.sessionId;
          const writeStarted = performance.now();
          while (written < options.events) {
            const batch: UnsequencedEvent[] = [];
            while (batch.length < 5_000 && written + batch.length < options.events) {
              const events = turnEvents(turn).slice(0, options.events - written - batch.length);
              // The newest answer written: the last turn may be cut before its answer.
              if (events.some((event) => event.type === 'block_complete' && event.block.id === `a${turn}`))
                lastAnswerId = `a${turn}`;
              turn += 1;
              batch.push(...events);
            }
            await manager.appendEvents(sessionId, batch);
            written += batch.length;
            if (written % 100_000 < 5_000) options.log(`${written.toLocaleString('en-US')} events written`);
          }
          writeS = (performance.now() - writeStarted) / 1000;
        } finally {
          await manager.close();
        }
      },
    },
  );
  try {
    global.gc?.();
    const afterWrite = process.memoryUsage().rss;
    options.log(`session ${sessionId}: ${written} events, ${turn} turns, in ${writeS.toFixed(0)} s`);

    const other = await harness.client();
    const page = await harness.page();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const opened = performance.now();
    await page.goto(harness.server.url);
    await page.locator(`[data-session-id="${sessionId}"]`).waitFor({ timeout: 60_000 });
    const firstRowsS = (performance.now() - opened) / 1000;
    const before = await metrics(cdp);

    const answers: number[] = [];
    let reading = true;
    const pinger = (async () => {
      while (reading) {
        const started = performance.now();
        await other.request('list_projects');
        answers.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const clicked = performance.now();
    await page.locator(`[data-session-id="${sessionId}"]`).click();
    let shown = false;
    try {
      await page.locator(`[data-block-id="${lastAnswerId}"]`).waitFor({ state: 'attached', timeout: 900_000 });
      shown = true;
    } catch (error) {
      options.log(`the newest block was not shown: ${String(error)}`);
    }
    const openS = (performance.now() - clicked) / 1000;
    // The page's other reads of the session (its request breakdown, which counts the whole
    // conversation's tokens) go on after the newest block is shown: the other client is asked until they end.
    let breakdownS: number | undefined;
    try {
      await page
        .locator('.inspector .stack, [data-testid="breakdown-unavailable"]')
        .first()
        .waitFor({ state: 'attached', timeout: 900_000 });
      breakdownS = (performance.now() - clicked) / 1000;
    } catch (error) {
      options.log(`the request breakdown was not shown: ${String(error)}`);
    }
    reading = false;
    await pinger;
    const after = await metrics(cdp);
    const dom = await page.evaluate(() => document.getElementsByTagName('*').length);
    const sorted = [...answers].sort((a, b) => a - b);
    const worst = sorted.at(-1) ?? 0;
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const rows = [
      [
        'events in the session',
        written.toLocaleString('en-US'),
        `${turn.toLocaleString('en-US')} turns, written in ${writeS.toFixed(0)} s`,
      ],
      ['page open → first session rows', `${(firstRowsS * 1000).toFixed(0)} ms`, 'goto to the first row in the list'],
      ['click → newest block shown', shown ? `${openS.toFixed(1)} s` : `not shown in ${openS.toFixed(0)} s`, ''],
      [
        'click → request breakdown shown',
        breakdownS !== undefined ? `${breakdownS.toFixed(1)} s` : 'not shown',
        'preview_request: the whole conversation projected and counted',
      ],
      ['page JS heap used, list shown', `${mb(before.JSHeapUsedSize ?? 0)} MB`, ''],
      [
        'page JS heap used, session shown',
        `${mb(after.JSHeapUsedSize ?? 0)} MB`,
        `${(((after.JSHeapUsedSize ?? 0) - (before.JSHeapUsedSize ?? 0)) / written).toFixed(0)} bytes per event`,
      ],
      [
        'page DOM elements, session shown',
        dom.toLocaleString('en-US'),
        'the chat view renders a window of blocks, not all',
      ],
      ['server + bench RSS after writing', `${mb(afterWrite)} MB`, ''],
      ['server + bench peak RSS', `${mb(peakRss)} MB`, ''],
      [
        "another client's list_projects while the page read",
        `median ${median.toFixed(0)} ms, worst ${worst.toFixed(0)} ms`,
        `${answers.length} answers`,
      ],
    ];
    const passed = shown && breakdownS !== undefined;
    const report = [
      `## A session of ${written.toLocaleString('en-US')} events opened in the web UI (file store, headless Chromium)`,
      '',
      table(['what', 'measured', 'note'], rows),
      '',
    ].join('\n');
    return { report, passed };
  } finally {
    clearInterval(sampler);
    await harness.close();
  }
}

async function metrics(cdp: {
  send(method: 'Performance.getMetrics'): Promise<{ metrics: Array<{ name: string; value: number }> }>;
}): Promise<Record<string, number>> {
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  return Object.fromEntries(list.map((metric) => [metric.name, metric.value]));
}
