/**
 * Importing a ~100 MB Claude Code JSONL transcript: MB/s and peak memory of
 * `parley import` into a file store beside the floor (a bare streaming line split + `JSON.parse` of
 * the same file); then the first `parley show` of the imported session in a fresh process, the
 * first `get_events` (which builds its log), and a show after that. Targets: ≥ 0.8× the floor's
 * MB/s, peak memory ≤ 2× the floor's, the first show in ≤ 1.5× the floor's time.
 *
 * What the import row measures follows the product path: into the file
 * store, `parley import` now copies the transcript verbatim (kernel-side) and scans it for the
 * listing (`src/sessions/import/deferred-import.ts`); the blocks are built from the copy on the
 * session's first read. The session is listed with its title, turns and tokens when the import row
 * ends. What the first-show row measures follows `parley
 * show`: it parses the copy and renders each block as it comes, keeping the text, not the
 * blocks, and writes nothing (`src/sessions/import/unbuilt-session.ts`, `src/cli/show-text.ts`);
 * the log is built by the first reader of the stored events, timed in its own row (`get_events`),
 * and the last row is a show after that, which reads the log. The parser row and the "appends numbered and
 * dropped" row (an eager import into a memory store, which cannot copy files) show what building
 * the blocks costs, with and without the store; the breakdown times the build's stages (the eager
 * pipeline), which the first `get_events` pays.
 *
 * Each variant runs in a fresh child process (plain `node` on an esbuild bundle, so neither tsx
 * nor the other variants' garbage count), several rounds interleaved; the table shows medians.
 * Peak memory is the child's peak RSS (`process.resourceUsage().maxRSS`). The transcript is
 * generated into a temp folder by `test/fixtures/transcripts/generate.ts` and removed afterwards.
 * A breakdown child then times each stage of the import on its own (parse, number, stringify,
 * encode, write, fsync) and the section ends with what that means for the 0.8× target.
 * `PARLEY_BENCH_IMPORT_MB` sets its size (default 100), `PARLEY_BENCH_IMPORT_ROUNDS` the rounds (default 3).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { generateClaudeCodeTranscript } from '../test/fixtures/transcripts/generate.js';
import { percentile, ratio, table } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The floor's child: nothing but the line splitter and JSON.parse, so its memory is a bare process's. */
const FLOOR_CHILD = `
import { createReadStream } from 'node:fs';
import { LineSplitter } from './src/backends/transcripts/lines.js';

const [, path] = process.argv.slice(2);
const baselineRssKb = process.memoryUsage().rss / 1024;
const started = performance.now();
const cpu = process.cpuUsage();
let detail = 0;
const splitter = new LineSplitter((line) => { if (line.length > 0) { JSON.parse(line); detail++; } });
for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) splitter.push(chunk);
splitter.end();
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ variant: 'floor', ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, bytes: splitter.bytesRead, detail, baselineRssKb, maxRssKb: process.resourceUsage().maxRSS }));
`;

/** Parley's child: the parser alone, the import with the store's append discarded, or the import into a file store. */
const PARLEY_CHILD = `
import { createReadStream, statSync } from 'node:fs';
import { LineSplitter, ClaudeCodeParser } from './src/backends/index.js';
import { createFileStore, createMemoryStore } from './src/store/index.js';
import { importTranscripts } from './src/sessions/import/index.js';

const [variant, path, dataDir] = process.argv.slice(2);
const baselineRssKb = process.memoryUsage().rss / 1024;
const started = performance.now();
const cpu = process.cpuUsage();
let detail = 0;
let bytes = statSync(path).size;
if (variant === 'parse') {
  const parser = new ClaudeCodeParser({ emit: () => { detail++; } });
  const splitter = new LineSplitter((line, number, terminated) => parser.line(line, number, terminated));
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) splitter.push(chunk);
  splitter.end();
  parser.end();
} else {
  const store = variant === 'import' ? await createFileStore({ dataDir, onWarning: () => {} }) : createMemoryStore();
  let seq = 0;
  const timed = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== 'append') return typeof value === 'function' ? value.bind(target) : value;
      // 'import-discard': the whole import, but appended events are numbered and dropped (no store cost).
      if (variant === 'import-discard') {
        return async (sessionId, drafts) => {
          for (const draft of drafts) Object.assign(draft, { sessionId, seq: seq++ });
          return drafts;
        };
      }
      return value.bind(target);
    },
  });
  const result = await importTranscripts(path, { store: timed });
  await store.close();
  detail = result.sessions[0]?.appendedBlocks ?? 0;
}
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ variant, ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, bytes, detail, baselineRssKb, maxRssKb: process.resourceUsage().maxRSS }));
`;

