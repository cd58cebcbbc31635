/**
 * The web UI in headless Chromium against an in-process server: the bundle's size, opening a long
 * session, and streaming deltas into it (plain words, and a Markdown answer with headings, tables,
 * fences and lists), each beside its floor (what a Node protocol client needs for the same data: the
 * wire and `applyEvents`, no DOM). `npm run bench web`, or `npx tsx bench/web.bench.ts`.
 *
 * Opening is timed as a user meets it: the page loaded, its session list shown, then the click. The
 * page warms up when idle after it loads (src/ui/web/main.ts: the Markdown renderer, then a rehearsal
 * of opening a made-up session, src/ui/web/rehearsal.ts) and marks `parley:warm` when done; the bench
 * clicks after that mark, as a user's click comes after the page settled (a few hundred ms at most
 * after the list shows; the warm-ups take tens). The frame timed is the first that shows the newest block, and
 * the rest of the 300-block window fills in above it after that frame (chat-view.ts). A second
 * table times the page's reads alone from a bare WebSocket in a fresh page (JSON.parse only): how
 * much of the ratio is the browser's side of the wire, before any of the page's own work. The page
 * opens a session on its last page (HISTORY_PAGING.pageSize, 1,000 events, one `get_events` with
 * `beforeSeq`), and the floor makes the same read, so the two fold the same events.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { applyEvents, emptyConversation, type StreamEvent, type UnsequencedEvent } from '../src/conversation/index.js';
import { HISTORY_PAGING } from '../src/ui/web/history-pages.js';
import { startWebHarness, type WebHarness } from '../test/ui/web/web-harness.js';
import { buildWeb } from '../scripts/build-web.mjs';
import { percentile } from './stats.js';

const SIZES = [500, 5_000];
const DELTAS = 1_000;
/** Opens per size (the median is printed); more on a busy machine, e.g. PARLEY_BENCH_RUNS=9. */
const RUNS = Number(process.env['PARLEY_BENCH_RUNS'] ?? 3);

/** One turn of a long session as the web bench stores it (also soak-huge-session.ts). */
export function turnEvents(index: number): UnsequencedEvent[] {
  const at = 1_700_000_000_000 + index * 1_000;
  // Answers as models write them: inline Markdown in each, a fence and a table in every tenth.
  let text = `Answer ${index}: the parser now **rejects** empty input and names the \`value\` it refused. `.repeat(3);
  if (index % 10 === 0)
    text += `\n\n\`\`\`ts\nexport function parse${index}(text: string): Date {\n  return new Date(text);\n}\n\`\`\`\n\n| case | result |\n|---|---|\n| empty | rejected |\n| 2026-01-17 | parsed |`;
  const events: UnsequencedEvent[] = [
    {
      type: 'block_complete',
      conversationId: 'main',
      block: {
        type: 'user_message',
        id: `u${index}`,
        content: `Question ${index}: what changed in the parser?`,
        createdAt: at,
      },
    },
    {
      type: 'block_complete',
      conversationId: 'main',
      block: { type: 'assistant_text', id: `a${index}`, content: text, createdAt: at },
    },
  ];
  if (index % 5 === 0) {
    events.push(
      {
        type: 'block_complete',
        conversationId: 'main',
        block: {
          type: 'tool_use',
          id: `t${index}`,
          toolUseId: `call-${index}`,
          name: 'read_file',
          input: { path: `src/file-${index}.ts` },
          status: 'success',
          createdAt: at,
        },
      },
      {
        type: 'block_complete',
        conversationId: 'main',
        block: {
          type: 'tool_result',
          id: `r${index}`,
          toolUseId: `call-${index}`,
          content: 'export const value = 1;\n'.repeat(5),
          isError: false,
          createdAt: at,
        },
      },
    );
  }
  events.push({
    type: 'metadata_update',
    conversationId: 'main',
    metadata: {
      costUsd: 0.001,
      turnComplete: true,
      usage: { inputTokens: 1_000, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 0 },
      contextWindow: 200_000,
    },
  });
  return events;
}

