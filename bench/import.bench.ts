/**
 * Importing a ~100 MB Claude Code JSONL transcript (issue 5): MB/s and peak memory of the import
 * (stream, parse into blocks, write into a file store) beside the floor (a bare streaming line
 * split + `JSON.parse` of the same file), plus the parser alone (events discarded) so the
 * parser's own cost and the store's are told apart, and the same import with the store's append
 * replaced by numbering the events and dropping them. Targets: ≥ 0.8× the floor's MB/s, peak memory
 * ≤ 2× the floor's.
 *
 * Each variant runs in a fresh child process (plain `node` on an esbuild bundle, so neither tsx
 * nor the other variants' garbage count), several rounds interleaved; the table shows medians.
 * Peak memory is the child's peak RSS (`process.resourceUsage().maxRSS`). The transcript is
 * generated into a temp folder by `test/fixtures/transcripts/generate.ts` and removed afterwards.
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
  const children = { floor: join(bundleDir, 'import-floor-child.mjs'), parley: join(bundleDir, 'import-parley-child.mjs') };
  try {
    for (const [name, contents] of [
      ['floor', FLOOR_CHILD],
      ['parley', PARLEY_CHILD],
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
    const runChild = (variant: string, dataDir: string): Sample => {
      const script = variant === 'floor' ? children.floor : children.parley;
      const output = execFileSync(process.execPath, [script, variant, transcript, dataDir], { encoding: 'utf8', maxBuffer: 1 << 20 });
      return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Sample;
    };
    // One untimed pass puts the file in the page cache for every variant alike.
    runChild('floor', '');
    for (let round = 0; round < rounds; round++) {
      for (const variant of variants) {
        const dataDir = join(work, `data-${round}`);
        samples.get(variant)!.push(runChild(variant, dataDir));
        rmSync(dataDir, { recursive: true, force: true });
      }
    }

    const median = (variant: string, pick: (sample: Sample) => number): number => percentile(samples.get(variant)!.map(pick), 50);
    const mbps = (variant: string): number => median(variant, (sample) => sample.bytes / 1e6 / (sample.ms / 1000));
    const cpuMbps = (variant: string): number => median(variant, (sample) => sample.bytes / 1e6 / (sample.cpuMs / 1000));
    const rss = (variant: string): number => median(variant, (sample) => sample.maxRssKb / 1024);
    const baseline = (variant: string): number => median(variant, (sample) => sample.baselineRssKb / 1024);
    const label: Record<(typeof variants)[number], string> = {
      floor: 'floor: line split + JSON.parse',
      parse: 'Parley parser (blocks built, then dropped)',
      'import-discard': 'Parley import, appends numbered and dropped',
      import: 'Parley import into the file store',
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
    const importMs = median('import', (sample) => sample.ms);
    const discardMs = median('import-discard', (sample) => sample.ms);
    const storeShare = Math.max(0, 1 - discardMs / importMs);
    return [
      '## Import a Claude Code transcript',
      '',
      `${(generated.bytes / 1e6).toFixed(1)} MB, ${generated.lines} lines, ${generated.prompts} prompts (generated, Claude Code 2.1.22x record shapes); median of ${rounds} runs per variant, each in a fresh process; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores at the end.`,
      '',
      table(['variant', 'MB/s (wall)', 'vs floor', 'MB/s (CPU time)', 'vs floor', 'peak RSS (MB)', 'vs floor', 'RSS before reading (MB)', 'target'], rows),
      '',
      `The file store accounts for about ${(storeShare * 100).toFixed(0)} % of the import's ${(importMs / 1000).toFixed(2)} s (the two import rows differ only in it): its \`append\` serializes every event, measures each line's UTF-8 length, writes and fsyncs, then parses every line back to return the numbered events. ${median('import', (sample) => sample.detail)} blocks written. CPU time includes the garbage collector's helper threads; wall time is what a user waits for, and suffers most from other load on the machine. "RSS before reading" is the process with its code loaded (the floor loads only the line splitter; Parley loads every back end through the layer's index).`,
    ].join('\n');
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(children.floor, { force: true });
    rmSync(children.parley, { force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