/**
 * The first `parley show` of the imported session, as its own process on the import's data folder:
 * what `parley show <id>` does (open the store and the session manager, then `sessionText`: the
 * heading and the conversation rendered as text), without printing the text. Variant 'build': the first
 * reader of the stored events (`get_events`), which builds the session's log from its copy.
 */
const SHOW_CHILD = `
import { createSessionManager } from './src/sessions/index.js';
import { sessionTextChunks } from './src/cli/show-text.js';

const [variant, path, dataDir, sessionId] = process.argv.slice(2);
const baselineRssKb = process.memoryUsage().rss / 1024;
const started = performance.now();
const cpu = process.cpuUsage();
const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
let detail = 0;
if (variant === 'build') {
  detail = (await manager.getEvents(sessionId)).length;
} else {
  // What \`parley show\` writes, counted rather than printed.
  for await (const chunk of sessionTextChunks(manager, sessionId)) detail += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
}
await manager.close();
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ variant, ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, bytes: 0, detail, baselineRssKb, maxRssKb: process.resourceUsage().maxRSS }));
`;

/**
 * The breakdown child: the import's stages timed one by one, in the import's order and batch sizes,
 * in one process. It parses with the real parser and repeats what the file store's append does per
 * batch (number the events, JSON.stringify, encode, one write, one fdatasync) with a stopwatch
 * around each stage; "split + decode alone" is a separate first pass over the file.
 */
const BREAKDOWN_CHILD = `
import { createReadStream, fdatasyncSync, mkdirSync, openSync, closeSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LineSplitter, ClaudeCodeParser } from './src/backends/index.js';

const [, path, dataDir] = process.argv.slice(2);
const stages = { decode: 0, parse: 0, number: 0, stringify: 0, encode: 0, write: 0, fsync: 0 };
let started = performance.now();
const decoder = new LineSplitter(() => {});
for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) decoder.push(chunk);
decoder.end();
stages.decode = performance.now() - started;

mkdirSync(dataDir, { recursive: true });
const fd = openSync(join(dataDir, 'log.jsonl'), 'a');
let batch = [];
let seq = 0;
let buffer = Buffer.allocUnsafe(1 << 20);
let batchStartBytes = 0;
const writeBatch = () => {
  let time = performance.now();
  const events = batch.map((draft) => Object.assign({}, draft, { sessionId: 's', seq: seq++, at: draft.at ?? 0 }));
  batch = [];
  let now = performance.now(); stages.number += now - time; time = now;
  const lines = events.map((event) => JSON.stringify(event));
  now = performance.now(); stages.stringify += now - time; time = now;
  let length = 0;
  for (const line of lines) {
    if (buffer.length - length < line.length * 3 + 1) { const larger = Buffer.allocUnsafe(Math.max(buffer.length * 2, length + line.length * 3 + 1)); buffer.copy(larger, 0, 0, length); buffer = larger; }
    length += buffer.write(line, length);
    buffer[length++] = 10;
  }
  now = performance.now(); stages.encode += now - time; time = now;
  let written = 0;
  while (written < length) written += writeSync(fd, buffer, written, length - written);
  now = performance.now(); stages.write += now - time; time = now;
  fdatasyncSync(fd);
  stages.fsync += performance.now() - time;
};
const parser = new ClaudeCodeParser({ emit: (event) => batch.push(event) });
const splitter = new LineSplitter((line, number, terminated) => parser.line(line, number, terminated));
started = performance.now();
for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
  const time = performance.now();
  splitter.push(chunk);
  stages.parse += performance.now() - time;
  if (batch.length >= 2048 || (batch.length > 0 && splitter.bytesRead - batchStartBytes >= 1024 * 1024)) { batchStartBytes = splitter.bytesRead; writeBatch(); }
}
const time = performance.now();
splitter.end();
parser.end();
stages.parse += performance.now() - time;
if (batch.length > 0) writeBatch();
closeSync(fd);
const total = performance.now() - started;
console.log(JSON.stringify({ ...stages, total }));
`;