export async function run(): Promise<string> {
  const lines: string[] = ['## Web UI (headless Chromium, in-process server)', ''];
  const markdownDeltas = markdownAnswerDeltas(DELTAS);

  const buildStarted = performance.now();
  const built = await buildWeb({ outDir: join(process.cwd(), 'bench', '.data', 'web'), sourcemap: false });
  const buildMs = performance.now() - buildStarted;
  const gzip = gzipSync(await readFile(join(built.outDir, 'app.js'))).length;
  lines.push(
    `Bundle: app.js ${(built.bundleBytes / 1024).toFixed(1)} KiB minified, ${(gzip / 1024).toFixed(1)} KiB gzip (first paint); loaded on first need ${((built.lazyBytes ?? 0) / 1024).toFixed(1)} KiB (highlight.js); built in ${buildMs.toFixed(0)} ms.`,
    '',
  );

  const harness = await startWebHarness();
  try {
    const manager = harness.server.manager;
    const floorClient = await harness.client();
    lines.push(
      `| what | web UI, in the page (median of ${RUNS}) | floor: Node client, wire + applyEvents | ratio |`,
      '|---|---:|---:|---:|',
    );
    const wireRows: string[] = [];
    for (const turns of SIZES) {
      const session = await manager.createSession({
        scope: { kind: 'workflow', harness: 'bench', agent: `long-${turns}` },
        agentType: 'bench',
        backend: 'scripted',
      });
      const unsequenced = Array.from({ length: turns }, (_, index) => turnEvents(index)).flat();
      for (let start = 0; start < unsequenced.length; start += 2_000)
        await manager.appendEvents(session.sessionId, unsequenced.slice(start, start + 2_000));
      const blocks = applyEvents(emptyConversation(session.sessionId), await manager.getEvents(session.sessionId))
        .blocks.length;

      const pageTimes: number[] = [];
      const floorTimes: number[] = [];
      const wireTimes: number[] = [];
      for (let attempt = 0; attempt < RUNS; attempt += 1) {
        const page = await harness.page();
        await page.goto(harness.server.url);
        await page.locator(`[data-session-id="${session.sessionId}"]`).waitFor();
        await page.waitForFunction(() => performance.getEntriesByName('parley:warm').length > 0, undefined, {
          timeout: 10_000,
        });
        // Timed in the page, from the click to the frame that shows the newest block. Nothing polls
        // meanwhile: Playwright's waitForFunction polls on every frame, and each poll is a round trip
        // to this process, which is also the server the page is reading from.
        await page.evaluate(
          (id) => {
            const marks: { clicked?: number; shown?: number } = {};
            const bench = window as unknown as { benchMarks: typeof marks; benchShown: Promise<void> };
            bench.benchMarks = marks;
            document.addEventListener('click', () => (marks.clicked = performance.now()), {
              capture: true,
              once: true,
            });
            bench.benchShown = new Promise((resolve) => {
              const observer = new MutationObserver(() => {
                if (!document.querySelector(`[data-block-id="${id}"]`)) return;
                observer.disconnect();
                requestAnimationFrame(() => {
                  marks.shown = performance.now();
                  resolve();
                });
              });
              observer.observe(document.body, { childList: true, subtree: true });
            });
          },
          `a${turns - 1}`,
        );
        await page.locator(`[data-session-id="${session.sessionId}"]`).click();
        await page.evaluate(() =>
          Promise.race([
            (window as unknown as { benchShown: Promise<void> }).benchShown,
            new Promise((_, reject) =>
              setTimeout(() => reject(new Error('The newest block was not shown within 120 s of the click.')), 120_000),
            ),
          ]),
        );
        const marks = await page.evaluate(
          () => (window as unknown as { benchMarks: { clicked: number; shown: number } }).benchMarks,
        );
        pageTimes.push(marks.shown - marks.clicked);
        // The page goes on to ask for the request breakdown (the server counts its tokens): let that
        // end before the floor runs, so the floor does not share the machine with it.
        await page
          .locator('[data-testid="request-total"], [data-testid="breakdown-unavailable"]')
          .first()
          .waitFor({ timeout: 120_000 });
        await page.context().close();

        const floorStarted = performance.now();
        // The read the page makes: the log's last page.
        const { events }: { events: StreamEvent[] } = await floorClient.request('get_events', {
          sessionId: session.sessionId,
          beforeSeq: Number.MAX_SAFE_INTEGER,
          limit: HISTORY_PAGING.pageSize,
        });
        applyEvents(emptyConversation(session.sessionId), events);
        floorTimes.push(performance.now() - floorStarted);

        wireTimes.push(await browserWire(harness, session.sessionId));
      }
      const pageMs = percentile(pageTimes, 50);
      const floorMs = percentile(floorTimes, 50);
      lines.push(
        `| open a session of ${turns.toLocaleString('en-US')} turns (${blocks.toLocaleString('en-US')} blocks) | ${pageMs.toFixed(0)} ms | ${floorMs.toFixed(0)} ms | ${(pageMs / floorMs).toFixed(1)}× |`,
      );
      wireRows.push(
        `| ${turns.toLocaleString('en-US')} turns | ${percentile(wireTimes, 50).toFixed(0)} ms | ${(percentile(wireTimes, 50) / floorMs).toFixed(1)}× |`,
      );
    }
    lines.push(
      '',
      `| the browser side of the wire alone: the same reads from a bare WebSocket in a fresh page (the last page of ${HISTORY_PAGING.pageSize.toLocaleString('en-US')} events, JSON.parse only) | median | over the floor |`,
      '|---|---:|---:|',
      ...wireRows,
    );

    // Streaming: one delta per append (the worst case for rendering), watched by the page and by a Node client.
    const plain = Array.from({ length: DELTAS }, (_, index) => (index === DELTAS - 1 ? ' END' : ` w${index}`));
    const plainRow = await streamRow(harness, floorClient, 'plain', plain);
    const markdownRow = await streamRow(harness, floorClient, 'markdown', markdownDeltas);
    lines.push(
      '',
      '| streaming, one append per delta, until the last is on screen | web UI | floor: Node client | ratio | page main thread per delta |',
      '|---|---:|---:|---:|---:|',
      `| ${DELTAS.toLocaleString('en-US')} deltas of plain words | ${plainRow.pageMs.toFixed(0)} ms | ${plainRow.floorMs.toFixed(0)} ms | ${(plainRow.pageMs / plainRow.floorMs).toFixed(2)}× | ${plainRow.busyPerDeltaMs.toFixed(3)} ms |`,
      `| ${DELTAS.toLocaleString('en-US')} deltas of a Markdown answer (headings, tables, fences, lists) | ${markdownRow.pageMs.toFixed(0)} ms | ${markdownRow.floorMs.toFixed(0)} ms | ${(markdownRow.pageMs / markdownRow.floorMs).toFixed(2)}× | ${markdownRow.busyPerDeltaMs.toFixed(3)} ms |`,
      // Each row over its own floor: the appends' cost moves with the machine's load, the page's share does not.
      `| Markdown against plain, per delta (target ≤ 1.2×) | ${(markdownRow.pageMs / markdownRow.floorMs / (plainRow.pageMs / plainRow.floorMs)).toFixed(2)}× (each over its floor) | | | ${(markdownRow.busyPerDeltaMs / plainRow.busyPerDeltaMs).toFixed(2)}× |`,
    );
  } finally {
    await harness.close();
  }
  lines.push(
    '',
    `Answers carry inline Markdown, and every tenth a fence and a table. Opening is timed in the page from the click to the first frame with the newest block; the floor reads the same log over the same WebSocket and folds it with the same reducer. The page reads the log's last ${HISTORY_PAGING.pageSize.toLocaleString('en-US')} events (one \`get_events\` with \`beforeSeq\`; older pages come as the reader scrolls up), and the floor makes the same read; the page takes pages the schema would return unchanged without zod (its CSP forbids eval, so zod has no JIT there; anything else goes through the schema), folds each page as it arrives into one working copy of the conversation (foldInParts), and paints the newest blocks that fill the panel before it fills in the rest of the 300-block window in idle time; what it adds to the floor is the browser side of the wire, the DOM (about 12 blocks at 1440×900) and layout. Before the click it has rehearsed an open on a made-up session while idle (src/ui/web/rehearsal.ts), so its draw code is compiled, as on a page a user has had open for a moment. Streaming is timed from Node, from the first append to the last delta on screen. It is bounded by the appends (each is durable before it is sent), so a page that keeps up shows a ratio near 1; what the page itself spends is its main-thread busy time (the TaskDuration metric of Chrome over the stream) per delta.`,
  );
  return lines.join('\n');
}

