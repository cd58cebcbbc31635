/**
 * What Markdown costs the terminal UI, side by side with the plain text it replaced, on one long
 * answer (~10 KB: headings, paragraphs, lists, tables, fenced code), at 120 columns:
 *
 * 1. Printing it once finished (what goes into `<Static>`): `renderMarkdown` vs wrapping the same
 *    text as plain rows (`wrapRows`, what the TUI printed before).
 * 2. Streaming it in ~40-character deltas, per delta: `renderStreamingMarkdown` of the text so far
 *    (finished blocks reused, only the open tail rendered) vs the plain tail (`tailRows`). Medians
 *    over the whole answer and over its last tenth (the text is longest there).
 * 3. The same stream through Ink: a live block re-rendered per delta in a real (non-debug) Ink
 *    render on a fake 120×40 TTY, from `rerender` to the frame written, Markdown vs plain.
 */
import { percentile, ratio, table, formatMs } from './stats.js';
import { InkTerminal } from './ink-terminal.js';

const WIDTH = 120;
const ROWS = 30;

/** One section per topic, each with every construct the renderer knows. */
function longAnswer(): string {
  const sections: string[] = [];
  for (let index = 0; index < 12; index++) {
    sections.push(
      [
        `## ${index + 1}. The \`module-${index}\` part`,
        '',
        `The **parser** reads the input, *validates* it against its schema and hands it on; see [the notes](https://example.com/notes/${index}). It keeps ~~no~~ one cache.`,
        '',
        '- it reads the file',
        '- it checks **every** field',
        '  - nested detail with `code`',
        '- [x] tested',
        '',
        '| Name | Lines | Why |',
        '|------|------:|-----|',
        `| src/part-${index}.ts | ${index * 10 + 12} | the parsing |`,
        `| test/part-${index}.test.ts | ${index * 5 + 40} | the error path and a redirect that keeps the session |`,
        '',
        '```ts',
        `export function part${index}(input: string): number {`,
        '  const value = Number.parseInt(input, 10);',
        "  if (Number.isNaN(value)) throw new Error('not a number');",
        '  return value * 2;',
        '}',
        '```',
      ].join('\n'),
    );
  }
  return `# A long answer\n\n${sections.join('\n\n')}\n\nDone.`;
}

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let index = 0; index < text.length; index += size) out.push(text.slice(index, index + size));
  return out;
}

function time(run: () => void, repeat: number): number[] {
  const samples: number[] = [];
  for (let index = 0; index < repeat; index++) {
    const started = performance.now();
    run();
    samples.push(performance.now() - started);
  }
  return samples;
}

