import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it, onTestFailed } from 'vitest';
import type { UnsequencedEvent } from '../../../src/conversation/index.js';
import { importTranscripts } from '../../../src/sessions/index.js';
import { SCREENSHOTS } from './web-harness.js';
import { useWebHarness } from './web-test-hooks.js';

const web = useWebHarness();

/**
 * The chat as people read it, in headless Chromium: Markdown (tables, code highlighted with a
 * working Copy button, task lists, links), images loaded only on a click, file edits as diffs,
 * commands as terminal blocks, nothing a model writes able to run, and streaming that renders a
 * finished block once.
 */

const TRACKER = 'https://tracker.example/pixel.png?session=42';
/** A 1×1 transparent PNG, what the fake tracker answers. */
const PIXEL = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

const CODE =
  'export function parse(text: string): Date {\n  if (text === "") throw new Error("empty input");\n  return new Date(text);\n}';

/** Each payload sets `window.parleyPwned` if it ever runs. */
const PAYLOADS = [
  '<script>window.parleyPwned = "script"</script>',
  '<img src=x onerror="window.parleyPwned = \'onerror\'">',
  '<svg onload="window.parleyPwned = \'svg\'"></svg>',
  '<a href="javascript:window.parleyPwned = \'raw link\'">raw link</a>',
  "[a javascript link](javascript:window.parleyPwned='markdown-link')",
  '[a data link](data:text/html;base64,PHNjcmlwdD53aW5kb3cucGFybGV5UHduZWQ9MTwvc2NyaXB0Pg==)',
  '<iframe src="javascript:window.parleyPwned = \'iframe\'"></iframe>',
];

const ANSWER = [
  '## Release check',
  '',
  'The parser now **rejects** empty input; see [the docs](https://docs.example.com/parser "Parser docs").',
  '',
  '| flag | meaning |',
  '|------|---------|',
  '| `--verbose` | more output |',
  '| `--help` | usage |',
  '',
  '- [x] read `src/args.ts`',
  '- [ ] write the changelog',
  '',
  '```ts',
  CODE,
  '```',
  '',
  `![build status](${TRACKER})`,
  '',
  ...PAYLOADS.flatMap((payload) => [payload, '']),
].join('\n');

function at(offset = 0): number {
  return 1_760_000_000_000 + offset;
}

function block(event: Record<string, unknown>): UnsequencedEvent {
  return { type: 'block_complete', conversationId: 'main', block: { createdAt: at(), ...event } } as UnsequencedEvent;
}

/** A page that records dialogs, page errors and every request for the tracker's image (answered locally). */
async function watchedPage(): Promise<{ page: Page; dialogs: string[]; trackerHits: string[] }> {
  const page = await web.harness().page();
  const dialogs: string[] = [];
  const trackerHits: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.route('https://tracker.example/**', (route) => {
    trackerHits.push(route.request().url());
    void route.fulfill({ status: 200, contentType: 'image/png', body: PIXEL });
  });
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], {
    origin: `http://127.0.0.1:${web.harness().server.port}`,
  });
  await page.goto(web.harness().server.url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  onTestFailed(async () => {
    await page.screenshot({ path: join(SCREENSHOTS, 'markdown-failure.png') }).catch(() => undefined);
  });
  return { page, dialogs, trackerHits };
}

async function pwned(page: Page): Promise<unknown> {
  return page.evaluate(() => (window as unknown as { parleyPwned?: unknown }).parleyPwned);
}

