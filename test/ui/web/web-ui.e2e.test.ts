import { join } from 'node:path';
import type { Locator, Page, WebSocketRoute } from 'playwright-core';
import { describe, expect, it, onTestFailed } from 'vitest';
import { step } from '../../../src/backends/index.js';
import type { NotificationParams, ProtocolClient } from '../../../src/protocol/index.js';
import { importTranscripts } from '../../../src/sessions/index.js';
import { SCREENSHOTS, SUMMARY } from './web-harness.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

const web = useWebHarness();

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Resolves when the channel's draft finished a turn (seed 000's `draft_status`). */
function turnDone(client: ProtocolClient): Promise<NotificationParams<'draft_status'>> {
  return new Promise((resolve) => {
    const off = client.on('draft_status', (status) => {
      off();
      resolve(status);
    });
  });
}

/** The block the reader was at stays in the top half of the panel: blocks that came in above it did not push it away. */
async function expectNearTop(panel: Locator, block: Locator): Promise<void> {
  const box = (await panel.boundingBox())!;
  const at = (await block.boundingBox())!;
  expect(at.y).toBeGreaterThanOrEqual(box.y - 1);
  expect(at.y).toBeLessThan(box.y + box.height / 2);
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: false });
}

describe.skipIf(web.part.skip)('the web UI served by parley serve', () => {
  it('without the token shows how to get one and opens no connection; a wrong token is refused', async () => {
    const page = await web.harness().page();
    const sockets: string[] = [];
    page.on('websocket', (socket) => sockets.push(socket.url()));
    const base = `http://127.0.0.1:${web.harness().server.port}/`;
    await page.goto(base);
    const help = page.locator('[data-testid="connect-help"][data-problem="missing"]');
    await help.waitFor();
    const text = await help.innerText();
    expect(text).toContain('server.json');
    expect(text).toContain('?token=');
    expect(text).toContain('parley serve');
    expect(sockets).toEqual([]);
    await screenshot(page, 'connect-help.png');

    await page.goto(`${base}?token=${'0'.repeat(64)}`);
    await page.locator('[data-testid="connect-help"][data-problem="refused"]').waitFor();
    expect(await page.locator('.connect-detail').innerText()).toMatch(/could not connect/i);
    // The token left the address bar either way.
    expect(page.url()).not.toContain('token=');

    // Pasting the right token connects.
    await page.locator('input[name="token"]').fill(web.harness().server.token);
    await page.locator('.token-form button').click();
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.context().close();
  });

  it('drafts from the page, submits a prompt and shows the turn live as blocks: text, thinking collapsed, a tool call with its status, a worker thread expandable in place', async () => {
    const page = await openConnected(web.harness());
    const form = page.locator('[data-testid="draft-form"]');
    await form.locator('select[name="role"]').selectOption('dev');
    await form.locator('select[name="project"]').selectOption(web.harness().project);
    // A task made here is picked for the draft.
    await page.locator('[data-testid="new-task"] input').fill('Fix the date check');
    await page.locator('[data-testid="new-task"] button').click();
    await form.locator('select[name="task"] option[value="fix-the-date-check"]').waitFor({ state: 'attached' });
    expect(await form.locator('select[name="task"]').inputValue()).toBe('fix-the-date-check');
    expect(await form.locator('select[name="role"]').inputValue()).toBe('dev');
    await form.locator('button[type="submit"]').click();
    await page.locator('[data-testid="draft-pill"]').waitFor();
    await page.locator('[data-testid="prompt"]').waitFor();

    const halfway = gate();
    web
      .harness()
      .backend.enqueue([
        step.thinking('The failing check is in the date parser; read it first.'),
        step.text('Let me look at the parser.'),
        step.tool(
          'read_file',
          { path: 'src/date.ts' },
          'export function parse(text: string) {\n  return new Date(text);\n}',
        ),
        step.wait(halfway.promise),
        step.subagent('test-writer', 'Write a regression test for parse()', [
          step.text('Added test/date.test.ts with three cases.'),
        ]),
        step.text('Fixed: parse() now rejects empty input, and a worker added a regression test.'),
        step.usage({ inputTokens: 48_000, outputTokens: 900 }),
        step.cost(0.0421),
      ]);
    await page.locator('[data-testid="prompt"]').fill('Fix the failing date check, please.');
    await page.locator('[data-testid="prompt"]').press('Enter');

    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-type="user_message"]', { hasText: 'Fix the failing date check' }).waitFor();
    // Mid-turn (the script waits): what streamed so far is on screen, the turn is still running.
    const tool = blocks.locator('[data-block-type="tool_use"]');
    await tool.locator('[data-status="success"]').first().waitFor();
    expect(await tool.innerText()).toContain('read_file');
    expect(await tool.innerText()).toContain('export function parse');
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Let me look at the parser.' }).waitFor();
    const thinking = blocks.locator('details[data-block-type="thinking"]');
    expect(await thinking.getAttribute('open')).toBeNull();
    expect(await page.locator('[data-testid="send"]').isDisabled()).toBe(true);
    expect(await blocks.locator('[data-block-type="subagent"]').count()).toBe(0);

    halfway.open();
    const worker = blocks.locator('details[data-block-type="subagent"]');
    await worker.locator('summary').waitFor();
    await blocks
      .locator('[data-block-type="assistant_text"]', { hasText: 'Fixed: parse() now rejects empty input' })
      .waitFor();
    await page.locator('[data-testid="send"]:not([disabled])').waitFor();
    // The worker's thread opens in place.
    expect(await worker.getAttribute('open')).toBeNull();
    await worker.locator('summary').click();
    await worker
      .locator('.thread', { hasText: 'Added test/date.test.ts with three cases.' })
      .waitFor({ state: 'visible' });
    // Thinking opens on a click too.
    await thinking.locator('summary').click();
    await thinking.locator('.thinking-text').waitFor({ state: 'visible' });

    // Status: the turn, the cost, the context against its window, cost and turns over time.
    const status = page.locator('[data-testid="status"]');
    await status.locator('dd', { hasText: '$0.0421' }).waitFor();
    await status.locator('[data-testid="usage-chart"]').waitFor();
    expect(await status.locator('[data-testid="context"]').innerText()).toContain('24%');
    await status.locator('[data-testid="threshold-marker"]').waitFor();
    expect(await status.locator('[data-testid="sections"] tr').count()).toBe(5);

    const totalAfterFirst = await status.locator('[data-testid="request-total"]').innerText();
    // A second turn: the chart gets its second step, the request grows, the worker thread stays open.
    web
      .harness()
      .backend.enqueue([
        step.text('The changelog is updated too.'),
        step.usage({ inputTokens: 52_000, outputTokens: 400 }),
        step.cost(0.0188),
      ]);
    await page.locator('[data-testid="prompt"]').fill('Update the changelog as well.');
    await page.locator('[data-testid="send"]').click();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'The changelog is updated too.' }).waitFor();
    await status.locator('figcaption', { hasText: '2 turns' }).waitFor();
    expect(await worker.getAttribute('open')).not.toBeNull();
    await page.locator('[data-testid="send"]:not([disabled])').waitFor();
    await expect.poll(() => status.locator('[data-testid="request-total"]').innerText()).not.toBe(totalAfterFirst);
    await screenshot(page, 'chat-live.png');
    await page.context().close();
  });

  it('streams assistant text delta by delta into one block and shows a tool call running until it completes', async () => {
    const manager = web.harness().server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'release', agent: 'writer' },
      agentType: 'writer',
      backend: 'scripted',
      title: 'release · writer',
    });
    const page = await openConnected(web.harness());
    await page.locator(`[data-session-id="${session.sessionId}"]`).click();
    await page.locator('[data-testid="blocks"] .empty-state', { hasText: 'No messages yet.' }).waitFor();
    const at = Date.now();
    await manager.appendEvents(session.sessionId, [
      {
        type: 'block_start',
        conversationId: 'main',
        block: { type: 'assistant_text', id: 'answer', content: '', createdAt: at },
      },
      { type: 'text_delta', conversationId: 'main', blockId: 'answer', delta: 'Release notes, ' },
    ]);
    const answer = page.locator('[data-block-id="answer"]');
    await page.locator('[data-block-id="answer"].streaming', { hasText: 'Release notes,' }).waitFor();
    await manager.appendEvents(session.sessionId, [
      { type: 'text_delta', conversationId: 'main', blockId: 'answer', delta: 'first draft' },
      {
        type: 'block_start',
        conversationId: 'main',
        block: {
          type: 'tool_use',
          id: 'call',
          toolUseId: 'call-1',
          name: 'write_file',
          input: { path: 'NOTES.md' },
          status: 'running',
          createdAt: at,
        },
      },
    ]);
    await answer.filter({ hasText: 'Release notes, first draft' }).waitFor();
    await page.locator('[data-block-id="call"][data-status="running"]').waitFor();
    await manager.appendEvents(session.sessionId, [
      {
        type: 'block_complete',
        conversationId: 'main',
        block: {
          type: 'tool_result',
          id: 'result',
          toolUseId: 'call-1',
          content: 'wrote 12 lines',
          isError: false,
          createdAt: at,
        },
      },
      { type: 'block_update', conversationId: 'main', blockId: 'call', updates: { status: 'success' } },
      {
        type: 'block_complete',
        conversationId: 'main',
        block: { type: 'assistant_text', id: 'answer', content: 'Release notes, first draft.', createdAt: at },
      },
    ]);
    await page.locator('[data-block-id="call"][data-status="success"]', { hasText: 'wrote 12 lines' }).waitFor();
    await page
      .locator('[data-block-id="answer"]:not(.streaming)', { hasText: 'Release notes, first draft.' })
      .waitFor();
    expect(await page.locator('[data-testid="blocks"] [data-block-id="answer"]').count()).toBe(1);
    await page.context().close();
  });

  it("a long session opens on its newest blocks and shows earlier ones as the reader scrolls up, keeping the reader's place", async () => {
    const manager = web.harness().server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'release', agent: 'long' },
      agentType: 'writer',
      backend: 'scripted',
    });
    const at = Date.now();
    await manager.appendEvents(
      session.sessionId,
      Array.from({ length: 400 }, (_, index) => [
        {
          type: 'block_complete' as const,
          conversationId: 'main',
          block: { type: 'user_message' as const, id: `q${index}`, content: `Question ${index}`, createdAt: at },
        },
        {
          type: 'block_complete' as const,
          conversationId: 'main',
          block: { type: 'assistant_text' as const, id: `a${index}`, content: `Answer ${index}`, createdAt: at },
        },
      ]).flat(),
    );
    const page = await openConnected(web.harness());
    await page.locator(`[data-session-id="${session.sessionId}"]`).click();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-id="a399"]').waitFor();
    // The first frame holds the newest blocks that fill the panel; the rest of the window fills in above them.
    await blocks.locator('[data-block-id="q250"]').waitFor({ state: 'attached' });
    expect(await blocks.locator('[data-block-type]').count()).toBe(300);
    // Filling in above did not move the reader off the newest block.
    expect(
      await blocks.evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight),
    ).toBeLessThan(2);
    const panel = (await blocks.boundingBox())!;
    const newest = (await blocks.locator('[data-block-id="a399"]').boundingBox())!;
    expect(newest.y + newest.height).toBeLessThanOrEqual(panel.y + panel.height + 1);
    expect(newest.y).toBeGreaterThanOrEqual(panel.y);
    expect(await blocks.locator('[data-block-id="q0"]').count()).toBe(0);
    const earlier = page.locator('[data-testid="show-earlier"]');
    expect(await earlier.innerText()).toBe('Show 300 earlier blocks (500 not shown)');
    // The reader scrolls up to the oldest block shown: the earlier blocks come in above by themselves, and it stays where it is on screen.
    const firstShown = blocks.locator('[data-block-id="q250"]');
    await blocks.evaluate((element) => element.scrollTo({ top: 0 }));
    await blocks.locator('[data-block-id="q100"]').waitFor({ state: 'attached' });
    await expectNearTop(blocks, firstShown);
    expect(await earlier.innerText()).toBe('Show 200 earlier blocks (200 not shown)');
    await blocks.evaluate((element) => element.scrollTo({ top: 0 }));
    await blocks.locator('[data-block-id="q0"]').waitFor({ state: 'attached' });
    expect(await earlier.count()).toBe(0);
    expect(await blocks.locator('[data-block-type]').count()).toBe(800);
    await page.context().close();
  });

  it('a long session paints its newest blocks first and fills the window in when idle; scrolling to the top before that shows the rest of the window at once', async () => {
    const manager = web.harness().server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'release', agent: 'filling' },
      agentType: 'writer',
      backend: 'scripted',
    });
    const at = Date.now();
    await manager.appendEvents(
      session.sessionId,
      Array.from({ length: 200 }, (_, index) => [
        {
          type: 'block_complete' as const,
          conversationId: 'main',
          block: { type: 'user_message' as const, id: `q${index}`, content: `Question ${index}`, createdAt: at },
        },
        {
          type: 'block_complete' as const,
          conversationId: 'main',
          block: { type: 'assistant_text' as const, id: `a${index}`, content: `Answer ${index}`, createdAt: at },
        },
      ]).flat(),
    );
    const page = await web.harness().page();
    // Idle callbacks wait until the test lets them run: the page stays on its first frame.
    await page.addInitScript(() => {
      const held: Array<() => void> = [];
      (window as unknown as { releaseIdle: () => void }).releaseIdle = () => held.splice(0).forEach((run) => run());
      window.requestIdleCallback = (callback) =>
        held.push(() => callback({ didTimeout: false, timeRemaining: () => 0 })) as unknown as number;
      window.cancelIdleCallback = () => undefined;
    });
    await page.goto(web.harness().server.url);
    await page.locator(`[data-session-id="${session.sessionId}"]`).click();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-id="a199"]').waitFor();
    const first = await blocks.locator('[data-block-type]').count();
    expect(first).toBeGreaterThanOrEqual(12);
    expect(first).toBeLessThan(300);
    expect(await blocks.evaluate((element) => element.scrollHeight > element.clientHeight)).toBe(true);
    expect(
      await blocks.evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight),
    ).toBeLessThan(2);
    const earlier = page.locator('[data-testid="show-earlier"]');
    expect(await earlier.innerText()).toBe(`Show ${300 - first} earlier blocks (${400 - first} not shown)`);
    // One idle slice adds the next 12 above, the newest block still in view.
    await page.evaluate(() => (window as unknown as { releaseIdle: () => void }).releaseIdle());
    await expect.poll(() => blocks.locator('[data-block-type]').count()).toBe(first + 12);
    expect(
      await blocks.evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight),
    ).toBeLessThan(2);
    // The reader scrolls to the top before the fill is done: the rest of the window comes in at once, in place.
    const oldestId = await blocks.locator('[data-block-type]').first().getAttribute('data-block-id');
    await blocks.evaluate((element) => element.scrollTo({ top: 0 }));
    await blocks.locator('[data-block-id="q50"]').waitFor({ state: 'attached' });
    expect(await blocks.locator('[data-block-type]').count()).toBe(300);
    await expectNearTop(blocks, blocks.locator(`[data-block-id="${oldestId}"]`));
    expect(await earlier.innerText()).toBe('Show 100 earlier blocks (100 not shown)');
    // A fill still queued finds the window whole and changes nothing.
    await page.evaluate(() => (window as unknown as { releaseIdle: () => void }).releaseIdle());
    expect(await blocks.locator('[data-block-type]').count()).toBe(300);
    await blocks.evaluate((element) => element.scrollTo({ top: 0 }));
    await blocks.locator('[data-block-id="q0"]').waitFor({ state: 'attached' });
    expect(await blocks.locator('[data-block-type]').count()).toBe(400);
    await page.context().close();
  });

  it('rehearses opening a session while idle, before any is opened: every kind of block is drawn once off-screen and removed in the same task, nothing is asked of the server, and the page is as before', async () => {
    const logsBefore = web.harness().logs.length;
    const page = await web.harness().page();
    // What the rehearsal adds to the page, seen as it happens (a MutationObserver from before the page's script runs).
    await page.addInitScript(() => {
      const seen: Array<{ id: string; hidden: boolean; element: Element }> = [];
      (window as unknown as { rehearsed: typeof seen }).rehearsed = seen;
      new MutationObserver((records) => {
        for (const record of records)
          for (const node of Array.from(record.addedNodes))
            if (node instanceof Element)
              for (const element of [node, ...Array.from(node.querySelectorAll('[data-block-id]'))])
                if (element.hasAttribute('data-block-id'))
                  seen.push({
                    id: element.getAttribute('data-block-id')!,
                    hidden: element.closest('[aria-hidden="true"][inert]') !== null,
                    element,
                  });
      }).observe(document, { childList: true, subtree: true });
    });
    const sent: string[] = [];
    page.on('websocket', (socket) => socket.on('framesent', (frame) => sent.push(String(frame.payload))));
    await page.goto(web.harness().server.url);
    await page.waitForFunction(() => performance.getEntriesByName('parley:warm').length > 0);
    const rehearsed = await page.evaluate(() => {
      const seen = (window as unknown as { rehearsed: Array<{ id: string; hidden: boolean; element: Element }> })
        .rehearsed;
      return {
        ids: seen.map((entry) => entry.id),
        allHidden: seen.every((entry) => entry.hidden),
        stillThere: seen.filter((entry) => entry.element.isConnected).length,
      };
    });
    // Each kind the chat draws differently went through the draw code: text, thinking, tool calls (read, edit, command, other), system lines.
    expect(rehearsed.ids).toEqual(expect.arrayContaining(['u2', 'k2', 'a2', 't2', 'e2', 'b2', 'x2', 's0']));
    expect(rehearsed.allHidden).toBe(true);
    expect(rehearsed.stillThere).toBe(0);
    expect(await page.locator('[data-block-id]').count()).toBe(0);
    expect(await page.locator('[data-testid="empty-chat"]').isVisible()).toBe(true);
    expect(sent.filter((payload) => payload.includes('parley-rehearsal'))).toEqual([]);
    expect(web.harness().logs.slice(logsBefore)).toEqual([]);
    await page.context().close();
  });

  it('follows a session driven from another window; force compact shows the compaction running, then the new checkpoint version and what it folded in; preview shows the exact request', async () => {
    await web
      .harness()
      .server.drafts.createTask({ project: web.harness().project, title: 'Compaction task', slug: 'compaction-task' });
    const driver = await web.harness().client();
    const { sessionId } = await driver.request('draft', {
      role: 'qa',
      project: web.harness().project,
      task: 'compaction-task',
    });
    // Long enough that a summary is worth it (a compaction that saves under 5 % is not kept).
    const notes =
      ' Notes from the last review: the parser accepted empty strings, dates without a year and two-digit years, and the error message did not name the input.'.repeat(
        40,
      );
    for (const content of [`Review the date parser fix.${notes}`, `Now check the regression test.${notes}`]) {
      const done = turnDone(driver);
      await driver.request('submit_prompt', { content });
      await done;
    }
    const page = await openConnected(web.harness());
    await page.locator(`[data-session-id="${sessionId}"]`).click();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks
      .locator('[data-block-type="assistant_text"]', { hasText: 'Echo: Now check the regression test.' })
      .waitFor();
    expect(await page.locator('[data-testid="prompt-note"]').innerText()).toContain('another window');

    // Live, without a reload: a turn from the other window streams in.
    web
      .harness()
      .backend.enqueue([
        step.text('Third answer, streamed live.'),
        step.usage({ inputTokens: 30_000, outputTokens: 200 }),
        step.cost(0.011),
      ]);
    const third = turnDone(driver);
    await driver.request('submit_prompt', { content: 'And the changelog?' });
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Third answer, streamed live.' }).waitFor();
    await third;
    expect(await blocks.locator('[data-block-type="user_message"]').count()).toBe(3);

    // Force a compaction whose summary waits: the indicator shows while it runs.
    const release = gate();
    // A failing step must not leave the compaction (and the server's shutdown) waiting.
    onTestFailed(() => release.open());
    const summaries: string[] = [];
    web.harness().summarizer.current = async (request) => {
      summaries.push(JSON.stringify(request));
      await release.promise;
      return JSON.stringify(SUMMARY);
    };
    await page.locator('[data-testid="compact-instructions"]').fill('Keep the plan and the decisions.');
    await page.locator('[data-testid="force-compact"]').click();
    await page.locator('[data-testid="compaction-indicator"]').waitFor();
    await page.locator('[data-testid="chat-compacting"]').waitFor();
    expect(await page.locator('[data-testid="force-compact"]').isDisabled()).toBe(true);
    await page.locator('.inspector').evaluate((element) => element.scrollTo({ top: 0 }));
    await screenshot(page, 'compacting.png');
    // A page opened while it runs (it never saw compaction_started) shows it too, timed from its start.
    const late = await openConnected(web.harness());
    await late.locator(`[data-session-id="${sessionId}"]`).click();
    const latePill = late.locator('[data-testid="chat-compacting"]');
    await latePill.waitFor();
    expect(await latePill.innerText()).toMatch(/Compacting \(manual\)…\s+\d+s/);
    await late.locator('[data-testid="compaction-indicator"]').waitFor();
    await screenshot(late, 'compacting-late-page.png');
    release.open();
    const current = page.locator('[data-testid="current-checkpoint"][data-version="1"]');
    await current.waitFor();
    await page.locator('[data-testid="compaction-indicator"]').waitFor({ state: 'detached' });
    await page.locator('[data-testid="chat-compacting"]').waitFor({ state: 'detached' });
    await latePill.waitFor({ state: 'detached' });
    await late.context().close();
    expect(summaries.join('')).toContain('Keep the plan and the decisions.');
    const currentText = await current.innerText();
    expect(currentText).toContain('Write a regression test');
    expect(currentText).toContain('Keep the public API unchanged');
    expect(currentText).toContain('Keep the plan and the decisions.');
    expect(currentText).toMatch(/Folded in: \d+ messages \(seq \d+–\d+\)/);
    await page.locator(`[data-session-id="${sessionId}"]`, { hasText: '⟳ 1' }).waitFor();

    // Another turn and another compaction: v2 is current, v1 is listed with its own range.
    web.harness().summarizer.current = () =>
      Promise.resolve(JSON.stringify({ ...SUMMARY, completed: [...SUMMARY.completed, 'Reviewed the changelog'] }));
    const fourth = turnDone(driver);
    await driver.request('submit_prompt', { content: `One more review round.${notes}` });
    await fourth;
    await page.locator('[data-testid="force-compact"]:not([disabled])').click();
    await page.locator('[data-testid="current-checkpoint"][data-version="2"]').waitFor();
    const earlier = page.locator('[data-testid="checkpoint-versions"] details[data-version="1"]');
    await earlier.locator('summary').click();
    expect(await earlier.innerText()).toMatch(/Folded in: \d+ messages \(seq \d+–\d+\)/);
    expect(await page.locator('[data-testid="current-checkpoint"]').innerText()).toContain('Reviewed the changelog');

    // The exact request the next turn would send, with its token breakdown.
    await page.locator('[data-testid="preview-request"]').click();
    const pane = page.locator('[data-testid="request-pane"]');
    await pane.locator('[data-testid="system-prompt"]').waitFor();
    await pane.locator('[data-testid="preview-prompt"]').fill('What is left to do?');
    await pane.locator('button[type="submit"]').click();
    await pane.locator('[data-testid="user-prompt"]', { hasText: 'What is left to do?' }).waitFor();
    const direct = await driver.request('preview_request', { sessionId, prompt: 'What is left to do?' });
    expect(await pane.locator('[data-testid="system-prompt"]').innerText()).toBe(direct.systemPrompt);
    expect(await pane.locator('[data-testid="request-total"]').innerText()).toContain(
      direct.totalTokens.toLocaleString('en-US'),
    );
    expect(await pane.locator('[data-testid="sections"] tr').count()).toBe(5);
    await screenshot(page, 'request-preview.png');
    await pane.locator('[data-testid="close-preview"]').click();
    await pane.waitFor({ state: 'hidden' });

    // Clear messages, then archive: both confirmed in place; the list and the chat follow.
    await page.locator('[data-testid="clear-messages"]').click();
    await page.locator('[data-testid="confirm-clear"]').click();
    await page.locator('[data-testid="notices"]', { hasText: 'Messages cleared' }).waitFor();
    expect((await driver.request('get_session', { sessionId })).session.clearedThroughSeq).toBeGreaterThan(0);
    await page.locator('[data-testid="archive"]').click();
    await page.locator('[data-testid="confirm-archive"]').click();
    await page.locator(`[data-session-id="${sessionId}"]`, { hasText: 'archived' }).waitFor();
    await page.locator('[data-testid="prompt-note"]', { hasText: 'archived' }).waitFor();
    await page.context().close();
  });

  it('after a dropped connection it reconnects and continues from the last seq: what happened meanwhile shows once, nothing twice', async () => {
    await web
      .harness()
      .server.drafts.createTask({ project: web.harness().project, title: 'Reconnect task', slug: 'reconnect-task' });
    const driver = await web.harness().client();
    const { sessionId } = await driver.request('draft', {
      role: 'dev',
      project: web.harness().project,
      task: 'reconnect-task',
    });
    const first = turnDone(driver);
    await driver.request('submit_prompt', { content: 'before the drop' });
    await first;

    const page = await web.harness().page();
    let offline = false;
    let live: WebSocketRoute | undefined;
    const sent: string[] = [];
    // Every page socket goes through here: while "offline" it is refused, else it reaches the server.
    await page.routeWebSocket(/\/rpc/, (socket) => {
      if (offline) {
        void socket.close({ code: 1011, reason: 'offline' });
        return;
      }
      live = socket;
      const server = socket.connectToServer();
      socket.onMessage((message) => {
        sent.push(String(message));
        server.send(message);
      });
    });
    await page.goto(web.harness().server.url);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await page.locator(`[data-session-id="${sessionId}"]`).click();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Echo: before the drop' }).waitFor();
    const lastSeq = (await driver.request('get_session', { sessionId })).lastSeq;

    offline = true;
    await live!.close({ code: 1012, reason: 'test drop' });
    await page.locator('[data-testid="connection"][data-state="reconnecting"]').waitFor();
    const meanwhile = turnDone(driver);
    await driver.request('submit_prompt', { content: 'while the page was away' });
    await meanwhile;
    sent.length = 0;
    offline = false;

    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Echo: while the page was away' }).waitFor();
    const resumes = sent
      .map((frame) => JSON.parse(frame) as { method?: string; params?: { sessionId?: string; afterSeq?: number } })
      .filter((frame) => frame.method === 'get_events' && frame.params?.sessionId === sessionId);
    expect(resumes[0]?.params?.afterSeq).toBe(lastSeq);
    expect(await blocks.locator('[data-block-type="user_message"]').allInnerTexts()).toEqual([
      expect.stringContaining('before the drop'),
      expect.stringContaining('while the page was away'),
    ]);
    expect(await blocks.locator('[data-block-type="assistant_text"]').count()).toBe(2);
    await page.context().close();
  });

  it('lists every session of the project (drafts, task sessions per state, workflow agents, imported Claude Code and Gemini CLI sessions) with filters and full-text search over their content', async () => {
    const manager = web.harness().server.manager;
    const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts');
    const claude = await importTranscripts(join(fixtures, 'claude-code'), { store: manager.store });
    const gemini = await importTranscripts(join(fixtures, 'gemini'), { store: manager.store });
    const taskSession = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'qa',
      featureId: 'auth',
      taskId: 'login',
      taskState: 'in_qa',
    });
    await manager.addMessage(taskSession.sessionId, {
      role: 'user',
      content: 'Check the login flow against the zebra-crossing spec.',
    });
    const devSession = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'auth',
      taskId: 'login',
      taskState: 'in_dev',
    });
    await manager.addMessage(devSession.sessionId, { role: 'user', content: 'Implement the login form.' });
    const workflow = await manager.createSession({
      scope: { kind: 'workflow', harness: 'code-review', agent: 'reviewer' },
      agentType: 'reviewer',
      backend: 'scripted',
      title: 'code-review · reviewer',
    });
    const all = (await manager.listSessions()).map((session) => session.sessionId);
    const imported = [...claude.sessions, ...gemini.sessions].map((session) => session.sessionId);
    expect(imported.length).toBeGreaterThanOrEqual(2);

    const page = await openConnected(web.harness());
    const rows = page.locator('[data-testid="session-list"] [data-session-id]');
    await expect.poll(() => rows.count()).toBe(all.length);
    for (const id of [taskSession.sessionId, devSession.sessionId, workflow.sessionId, ...imported])
      expect(await page.locator(`[data-session-id="${id}"]`).count()).toBe(1);

    const filter = (key: string) => page.locator(`select[data-filter="${key}"]`);
    await filter('kind').selectOption('imported');
    await expect
      .poll(async () =>
        (
          await rows.evaluateAll((elements) => elements.map((element) => element.getAttribute('data-session-id')))
        ).sort(),
      )
      .toEqual([...imported].sort());
    await filter('backend').selectOption('claude-code-import');
    await expect.poll(() => rows.count()).toBe(claude.sessions.length);
    await filter('backend').selectOption('');
    await filter('kind').selectOption('task');
    await filter('state').selectOption('in_qa');
    await expect
      .poll(() => rows.evaluateAll((elements) => elements.map((element) => element.getAttribute('data-session-id'))))
      .toEqual([taskSession.sessionId]);
    await filter('state').selectOption('');
    await filter('feature').selectOption('auth');
    await expect.poll(() => rows.count()).toBe(2);
    await filter('agentType').selectOption('dev');
    await expect
      .poll(() => rows.evaluateAll((elements) => elements.map((element) => element.getAttribute('data-session-id'))))
      .toEqual([devSession.sessionId]);
    for (const key of ['agentType', 'feature', 'kind']) await filter(key).selectOption('');
    await expect.poll(() => rows.count()).toBe(all.length);

    // Full-text, through the store's index: words that are only in a message. (An imported session's
    // blocks are built on its first read, and join the index then.)
    await page.locator('[data-testid="session-search"]').fill('zebra-crossing');
    await page.locator('[data-testid="search-status"]', { hasText: 'in 1 session hold' }).waitFor();
    await expect
      .poll(() => rows.evaluateAll((elements) => elements.map((element) => element.getAttribute('data-session-id'))))
      .toEqual([taskSession.sessionId]);
    await page.locator('[data-testid="search-hits"] .search-hit', { hasText: 'zebra-crossing' }).first().waitFor();
    const claudeWithWorker = claude.sessions.find(
      (session) => session.nativeSessionId === '9a7d4c21-0b6e-4f3a-8d52-7c1e0f9b3a64',
    )!;
    await page.locator('[data-testid="session-search"]').fill('');
    await expect.poll(() => rows.count()).toBe(all.length);

    // An imported session reads like any other: its blocks and its workers' threads.
    await page.locator(`[data-session-id="${claudeWithWorker.sessionId}"]`).click();
    await page
      .locator('[data-testid="blocks"] [data-block-type="user_message"]', {
        hasText: 'Draft the release notes for 1.4',
      })
      .waitFor();
    await page.locator('[data-testid="prompt-note"]', { hasText: 'read only' }).waitFor();
    await page.locator('[data-testid="blocks"] details[data-block-type="subagent"] summary').first().click();
    await page.locator('[data-testid="blocks"] .thread', { hasText: 'merged since v1.3' }).first().waitFor();
    await screenshot(page, 'sessions.png');
    await page.context().close();
  });

  it("with no draft, a first message typed in the empty chat makes a task, drafts the project's default role, selects it and is answered; the same first message again gets a task of its own", async () => {
    const send = async (page: Page, text: string) => {
      const prompt = page.locator('[data-testid="prompt"]');
      await page.locator('[data-testid="empty-chat"]', { hasText: 'type a first message below' }).waitFor();
      expect(await prompt.getAttribute('placeholder')).toBe(
        'Type a first message: Parley creates a task and drafts product-analyst (Enter sends)',
      );
      await prompt.fill(text);
      await prompt.press('Enter');
    };
    const page = await openConnected(web.harness());
    await send(page, 'Ship the export fix\nThe CSV is empty on Mondays.');
    await page
      .locator('[data-testid="notices"]', {
        hasText:
          "Created task ship-the-export-fix and drafted product-analyst on it (the project's default role; Undraft to change).",
      })
      .waitFor();
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-type="user_message"]', { hasText: 'The CSV is empty on Mondays.' }).waitFor();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'Echo: Ship the export fix' }).waitFor();
    await page.locator('[data-testid="draft-pill"]').waitFor();
    expect(await page.locator('[data-testid="prompt"]').inputValue()).toBe('');
    expect(await page.locator('[data-testid="prompt"]').getAttribute('placeholder')).toMatch(/^Message the agent/);
    await screenshot(page, 'first-message.png');

    // Another window (its own channel, no draft) sends the same first message: the server picks the next free slug.
    const other = await openConnected(web.harness());
    await send(other, 'Ship the export fix\nThe CSV is empty on Mondays.');
    await other
      .locator('[data-testid="notices"]', {
        hasText: 'Created task ship-the-export-fix-2 and drafted product-analyst on it',
      })
      .waitFor();
    await other
      .locator('[data-testid="blocks"] [data-block-type="assistant_text"]', { hasText: 'Echo: Ship the export fix' })
      .waitFor();
    const tasks = await web.harness().server.drafts.listTasks({ project: web.harness().project });
    expect(
      tasks
        .filter((task) => task.title === 'Ship the export fix')
        .map((task) => task.slug)
        .sort(),
    ).toEqual(['ship-the-export-fix', 'ship-the-export-fix-2']);
    await page.context().close();
    await other.context().close();
  });
});
