/**
 * Importing a ~100 MB Codex rollout: MB/s and peak memory of `parley import` into a file store beside
 * the floor (a bare streaming line split + `JSON.parse` of every line of the same file). Target:
 * the import at ≥ 0.8× the floor's MB/s.
 *
 * The import row follows the product path: into the file store a new rollout is copied verbatim
 * (kernel-side) and scanned for the listing (`CodexRolloutScan`), its blocks built on the session's
 * first read. The other rows show what building the blocks costs: the reader alone (blocks built,
 * then dropped), the eager import into a memory store (what `--watch` and a re-import do), and the
 * first read of the imported session, which builds its log (`get_events`).
 *
 * Each variant runs in a fresh child process (plain `node` on an esbuild bundle), several rounds
 * interleaved; the table shows medians. The rollout is generated into a temp folder by
 * `test/fixtures/transcripts/generate-codex.ts` and removed afterwards.
 * `PARLEY_BENCH_IMPORT_MB` sets its size (default 100), `PARLEY_BENCH_IMPORT_ROUNDS` the rounds (default 3).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { generateCodexRollout } from '../test/fixtures/transcripts/generate-codex.js';
import { percentile, ratio, table } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const FLOOR_CHILD = `
import { createReadStream } from 'node:fs';
import { LineSplitter } from './src/backends/transcripts/lines.js';

const [, path] = process.argv.slice(2);
const started = performance.now();
const cpu = process.cpuUsage();
let detail = 0;
const splitter = new LineSplitter((line) => { if (line.length > 0) { JSON.parse(line); detail++; } });
for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) splitter.push(chunk);
splitter.end();
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ variant: 'floor', ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, bytes: splitter.bytesRead, detail, maxRssKb: process.resourceUsage().maxRSS }));
`;

const PARLEY_CHILD = `
import { createReadStream, statSync } from 'node:fs';
import { LineSplitter, CodexRolloutParser } from './src/backends/index.js';
import { createFileStore, createMemoryStore } from './src/store/index.js';
import { createSessionManager } from './src/sessions/index.js';
import { importTranscripts } from './src/sessions/import/index.js';

const [variant, path, dataDir, sessionId] = process.argv.slice(2);
const started = performance.now();
const cpu = process.cpuUsage();
let detail = 0;
const bytes = statSync(path).size;
if (variant === 'parse') {
  const parser = new CodexRolloutParser({ emit: () => { detail++; } });
  const splitter = new LineSplitter(
    (line, number, terminated) => parser.line(line, number, terminated),
    (buffer, start, end, number, terminated) => parser.lineBytes(buffer, start, end, number, terminated),
  );
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) splitter.push(chunk);
  splitter.end();
  parser.end();
} else if (variant === 'build') {
  const manager = await createSessionManager({ dataDir, preloadTokenizer: false });
  detail = (await manager.getEvents(sessionId)).length;
  await manager.close();
} else {
  const store = variant === 'import' ? await createFileStore({ dataDir, onWarning: () => {} }) : createMemoryStore();
  const result = await importTranscripts(path, { store });
  await store.close();
  detail = result.sessions[0]?.blocks ?? 0;
}
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ variant, ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, bytes, detail, maxRssKb: process.resourceUsage().maxRSS }));
`;

interface Sample {
  variant: string;
  ms: number;
  cpuMs: number;
  bytes: number;
  detail: number;
  maxRssKb: number;
}

export async function run(): Promise<string> {
  const megabytes = Number(process.env['PARLEY_BENCH_IMPORT_MB'] ?? 100);
  const rounds = Number(process.env['PARLEY_BENCH_IMPORT_ROUNDS'] ?? 3);
  const work = mkdtempSync(join(tmpdir(), 'parley-codex-import-bench-'));
  const bundleDir = join(root, 'bench', '.data');
  mkdirSync(bundleDir, { recursive: true });
  const children = {
    floor: join(bundleDir, 'codex-import-floor-child.mjs'),
    parley: join(bundleDir, 'codex-import-parley-child.mjs'),
  };
  try {
    for (const [name, contents] of [
      ['floor', FLOOR_CHILD],
      ['parley', PARLEY_CHILD],
    ] as const) {
      await build({
        stdin: { contents, resolveDir: root, loader: 'ts', sourcefile: `codex-import-${name}-child.ts` },
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        outfile: children[name],
        logLevel: 'error',
      });
    }
    const threadId = '01a23550-caa9-7e73-935b-f8d9cd460c65';
    const rollout = join(work, `rollout-2026-11-30T09-00-00-${threadId}.jsonl`);
    const generated = await generateCodexRollout(rollout, { targetBytes: megabytes * 1e6, threadId });
    const runChild = (variant: string, dataDir: string): Sample => {
      const script = variant === 'floor' ? children.floor : children.parley;
      const output = execFileSync(process.execPath, [script, variant, rollout, dataDir, `codex-${threadId}`], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Sample;
    };
    const variants = ['floor', 'import', 'build', 'parse', 'import-eager'] as const;
    const samples = new Map<string, Sample[]>(variants.map((variant) => [variant, []]));
    // One untimed pass puts the file in the page cache for every variant alike.
    runChild('floor', '');
    for (let round = 0; round < rounds; round++) {
      const dataDir = join(work, `data-${round}`);
      for (const variant of variants) {
        const sample = runChild(variant, dataDir);
        // The build reads the import's data folder; it has the rollout's bytes to build from.
        samples.get(variant)!.push(variant === 'build' ? { ...sample, bytes: generated.bytes } : sample);
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
    const median = (variant: string, pick: (sample: Sample) => number): number =>
      percentile(samples.get(variant)!.map(pick), 50);
    const mbps = (variant: string): number => median(variant, (sample) => sample.bytes / 1e6 / (sample.ms / 1000));
    const rss = (variant: string): number => median(variant, (sample) => sample.maxRssKb / 1024);
    const label: Record<(typeof variants)[number], string> = {
      floor: 'floor: line split + JSON.parse of every line',
      import: '`parley import` into the file store (copy + scan)',
      build: 'first read of the imported session (builds its log)',
      parse: 'Codex rollout reader alone (blocks built, then dropped)',
      'import-eager': 'eager import into a memory store (blocks built and appended)',
    };
    const rows = variants.map((variant) => [
      label[variant],
      `${median(variant, (sample) => sample.ms).toFixed(0)} ms`,
      `${mbps(variant).toFixed(0)} MB/s`,
      ratio(mbps(variant), mbps('floor')),
      `${rss(variant).toFixed(0)} MB`,
      variant === 'import' ? '≥ 0.80×' : '',
    ]);
    const importRatio = mbps('import') / mbps('floor');
    return [
      `## Codex rollout import (${(generated.bytes / 1e6).toFixed(0)} MB, ${generated.lines.toLocaleString('en')} lines, ${generated.turns.toLocaleString('en')} turns; median of ${rounds})`,
      '',
      table(['variant', 'time', 'MB/s', 'vs floor', 'peak RSS', 'target'], rows),
      '',
      `Import speed ratio (import MB/s ÷ floor MB/s): ${importRatio.toFixed(2)}× — target ≥ 0.80×: ${importRatio >= 0.8 ? 'met' : 'NOT met'}.`,
    ].join('\n');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await run());