/**
 * The read the page makes to open a session (its last page, HISTORY_PAGING in
 * src/ui/web/history-pages.ts), from a
 * bare WebSocket in a fresh page that only JSON.parses the answers: what the browser's side of the
 * wire costs before any of the page's own work, timed in the page. Given as a string: the page's CSP
 * forbids eval, and Playwright's evaluate of a string does not need it.
 */
async function browserWire(harness: WebHarness, sessionId: string): Promise<number> {
  const page = await harness.page();
  await page.goto(harness.server.url);
  await page.locator(`[data-session-id="${sessionId}"]`).waitFor();
  const url = `${harness.server.wsUrl}?token=${encodeURIComponent(harness.server.token)}`;
  const elapsed = (await page.evaluate(`(async () => {
    const socket = new WebSocket(${JSON.stringify(url)});
    await new Promise((resolve) => socket.addEventListener('open', resolve, { once: true }));
    const waiting = new Map();
    socket.addEventListener('message', (event) => { const message = JSON.parse(event.data); waiting.get(message.id)?.(message.result); });
    let id = 0;
    function call(params) { id += 1; const mine = id; socket.send(JSON.stringify({ jsonrpc: '2.0', id: mine, method: 'get_events', params })); return new Promise((resolve) => waiting.set(mine, resolve)); }
    // As the page reads (src/ui/web/history-pages.ts): the log's last page.
    const started = performance.now();
    await call({ sessionId: ${JSON.stringify(sessionId)}, beforeSeq: ${Number.MAX_SAFE_INTEGER}, limit: ${HISTORY_PAGING.pageSize} });
    const elapsed = performance.now() - started;
    socket.close();
    return elapsed;
  })()`)) as number;
  await page.context().close();
  return elapsed;
}