describe.skipIf(web.part.skip)('the web UI shows answers the way people read them', () => {
  it('renders Markdown (a table, highlighted code with a working Copy button, a task list, a link, an image loaded only on click), keeps every XSS payload inert, and shows an edit as a diff and a command as a terminal', async () => {
    const manager = web.harness().server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'review', agent: 'markdown' },
      agentType: 'writer',
      backend: 'scripted',
      title: 'review · markdown',
    });
    await manager.appendEvents(session.sessionId, [
      block({
        type: 'user_message',
        id: 'ask',
        content: 'Check the **parser** and\nupdate `src/date.ts`, please. <script>window.parleyPwned = "user"</script>',
      }),
      block({
        type: 'thinking',
        id: 'think',
        content: 'The fix belongs in `parse()`:\n\n- reject `""`\n- name the value',
      }),
      block({
        type: 'tool_use',
        id: 'edit',
        toolUseId: 'call-edit',
        name: 'Edit',
        input: {
          file_path: 'src/date.ts',
          old_string: 'export function parse(text) {\n  return new Date(text);\n}',
          new_string:
            'export function parse(text) {\n  if (text === "") throw new Error("empty input");\n  return new Date(text);\n}',
        },
        status: 'success',
      }),
      block({
        type: 'tool_result',
        id: 'edit-result',
        toolUseId: 'call-edit',
        content: 'The file src/date.ts has been updated.',
        isError: false,
      }),
      block({
        type: 'tool_use',
        id: 'bash',
        toolUseId: 'call-bash',
        name: 'Bash',
        input: { command: 'npm test -- date' },
        status: 'success',
      }),
      block({
        type: 'tool_result',
        id: 'bash-result',
        toolUseId: 'call-bash',
        content: 'PASS test/date.test.ts\n  ✓ rejects empty input (2 ms)',
        isError: false,
        output: { exitCode: 0 },
      }),
      block({
        type: 'tool_use',
        id: 'fetch',
        toolUseId: 'call-fetch',
        name: 'WebFetch',
        input: { url: 'https://docs.example.com/parser' },
        status: 'success',
      }),
      block({
        type: 'tool_result',
        id: 'fetch-result',
        toolUseId: 'call-fetch',
        content: '# Parser docs\n\nUse **parse()** for dates. <img src=x onerror="window.parleyPwned = \'result\'">',
        isError: false,
      }),
      block({ type: 'assistant_text', id: 'answer', content: ANSWER }),
    ]);
    const { page, dialogs, trackerHits } = await watchedPage();
    await page.locator(`[data-session-id="${session.sessionId}"]`).click();
    const answer = page.locator('[data-block-id="answer"]');
    await answer.locator('h2', { hasText: 'Release check' }).waitFor();

    // Markdown: strong text, the table as a table, the task list as boxes, no Markdown syntax left over.
    expect(await answer.locator('strong').innerText()).toBe('rejects');
    expect(await answer.locator('table th').allInnerTexts()).toEqual(['flag', 'meaning']);
    expect(await answer.locator('table tbody tr').count()).toBe(2);
    expect(await answer.locator('table td code').first().innerText()).toBe('--verbose');
    const boxes = answer.locator('li input[type="checkbox"]');
    expect(await boxes.count()).toBe(2);
    expect(
      await boxes.evaluateAll((inputs) =>
        inputs.map((input) => [(input as HTMLInputElement).checked, (input as HTMLInputElement).disabled]),
      ),
    ).toEqual([
      [true, true],
      [false, true],
    ]);
    const text = await answer.innerText();
    for (const syntax of ['**', '```', '## ', '|---', '- [x]']) expect(text).not.toContain(syntax);

    // The link opens in a new tab, without referrer or opener.
    const link = answer.locator('a', { hasText: 'the docs' });
    expect(await link.getAttribute('href')).toBe('https://docs.example.com/parser');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');

    // Code: highlighted once highlight.js has loaded (lazily), and Copy puts the exact code on the clipboard.
    const code = answer.locator('pre > code[data-lang="ts"]');
    await code.locator('span.hljs-keyword', { hasText: 'export' }).waitFor();
    expect(await code.evaluate((element) => getComputedStyle(element.querySelector('.hljs-keyword')!).color)).not.toBe(
      await code.evaluate((element) => getComputedStyle(element).color),
    );
    await answer.locator('.code-block button.copy-code').click();
    await answer.locator('.code-block button.copy-code', { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`${CODE}\n`);

    // Every payload is on screen as text or gone, and nothing it asked for exists or ran.
    expect(text).toContain('<script>window.parleyPwned = "script"</script>');
    expect(text).toContain('a javascript link');
    const blocks = page.locator('[data-testid="blocks"]');
    expect(await blocks.locator('script, iframe, svg, img, [onerror], [onload], [onclick], [style]').count()).toBe(0);
    expect(await blocks.locator('a[href^="javascript:" i], a[href^="data:" i]').count()).toBe(0);
    await answer.locator('.md-inert-link', { hasText: 'a javascript link' }).click();
    await answer.locator('.md-inert-link', { hasText: 'a data link' }).click();
    expect(page.url()).toContain(`127.0.0.1:${web.harness().server.port}`);
    expect(await pwned(page)).toBeUndefined();
    expect(dialogs).toEqual([]);

    // The image: a placeholder and no request until the reader asks for it.
    const placeholder = answer.locator('button.md-image');
    expect(await placeholder.innerText()).toContain('build status (tracker.example)');
    expect(trackerHits).toEqual([]);
    await placeholder.click();
    const image = answer.locator('img.md-loaded-image');
    await image.waitFor();
    await expect
      .poll(() =>
        image.evaluate(
          (element) => (element as HTMLImageElement).complete && (element as HTMLImageElement).naturalWidth,
        ),
      )
      .toBe(1);
    expect(trackerHits).toEqual([TRACKER]);
    expect(await image.getAttribute('alt')).toBe('build status');

    // The user's message and the thinking read as Markdown too (a typed newline stays a line break).
    const ask = page.locator('[data-block-id="ask"]');
    expect(await ask.locator('strong').innerText()).toBe('parser');
    expect(await ask.locator('br').count()).toBe(1);
    expect(await ask.innerText()).toContain('<script>');
    const thinking = page.locator('details[data-block-id="think"]');
    await thinking.locator('summary').click();
    expect(await thinking.locator('li code').allInnerTexts()).toEqual(['""']);

    // The edit: a unified diff, open by default, with the added and removed lines coloured.
    const edit = page.locator('details[data-block-id="edit"]');
    expect(await edit.getAttribute('open')).not.toBeNull();
    const diff = edit.locator('[data-testid="file-edit"]');
    expect(await diff.locator('.file-edit-head').innerText()).toMatch(/Edit src\/date\.ts \+1 −0/);
    expect(await diff.locator('.diff-hunk').first().innerText()).toMatch(/^@@ -1,3 \+1,4 @@$/);
    expect(await diff.locator('.diff-add').allInnerTexts()).toEqual([
      '+  if (text === "") throw new Error("empty input");',
    ]);
    expect(await diff.locator('.diff-context').count()).toBe(3);
    const added = await diff.locator('.diff-add').evaluate((element) => getComputedStyle(element).backgroundColor);
    const context = await diff
      .locator('.diff-context')
      .first()
      .evaluate((element) => getComputedStyle(element).backgroundColor);
    expect(added).not.toBe(context);
    expect(await edit.innerText()).not.toContain('old_string');

    // The command: a terminal block with the command, its output and its exit code.
    const terminal = page.locator('details[data-block-id="bash"] [data-testid="terminal"]');
    expect(await terminal.locator('.terminal-command').innerText()).toBe('$ npm test -- date');
    expect(await terminal.locator('.terminal-output').innerText()).toContain('✓ rejects empty input');
    expect(await terminal.locator('.terminal-exit').innerText()).toBe('exit 0');

    // Another tool's result reads as Markdown, its raw HTML as text.
    const fetch = page.locator('details[data-block-id="fetch"]');
    await fetch.locator('summary').click();
    expect(await fetch.locator('.tool-result-text h1').innerText()).toBe('Parser docs');
    expect(await fetch.locator('.tool-result-text').innerText()).toContain('<img src=x onerror=');

    expect(await pwned(page)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(web.harness().logs.filter((entry) => entry.level === 'page')).toEqual([]);
    await answer.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SCREENSHOTS, 'markdown.png') });
    await page.context().close();
  });

  it('streams an answer mid-table and mid-fence: the partial table and code show as they grow, and finished blocks are rendered once', async () => {
    const manager = web.harness().server.manager;
    const session = await manager.createSession({
      scope: { kind: 'workflow', harness: 'review', agent: 'streaming' },
      agentType: 'writer',
      backend: 'scripted',
    });
    const { page } = await watchedPage();
    await page.locator(`[data-session-id="${session.sessionId}"]`).click();
    await page.locator('[data-testid="blocks"] .empty-state', { hasText: 'No messages yet.' }).waitFor();
    const delta = (text: string): UnsequencedEvent => ({
      type: 'text_delta',
      conversationId: 'main',
      blockId: 'live',
      delta: text,
    });
    await manager.appendEvents(session.sessionId, [
      {
        type: 'block_start',
        conversationId: 'main',
        block: { type: 'assistant_text', id: 'live', content: '', createdAt: at() },
      },
      delta('Intro with **bold** text.\n\n| step | state |\n|---|---|\n| parse | do'),
    ]);
    const live = page.locator('[data-block-id="live"].streaming');
    await live.locator('table td', { hasText: 'do' }).waitFor();
    // Mark the finished paragraph's element: it must be the same element after every later delta.
    await live
      .locator('.md-block p', { hasText: 'Intro with' })
      .evaluate((element) => ((element as unknown as { kept: boolean }).kept = true));
    // The answer's own element stays too: a delta changes its tail, nothing else.
    await live.evaluate((element) => ((element as unknown as { kept: boolean }).kept = true));
    await manager.appendEvents(session.sessionId, [delta('ne |\n| test | running |\n\n```py\ndef parse(text):\n')]);
    await live.locator('pre > code[data-lang="py"] .hljs-keyword', { hasText: 'def' }).waitFor();
    expect(await live.locator('table tbody tr').count()).toBe(2);
    const table = live.locator('.md-block table');
    await table.evaluate((element) => ((element as unknown as { kept: boolean }).kept = true));
    await manager.appendEvents(session.sessionId, [delta('    return None\n'), delta('```\n\nDone')]);
    await live.locator('p', { hasText: 'Done' }).waitFor();
    expect(await live.locator('pre > code').innerText()).toBe('def parse(text):\n    return None\n');
    await manager.appendEvents(session.sessionId, [
      {
        type: 'block_complete',
        conversationId: 'main',
        block: {
          type: 'assistant_text',
          id: 'live',
          content:
            'Intro with **bold** text.\n\n| step | state |\n|---|---|\n| parse | done |\n| test | running |\n\n```py\ndef parse(text):\n    return None\n```\n\nDone.',
          createdAt: at(),
        },
      },
    ]);
    const done = page.locator('[data-block-id="live"]:not(.streaming)');
    await done.locator('p', { hasText: 'Done.' }).waitFor();
    expect(
      await done
        .locator('.md-block p', { hasText: 'Intro with' })
        .evaluate((element) => (element as unknown as { kept?: boolean }).kept),
    ).toBe(true);
    expect(
      await done.locator('.md-block table').evaluate((element) => (element as unknown as { kept?: boolean }).kept),
    ).toBe(true);
    expect(await done.evaluate((element) => (element as unknown as { kept?: boolean }).kept)).toBe(true);
    expect(await done.innerText()).not.toContain('```');
    await page.context().close();
  });

  it('imported Claude Code sessions render the same way: Markdown answers, Write calls as diffs, Bash calls as terminals', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-markdown-import-'));
    try {
      // One Markdown-heavy session in Claude Code 2.0.46's record shapes (as test/fixtures/transcripts' 9a7d…3a64.jsonl).
      const project = join(folder, '-home-dev-src-notes');
      await mkdir(project, { recursive: true });
      const sessionId = '3c1e7a52-8d4f-4b6a-9e21-5f0d2c7b8a13';
      const base = {
        isSidechain: false,
        userType: 'external',
        cwd: '/home/dev/src/notes',
        sessionId,
        version: '2.0.46',
        gitBranch: 'main',
      };
      const usage = {
        input_tokens: 3,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 0,
        output_tokens: 50,
      };
      const markdown =
        '### Summary\n\n| file | change |\n|---|---|\n| `src/date.ts` | rejects empty input |\n\n```bash\nnpm test -- date\n```\n\n- [x] fixed\n- [ ] released';
      const records = [
        {
          ...base,
          parentUuid: null,
          type: 'user',
          message: { role: 'user', content: 'Summarise the **date** fix' },
          uuid: 'm-u-1',
          timestamp: '2025-11-19T22:50:00.000Z',
        },
        {
          ...base,
          parentUuid: 'm-u-1',
          type: 'assistant',
          requestId: 'req_m1',
          message: {
            id: 'msg_m1',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5-20250929',
            content: [{ type: 'text', text: markdown }],
            stop_reason: 'end_turn',
            usage,
          },
          uuid: 'm-a-1',
          timestamp: '2025-11-19T22:50:04.000Z',
        },
      ];
      await writeFile(
        join(project, `${sessionId}.jsonl`),
        records.map((record) => JSON.stringify(record)).join('\n') + '\n',
      );
      const imported = await importTranscripts(folder, { store: web.harness().server.manager.store });
      const fixtures = await importTranscripts(
        join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'claude-code'),
        { store: web.harness().server.manager.store },
      );
      const markdownSession = imported.sessions[0]!;
      const fixtureSession = fixtures.sessions.find(
        (entry) => entry.nativeSessionId === '5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01',
      )!;

      const { page } = await watchedPage();
      await page.locator(`[data-session-id="${markdownSession.sessionId}"]`).click();
      const blocks = page.locator('[data-testid="blocks"]');
      const answer = blocks.locator('[data-block-type="assistant_text"]');
      await answer.locator('h3', { hasText: 'Summary' }).waitFor();
      expect(await answer.locator('table td').allInnerTexts()).toEqual(['src/date.ts', 'rejects empty input']);
      await answer.locator('pre > code[data-lang="bash"].hljs').waitFor();
      expect(await answer.locator('li input[type="checkbox"]').count()).toBe(2);
      expect(await blocks.locator('[data-block-type="user_message"] strong').innerText()).toBe('date');

      await page.locator(`[data-session-id="${fixtureSession.sessionId}"]`).click();
      await blocks.locator('[data-block-type="assistant_text"] code', { hasText: '--verbose' }).first().waitFor();
      const write = blocks
        .locator('details[data-block-type="tool_use"]', { hasText: 'Write' })
        .locator('[data-testid="file-edit"]');
      expect(await write.locator('.file-edit-head').innerText()).toContain('/home/dev/src/demo/test/verbose.test.ts');
      expect(await write.locator('.diff-add').allInnerTexts()).toEqual(["+import { test } from 'vitest';"]);
      const terminal = blocks.locator('details[data-block-type="tool_use"] [data-testid="terminal"]').first();
      expect(await terminal.locator('.terminal-command').innerText()).toMatch(/^\$ /);
      expect(await terminal.locator('.terminal-output').innerText()).toContain('FAIL test/cli.test.ts');
      await page.context().close();
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