interface Breakdown {
  decode: number;
  parse: number;
  number: number;
  stringify: number;
  encode: number;
  write: number;
  fsync: number;
  total: number;
}

interface Sample {
  variant: string;
  ms: number;
  cpuMs: number;
  bytes: number;
  detail: number;
  /** RSS once the code is loaded, before reading: what the process costs with no data. */
  baselineRssKb: number;
  maxRssKb: number;
}

export async function run(): Promise<string> {
  const megabytes = Number(process.env['PARLEY_BENCH_IMPORT_MB'] ?? 100);
  const rounds = Number(process.env['PARLEY_BENCH_IMPORT_ROUNDS'] ?? 3);
  const work = mkdtempSync(join(tmpdir(), 'parley-import-bench-'));
  const bundleDir = join(root, 'bench', '.data');
  mkdirSync(bundleDir, { recursive: true });
  const children = {
    floor: join(bundleDir, 'import-floor-child.mjs'),
    parley: join(bundleDir, 'import-parley-child.mjs'),
    breakdown: join(bundleDir, 'import-breakdown-child.mjs'),
    show: join(bundleDir, 'import-show-child.mjs'),
  };
  try {
    for (const [name, contents] of [
      ['floor', FLOOR_CHILD],
      ['parley', PARLEY_CHILD],
      ['breakdown', BREAKDOWN_CHILD],
      ['show', SHOW_CHILD],
    ] as const) {
      await build({
        stdin: { contents, resolveDir: root, loader: 'ts', sourcefile: `import-${name}-child.ts` },
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        outfile: children[name],
        logLevel: 'error',
      });
    }
    const transcript = join(work, '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b.jsonl');
    const generated = await generateClaudeCodeTranscript(transcript, { targetBytes: megabytes * 1e6 });

    const variants = ['floor', 'parse', 'import-discard', 'import'] as const;
    const samples = new Map<string, Sample[]>(variants.map((variant) => [variant, []]));
    const breakdowns: Breakdown[] = [];
    const shows: Sample[] = [];
    const builds: Sample[] = [];
    const secondShows: Sample[] = [];
    const runChild = (variant: string, dataDir: string): Sample => {
      const script =
        variant === 'floor'
          ? children.floor
          : variant === 'breakdown'
            ? children.breakdown
            : variant === 'show' || variant === 'build'
              ? children.show
              : children.parley;
      const extra = variant === 'show' || variant === 'build' ? [`cc-${generated.sessionId}`] : [];
      const output = execFileSync(process.execPath, [script, variant, transcript, dataDir, ...extra], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Sample;
    };
    // One untimed pass puts the file in the page cache for every variant alike.
    runChild('floor', '');
    for (let round = 0; round < rounds; round++) {
      for (const variant of variants) {
        const dataDir = join(work, `data-${round}`);
        samples.get(variant)!.push(runChild(variant, dataDir));
        // The first `parley show` of what the import wrote, in a fresh process.
        if (variant === 'import') {
          shows.push(runChild('show', dataDir));
          // The first reader of the stored events builds the log; a show after it reads the log.
          builds.push(runChild('build', dataDir));
          secondShows.push(runChild('show', dataDir));
        }
        rmSync(dataDir, { recursive: true, force: true });
      }
      const dataDir = join(work, `data-${round}`);
      breakdowns.push(runChild('breakdown', dataDir) as unknown as Breakdown);
      rmSync(dataDir, { recursive: true, force: true });
    }

    const median = (variant: string, pick: (sample: Sample) => number): number =>
      percentile(samples.get(variant)!.map(pick), 50);
    const mbps = (variant: string): number => median(variant, (sample) => sample.bytes / 1e6 / (sample.ms / 1000));
    const cpuMbps = (variant: string): number =>
      median(variant, (sample) => sample.bytes / 1e6 / (sample.cpuMs / 1000));
    const rss = (variant: string): number => median(variant, (sample) => sample.maxRssKb / 1024);
    const baseline = (variant: string): number => median(variant, (sample) => sample.baselineRssKb / 1024);
    const label: Record<(typeof variants)[number], string> = {
      floor: 'floor: line split + JSON.parse',
      parse: 'Parley parser (blocks built, then dropped)',
      'import-discard': 'eager import (blocks built), appends numbered and dropped',
      import: '`parley import` into the file store (copy + scan)',
    };
    const rows = variants.map((variant) => [
      label[variant],
      mbps(variant).toFixed(1),
      ratio(mbps(variant), mbps('floor')),
      cpuMbps(variant).toFixed(1),
      ratio(cpuMbps(variant), cpuMbps('floor')),
      rss(variant).toFixed(0),
      ratio(rss(variant), rss('floor')),
      baseline(variant).toFixed(0),
      variant === 'import' ? '≥ 0.80× MB/s, ≤ 2.00× memory' : '',
    ]);
    const showMs = percentile(
      shows.map((sample) => sample.ms),
      50,
    );
    const showCpuMs = percentile(
      shows.map((sample) => sample.cpuMs),
      50,
    );
    const showRss = percentile(
      shows.map((sample) => sample.maxRssKb / 1024),
      50,
    );
    const buildMs = percentile(
      builds.map((sample) => sample.ms),
      50,
    );
    const buildCpuMs = percentile(
      builds.map((sample) => sample.cpuMs),
      50,
    );
    const buildRss = percentile(
      builds.map((sample) => sample.maxRssKb / 1024),
      50,
    );
    const secondMs = percentile(
      secondShows.map((sample) => sample.ms),
      50,
    );
    const secondCpuMs = percentile(
      secondShows.map((sample) => sample.cpuMs),
      50,
    );
    const secondRss = percentile(
      secondShows.map((sample) => sample.maxRssKb / 1024),
      50,
    );
    const importMs = median('import', (sample) => sample.ms);
    const discardMs = median('import-discard', (sample) => sample.ms);
    const floorMs = median('floor', (sample) => sample.ms);
    const parseMs = median('parse', (sample) => sample.ms);
    const stage = (key: keyof Breakdown): number =>
      percentile(
        breakdowns.map((breakdown) => breakdown[key]),
        50,
      );
    const stageRows: Array<[string, keyof Breakdown, string]> = [
      ['line split + UTF-8 decode alone (part of the next row)', 'decode', 'the floor pays it too'],
      ['split, decode, JSON.parse, blocks (the parser)', 'parse', 'one core; JSON.parse needs the decoded string'],
      ['number the events (`Object.assign`)', 'number', 'store'],
      [
        '`JSON.stringify` of every event',
        'stringify',
        'store; handing the objects to a worker costs as much (structured clone ≈ stringify)',
      ],
      ['UTF-8 encode into one buffer', 'encode', 'store'],
      ['one `write` per batch', 'write', 'store'],
      ['one `fdatasync` per batch', 'fsync', 'store; waiting on the disk, not CPU'],
    ];
    const breakdownTotal = stage('total');
    const storeStages = stage('number') + stage('stringify') + stage('encode') + stage('write') + stage('fsync');
    const breakdownRows = [
      ...stageRows.map(([name, key, note]) => [
        name,
        stage(key).toFixed(0),
        key === 'decode' ? '' : `${((stage(key) / breakdownTotal) * 100).toFixed(0)} %`,
        note,
      ]),
      [
        'everything else (reading the file, the loop)',
        Math.max(0, breakdownTotal - stage('parse') - storeStages).toFixed(0),
        '',
        '',
      ],
      ['total, stages in sequence as the import runs them', breakdownTotal.toFixed(0), '100 %', ''],
    ];
    const target = floorMs / 0.8;
    return [
      '## Import a Claude Code transcript',
      '',
      `${(generated.bytes / 1e6).toFixed(1)} MB, ${generated.lines} lines, ${generated.prompts} prompts (generated, Claude Code 2.1.22x record shapes); median of ${rounds} runs per variant, each in a fresh process; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores at the end.`,
      '',
      table(
        [
          'variant',
          'MB/s (wall)',
          'vs floor',
          'MB/s (CPU time)',
          'vs floor',
          'peak RSS (MB)',
          'vs floor',
          'RSS before reading (MB)',
          'target',
        ],
        rows,
      ),
      '',
      table(
        [
          'first `parley show` of the import',
          'ms (wall)',
          "vs floor's time",
          'ms (CPU time)',
          'vs floor',
          'peak RSS (MB)',
          'vs floor',
          'target',
        ],
        [
          [
            'first: open the store, parse the copy, render each block as it comes (nothing written, blocks not kept)',
            showMs.toFixed(0),
            `${(showMs / floorMs).toFixed(2)}×`,
            showCpuMs.toFixed(0),
            `${(showCpuMs / median('floor', (sample) => sample.cpuMs)).toFixed(2)}×`,
            showRss.toFixed(0),
            ratio(showRss, rss('floor')),
            '≤ 1.50× time, ≤ 2.00× memory',
          ],
          [
            'then the first `get_events`: build the log from the copy (parse, write, fsync)',
            buildMs.toFixed(0),
            `${(buildMs / floorMs).toFixed(2)}×`,
            buildCpuMs.toFixed(0),
            `${(buildCpuMs / median('floor', (sample) => sample.cpuMs)).toFixed(2)}×`,
            buildRss.toFixed(0),
            ratio(buildRss, rss('floor')),
            '',
          ],
          [
            'a show after that: open the store, read the built log, rebuild and render the blocks',
            secondMs.toFixed(0),
            `${(secondMs / floorMs).toFixed(2)}×`,
            secondCpuMs.toFixed(0),
            `${(secondCpuMs / median('floor', (sample) => sample.cpuMs)).toFixed(2)}×`,
            secondRss.toFixed(0),
            ratio(secondRss, rss('floor')),
            '',
          ],
        ],
      ),
      '',
      `The import took ${(importMs / 1000).toFixed(2)} s and wrote no events (they are built by the first reader of the stored events; a show parses the copy until then); the eager pipeline without its store took ${(discardMs / 1000).toFixed(2)} s. CPU time includes the garbage collector's helper threads (so wall time can be below it); wall time is what a user waits for, and suffers most from other load on the machine. "RSS before reading" is the process with its code loaded (the floor loads only the line splitter; Parley loads every back end through the layer's index).`,
      '',
      "### Where building the blocks goes (the first `get_events`' build, the eager import)",
      '',
      `Each stage timed on its own, in the eager pipeline's order and batch sizes (the breakdown child; median of ${rounds} runs; ms, garbage collection counted in the stage that allocates):`,
      '',
      table(['stage', 'ms', 'share', ''], breakdownRows),
      '',
      `The import target (0.8× the floor's ${floorMs.toFixed(0)} ms) allows ${target.toFixed(0)} ms; the import took ${importMs.toFixed(0)}. The first-show target (1.5× the floor) allows ${(floorMs * 1.5).toFixed(0)} ms; the first show took ${showMs.toFixed(0)}: it parses the copy, which costs at least the parser alone (${parseMs.toFixed(0)} ms, ${ratio(floorMs, parseMs)} the floor's speed), and renders each block as it comes; it writes nothing (serializing, writing and fsyncing the log, ${storeStages.toFixed(0)} ms in the stages above, is left to the first reader of the stored events). Meeting it needs a parser within about 25 % of a bare \`JSON.parse\`.`,
    ].join('\n');
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(children.floor, { force: true });
    rmSync(children.parley, { force: true });
    rmSync(children.breakdown, { force: true });
    rmSync(children.show, { force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