/** A Markdown answer (heading, paragraph, a table growing row by row, a fence growing line by line, a list, repeated) cut into `count` word-sized deltas, the last ending in END. */
function markdownAnswerDeltas(count: number): string[] {
  const section = (index: number) =>
    [
      `## Step ${index}: the date parser`,
      '',
      `The parser now **rejects** empty input and names the \`value\` it refused; see [the docs](https://docs.example.com/${index}).`,
      '',
      '| case | input | result |',
      '|---|---|---|',
      ...Array.from({ length: 5 }, (_, row) => `| ${row} | \`2026-01-${10 + row}\` | parsed |`),
      '',
      '```ts',
      ...Array.from(
        { length: 8 },
        (_, line) => `export const check${index}_${line} = (text: string) => text.length > ${line};`,
      ),
      '```',
      '',
      '- [x] reject empty input',
      '- [ ] write the changelog',
      '',
    ].join('\n');
  let text = '';
  for (let index = 0; (text.match(/\S+\s*/g) ?? []).length < count; index += 1) text += `${section(index)}\n`;
  const pieces = (text.match(/\S+\s*/g) ?? []).slice(0, count - 1);
  pieces.push(' END');
  return pieces;
}

interface StreamResult {
  pageMs: number;
  floorMs: number;
  busyPerDeltaMs: number;
}

async function streamRow(
  harness: WebHarness,
  floorClient: Awaited<ReturnType<WebHarness['client']>>,
  name: string,
  deltas: string[],
): Promise<StreamResult> {
  const manager = harness.server.manager;
  const session = await manager.createSession({
    scope: { kind: 'workflow', harness: 'bench', agent: `stream-${name}` },
    agentType: 'bench',
    backend: 'scripted',
  });
  await manager.appendEvents(session.sessionId, turnEvents(1));
  const page = await harness.page();
  await page.goto(harness.server.url);
  await page.locator(`[data-session-id="${session.sessionId}"]`).click();
  await page.locator('[data-testid="blocks"] [data-block-id="a1"]').waitFor();
  const busy = await busyClock(page);
  await floorClient.subscribe([session.sessionId]);
  let floorDone!: () => void;
  const floorSaw = new Promise<void>((resolve) => (floorDone = resolve));
  let received = 0;
  let floorMs = 0;
  const busyBefore = await busy();
  const streamStarted = performance.now();
  const off = floorClient.on('session_event', (message) => {
    if (message.sessionId !== session.sessionId || message.event.type !== 'text_delta') return;
    received += 1;
    if (received === deltas.length) {
      floorMs = performance.now() - streamStarted;
      floorDone();
    }
  });
  await manager.appendEvents(session.sessionId, [
    {
      type: 'block_start',
      conversationId: 'main',
      block: { type: 'assistant_text', id: 'stream', content: '', createdAt: Date.now() },
    },
  ]);
  for (const delta of deltas)
    await manager.appendEvents(session.sessionId, [
      { type: 'text_delta', conversationId: 'main', blockId: 'stream', delta },
    ]);
  await page.locator('[data-block-id="stream"]', { hasText: 'END' }).waitFor({ timeout: 120_000 });
  const pageMs = performance.now() - streamStarted;
  const busyMs = (await busy()) - busyBefore;
  await floorSaw;
  off();
  await page.context().close();
  return { pageMs, floorMs, busyPerDeltaMs: busyMs / deltas.length };
}

/** The page's main-thread busy time so far (Chrome's TaskDuration metric), in ms. */
async function busyClock(page: Page): Promise<() => Promise<number>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  return async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    return (metrics.find((metric) => metric.name === 'TaskDuration')?.value ?? 0) * 1_000;
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