export async function run(): Promise<string> {
  // Ink writes no live frames when it thinks it runs in CI; it reads that when it loads.
  delete process.env['CI'];
  delete process.env['CONTINUOUS_INTEGRATION'];
  const [{ renderMarkdown }, { renderStreamingMarkdown }, { wrapRows, tailRows }, ink, React] = await Promise.all([
    import('../src/ui/tui/render/markdown.js'),
    import('../src/ui/tui/render/markdown-stream.js'),
    import('../src/ui/tui/format.js'),
    import('ink'),
    import('react'),
  ]);
  const median = (values: readonly number[]) => percentile(values, 50);
  const answer = longAnswer();
  const deltas = chunks(answer, 40);
  const prefixes = deltas.map((_, index) => deltas.slice(0, index + 1).join(''));
  const lastTenth = Math.floor(prefixes.length * 0.9);

  // Warm-up: JIT, and highlight.js's grammars load on first use.
  for (let index = 0; index < 5; index++) renderMarkdown(answer, WIDTH);

  const finishedMarkdown = time(() => renderMarkdown(answer, WIDTH), 30);
  const finishedPlain = time(() => wrapRows(answer, WIDTH), 30);

  const streamMarkdown: number[] = [];
  const streamPlain: number[] = [];
  for (const prefix of prefixes) {
    let started = performance.now();
    renderStreamingMarkdown(prefix, WIDTH - 1);
    streamMarkdown.push(performance.now() - started);
    started = performance.now();
    tailRows(`${prefix}▍`, WIDTH - 1, ROWS);
    streamPlain.push(performance.now() - started);
  }

  // Through Ink: the live block as the TUI draws it (cut to the rows the live area has).
  const h = React.createElement;
  const Markdown = ({ text }: { text: string }) => {
    const rows = renderStreamingMarkdown(text, WIDTH - 1);
    return h(ink.Text, null, rows.slice(Math.max(0, rows.length - ROWS)).join('\n') + '▍');
  };
  const Plain = ({ text }: { text: string }) =>
    h(ink.Text, null, tailRows(`${text}▍`, WIDTH - 1, ROWS).rows.join('\n'));
  const inkRows: Array<{ label: string; perDelta: number[] }> = [];
  for (const [label, component] of [
    ['Markdown', Markdown],
    ['plain text', Plain],
  ] as const) {
    const terminal = new InkTerminal(WIDTH);
    // A frame number above the block: every frame differs (a held-back table row can leave the block as it was).
    const frame = (index: number, text: string) =>
      h(ink.Box, { flexDirection: 'column' }, h(ink.Text, null, `frame <${index}>`), h(component, { text }));
    const instance = ink.render(frame(-1, ''), {
      stdout: terminal as unknown as NodeJS.WriteStream,
      debug: false,
      exitOnCtrlC: false,
      patchConsole: false,
      maxFps: 1_000,
    });
    const perDelta: number[] = [];
    for (let index = 0; index < prefixes.length; index++) {
      const started = performance.now();
      instance.rerender(frame(index, prefixes[index]!));
      await terminal.until(`frame <${index}>`);
      perDelta.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    instance.unmount();
    inkRows.push({ label, perDelta: perDelta.slice(10) });
  }

  const out: string[] = ['## TUI: Markdown vs plain text', ''];
  out.push(
    `One answer of ${answer.length.toLocaleString('en-US')} characters (${answer.split('\n').length} source lines: headings, lists, tables, fenced TypeScript), ${WIDTH} columns; streamed in ${deltas.length} deltas of 40 characters.`,
    '',
  );
  out.push(
    table(
      ['what', 'Markdown: median / p90', 'plain text: median / p90', 'Markdown ÷ plain'],
      [
        [
          'finished answer printed once (`<Static>`): render to rows',
          `${formatMs(median(finishedMarkdown))} / ${formatMs(percentile(finishedMarkdown, 90))}`,
          `${formatMs(median(finishedPlain))} / ${formatMs(percentile(finishedPlain, 90))}`,
          ratio(median(finishedMarkdown), median(finishedPlain)),
        ],
        [
          'streaming, per delta: render the live block (whole answer)',
          `${formatMs(median(streamMarkdown))} / ${formatMs(percentile(streamMarkdown, 90))}`,
          `${formatMs(median(streamPlain))} / ${formatMs(percentile(streamPlain, 90))}`,
          ratio(median(streamMarkdown), median(streamPlain)),
        ],
        [
          'streaming, per delta: last tenth of the answer (longest text)',
          `${formatMs(median(streamMarkdown.slice(lastTenth)))} / ${formatMs(percentile(streamMarkdown.slice(lastTenth), 90))}`,
          `${formatMs(median(streamPlain.slice(lastTenth)))} / ${formatMs(percentile(streamPlain.slice(lastTenth), 90))}`,
          ratio(median(streamMarkdown.slice(lastTenth)), median(streamPlain.slice(lastTenth))),
        ],
        [
          'streaming through Ink, per delta: rerender → frame written',
          `${formatMs(median(inkRows[0]!.perDelta))} / ${formatMs(percentile(inkRows[0]!.perDelta, 90))}`,
          `${formatMs(median(inkRows[1]!.perDelta))} / ${formatMs(percentile(inkRows[1]!.perDelta, 90))}`,
          ratio(median(inkRows[0]!.perDelta), median(inkRows[1]!.perDelta)),
        ],
      ],
    ),
    '',
  );
  out.push(
    'A finished answer is rendered once, when it is printed into the scrollback. While it streams, finished blocks are rendered once and reused; the open tail and the lexing of the text so far are the per-delta cost.',
    '',
  );
  return out.join('\n');
}
