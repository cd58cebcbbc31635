/**
 * Token counting: throughput (MB/s) of the tokenizers installed here on realistic text, counted per
 * ~4 KiB message as the session layer counts them, side by side in one run; cold start of each in a
 * fresh process; and Parley's counter (the chosen tokenizer behind a lazy load and a per-message cache).
 *
 * Corpus (deterministic, from files every checkout has after `npm ci`): prose = the README.md files of
 * node_modules; code = @types/node's .d.ts files; transcript = a JSONL log of stream events built from
 * both (tool calls with JSON input, tool output, assistant text), the shape Parley's logs have.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TokenCounter, createTokenizer, fallbackTokenCount } from '../src/conversation/index.js';
import { table } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const modules = join(root, 'node_modules');

const CHUNK_BYTES = 4096;
const SAMPLE_CHARS = 700_000;

/** A seeded PRNG (mulberry32): the same corpus on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

function readAll(files: readonly string[], limit: number): string {
  let text = '';
  for (const file of files) {
    if (text.length >= limit) break;
    try {
      text += `${readFileSync(file, 'utf8')}\n`;
    } catch {
      // A package without the file: skip it.
    }
  }
  return text.slice(0, limit);
}

/** Real English markdown: the READMEs of the installed packages. */
export function proseSample(limit = SAMPLE_CHARS): string {
  const files: string[] = [];
  for (const name of readdirSync(modules).sort()) {
    if (name.startsWith('.')) continue;
    const dir = join(modules, name);
    const names = name.startsWith('@')
      ? readdirSync(dir)
          .sort()
          .map((inner) => join(dir, inner))
      : [dir];
    for (const packageDir of names) files.push(join(packageDir, 'README.md'));
  }
  return readAll(files, limit);
}

/** Real TypeScript with doc comments: @types/node. */
export function codeSample(limit = SAMPLE_CHARS): string {
  const dir = join(modules, '@types', 'node');
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.d.ts'))
    .sort()
    .map((name) => join(dir, name))
    .filter((file) => statSync(file).isFile());
  return readAll(files, limit);
}

/** A transcript log: JSONL stream events of a tool-using agent, with text taken from the prose and code samples. */
export function transcriptSample(limit = SAMPLE_CHARS, prose = proseSample(), code = codeSample()): string {
  const random = seededRandom(7);
  const slice = (text: string, size: number) => {
    const start = Math.floor(random() * Math.max(1, text.length - size));
    return text.slice(start, start + size);
  };
  const lines: string[] = [];
  let size = 0;
  let seq = 0;
  const push = (event: Record<string, unknown>) => {
    const line = JSON.stringify({
      sessionId: 'dev-task-f1-t1-in_dev',
      conversationId: 'main',
      seq: seq++,
      at: 1_700_000_000_000 + seq,
      ...event,
    });
    lines.push(line);
    size += line.length + 1;
  };
  while (size < limit) {
    const id = `block-${seq}`;
    push({
      type: 'block_complete',
      block: { id, type: 'user_message', content: slice(prose, 200 + Math.floor(random() * 600)), createdAt: 1 },
    });
    push({
      type: 'block_complete',
      block: {
        id: `${id}-a`,
        type: 'assistant_text',
        content: slice(prose, 400 + Math.floor(random() * 1200)),
        createdAt: 1,
      },
    });
    const file = `src/${slice('abcdefghijklmnopqrstuvwxyz', 6)}.ts`;
    push({
      type: 'block_complete',
      block: {
        id: `${id}-u`,
        type: 'tool_use',
        toolUseId: `toolu_${seq}`,
        name: 'Read',
        input: { file_path: file, limit: 200 },
        status: 'success',
        createdAt: 1,
      },
    });
    push({
      type: 'block_complete',
      block: {
        id: `${id}-r`,
        type: 'tool_result',
        toolUseId: `toolu_${seq}`,
        content: slice(code, 1000 + Math.floor(random() * 3000)),
        isError: false,
        createdAt: 1,
      },
    });
  }
  return lines.join('\n').slice(0, limit);
}

/** Cuts a text into ~4 KiB pieces at line ends, as messages arrive. */
export function chunk(text: string, size = CHUNK_BYTES): string[] {
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const newline = text.lastIndexOf('\n', end);
      if (newline > start + size / 2) end = newline + 1;
    }
    chunks.push(text.slice(start, end));
    start = end;
  }
  return chunks;
}

type Count = (text: string) => number;

interface Candidate {
  name: string;
  /** The module a fresh process imports for the cold-start measurement (undefined: no import). */
  cold?: string;
  create: () => Promise<Count>;
}

const PLAIN = { disallowedSpecial: new Set<string>() };

const candidates: Candidate[] = [
  {
    name: '**Parley `TokenCounter`** (gpt-tokenizer cl100k_base, lazy, uncached)',
    create: async () => {
      const tokenizer = createTokenizer();
      await tokenizer.load();
      return (text) => tokenizer.count(text);
    },
  },
  {
    name: 'gpt-tokenizer o200k_base',
    cold: `const m = await import('gpt-tokenizer/encoding/o200k_base'); m.countTokens('hello world');`,
    create: async () => {
      const module = await import('gpt-tokenizer/encoding/o200k_base');
      return (text) => module.countTokens(text, PLAIN);
    },
  },
  {
    name: 'gpt-tokenizer cl100k_base',
    cold: `const m = await import('gpt-tokenizer/encoding/cl100k_base'); m.countTokens('hello world');`,
    create: async () => {
      const module = await import('gpt-tokenizer/encoding/cl100k_base');
      return (text) => module.countTokens(text, PLAIN);
    },
  },
  {
    name: 'js-tiktoken o200k_base (lite + ranks)',
    cold: `const { Tiktoken } = await import('js-tiktoken/lite'); const r = (await import('js-tiktoken/ranks/o200k_base')).default; new Tiktoken(r).encode('hello world');`,
    create: async () => {
      const { Tiktoken } = await import('js-tiktoken/lite');
      const ranks = (await import('js-tiktoken/ranks/o200k_base')).default;
      const encoder = new Tiktoken(ranks);
      return (text) => encoder.encode(text, [], []).length;
    },
  },
  {
    name: 'js-tiktoken cl100k_base (lite + ranks)',
    cold: `const { Tiktoken } = await import('js-tiktoken/lite'); const r = (await import('js-tiktoken/ranks/cl100k_base')).default; new Tiktoken(r).encode('hello world');`,
    create: async () => {
      const { Tiktoken } = await import('js-tiktoken/lite');
      const ranks = (await import('js-tiktoken/ranks/cl100k_base')).default;
      const encoder = new Tiktoken(ranks);
      return (text) => encoder.encode(text, [], []).length;
    },
  },
  {
    name: '@anthropic-ai/tokenizer, one `getTokenizer()` instance',
    cold: `const m = await import('@anthropic-ai/tokenizer'); m.getTokenizer().encode('hello world'.normalize('NFKC'), 'all');`,
    create: async () => {
      const module = await import('@anthropic-ai/tokenizer');
      const tokenizer = module.getTokenizer();
      return (text) => tokenizer.encode(text.normalize('NFKC'), 'all').length;
    },
  },
  { name: 'chars/4 (fallback only)', cold: '', create: async () => fallbackTokenCount },
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * CPU time (user + system of this process) of counting every chunk. Counting is synchronous and
 * single-threaded, so on an idle machine this equals wall time; on a loaded one (other processes
 * sharing the cores) it still measures the tokenizer rather than the wait for a core.
 */
function timeChunks(count: Count, chunks: readonly string[]): { ms: number; tokens: number } {
  const started = process.cpuUsage();
  let tokens = 0;
  for (const piece of chunks) tokens += count(piece);
  const used = process.cpuUsage(started);
  return { ms: (used.user + used.system) / 1000, tokens };
}

/** Wall and CPU milliseconds from a fresh process's first line to its first count (medians). */
function coldStart(source: string, runs: number): { wall: number; cpu: number } {
  const script = `const t0 = performance.now(); const c0 = process.cpuUsage(); ${source} const c = process.cpuUsage(c0); process.stdout.write(JSON.stringify([performance.now() - t0, (c.user + c.system) / 1000]));`;
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let run = 0; run < runs; run++) {
    const [w, c] = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' }),
    ) as [number, number];
    wall.push(w);
    cpu.push(c);
  }
  return { wall: median(wall), cpu: median(cpu) };
}

/** Cold start of Parley's lazy tokenizer: importing the conversation layer, then the first exact count. */
function parleyColdStart(runs: number): { importMs: number; firstCount: { wall: number; cpu: number } } {
  const script = [
    `const t0 = performance.now();`,
    `const m = await import('./src/conversation/index.ts');`,
    `const t1 = performance.now(); const c1 = process.cpuUsage();`,
    `await m.loadTokenizer(); m.estimateTokens('hello world');`,
    `const c = process.cpuUsage(c1);`,
    `process.stdout.write(JSON.stringify([t1 - t0, performance.now() - t1, (c.user + c.system) / 1000]));`,
  ].join(' ');
  const imports: number[] = [];
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let run = 0; run < runs; run++) {
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
    });
    const [importMs, countMs, cpuMs] = JSON.parse(output) as [number, number, number];
    imports.push(importMs);
    walls.push(countMs);
    cpus.push(cpuMs);
  }
  return { importMs: median(imports), firstCount: { wall: median(walls), cpu: median(cpus) } };
}

export async function run(): Promise<string> {
  const prose = proseSample();
  const code = codeSample();
  const samples = [
    { name: 'prose', chunks: chunk(prose) },
    { name: 'code', chunks: chunk(code) },
    { name: 'transcript', chunks: chunk(transcriptSample(SAMPLE_CHARS, prose, code)) },
  ];
  const bytes = samples.map((sample) => Buffer.byteLength(sample.chunks.join(''), 'utf8'));
  const counters = await Promise.all(
    candidates.map(async (candidate) => ({ candidate, count: await candidate.create() })),
  );

  const passes = 4;
  // results[candidate][sample] = ms per pass
  const times = counters.map(() => samples.map(() => [] as number[]));
  const totals = counters.map(() => samples.map(() => 0));
  for (let pass = 0; pass < passes; pass++) {
    counters.forEach(({ count }, candidateIndex) => {
      samples.forEach((sample, sampleIndex) => {
        const { ms, tokens } = timeChunks(count, sample.chunks);
        times[candidateIndex]![sampleIndex]!.push(ms);
        totals[candidateIndex]![sampleIndex] = tokens;
      });
    });
  }

  // Parley's cached path: the same messages counted again, as every request build does.
  const cachedCounter = new TokenCounter({ tokenizer: createTokenizer() });
  await cachedCounter.tokenizer.load();
  const keyed = samples.map((sample) =>
    sample.chunks.map((text, index) => ({ key: `${sample.name}-${index}#${text.length}`, text })),
  );
  for (const list of keyed) for (const { key, text } of list) cachedCounter.countKeyed(key, text);
  const cachedTimes = samples.map((_, sampleIndex) => {
    const runs: number[] = [];
    for (let pass = 0; pass < passes; pass++) {
      const started = performance.now();
      for (const { key, text } of keyed[sampleIndex]!) cachedCounter.countKeyed(key, text);
      runs.push(performance.now() - started);
    }
    return median(runs);
  });

  const mbps = (sampleIndex: number, ms: number) => bytes[sampleIndex]! / 1e6 / (Math.max(ms, 0.001) / 1000);
  const tokenReference = 1; // gpt-tokenizer o200k_base
  const reference = 2; // gpt-tokenizer cl100k_base: the fastest library, the one Parley wraps
  const rows = counters.map(({ candidate }, candidateIndex) => {
    const warm = samples.map((_, sampleIndex) => median(times[candidateIndex]![sampleIndex]!.slice(1)));
    const first = samples.map((_, sampleIndex) => times[candidateIndex]![sampleIndex]![0]!);
    const all = warm.reduce((sum, ms) => sum + ms, 0);
    const mixMbps = bytes.reduce((sum, value) => sum + value, 0) / 1e6 / (Math.max(all, 0.001) / 1000);
    const referenceAll = samples.reduce(
      (sum, _, sampleIndex) => sum + median(times[reference]![sampleIndex]!.slice(1)),
      0,
    );
    const tokensVsReference = samples
      .map((_, sampleIndex) => {
        const delta = totals[candidateIndex]![sampleIndex]! / totals[tokenReference]![sampleIndex]! - 1;
        return `${delta >= 0 ? '+' : ''}${(delta * 100).toFixed(1)} %`;
      })
      .join(' / ');
    return [
      candidate.name,
      `**${mixMbps.toFixed(1)}**`,
      warm.map((ms, sampleIndex) => `${mbps(sampleIndex, ms).toFixed(1)}`).join(' / '),
      first.map((ms, sampleIndex) => `${mbps(sampleIndex, ms).toFixed(1)}`).join(' / '),
      `${(referenceAll / all).toFixed(2)}×`,
      tokensVsReference,
    ];
  });
  const cachedAll = cachedTimes.reduce((sum, ms) => sum + ms, 0);
  rows.splice(1, 0, [
    '**Parley `TokenCounter`, counts cached** (a message counted again)',
    `**${(bytes.reduce((sum, value) => sum + value, 0) / 1e6 / (cachedAll / 1000)).toFixed(0)}**`,
    cachedTimes.map((ms, sampleIndex) => mbps(sampleIndex, ms).toFixed(0)).join(' / '),
    '–',
    `${(samples.reduce((sum, _, sampleIndex) => sum + median(times[reference]![sampleIndex]!.slice(1)), 0) / cachedAll).toFixed(0)}×`,
    'same counts as uncached',
  ]);

  const runs = 5;
  const coldRows = candidates
    .filter((candidate) => candidate.cold !== undefined)
    .map((candidate) => {
      const cold = coldStart(candidate.cold!, runs);
      return [candidate.name, `${cold.cpu.toFixed(0)} ms`, `${cold.wall.toFixed(0)} ms`];
    });
  const parley = parleyColdStart(runs);
  coldRows.unshift([
    '**Parley**: `loadTokenizer()` + first count, after importing `src/conversation` (which loads no tokenizer)',
    `**${parley.firstCount.cpu.toFixed(0)} ms**`,
    `${parley.firstCount.wall.toFixed(0)} ms (the import itself: ${parley.importMs.toFixed(0)} ms under tsx)`,
  ]);

  const sizes = samples
    .map((sample, index) => `${sample.name} ${(bytes[index]! / 1e6).toFixed(2)} MB (${sample.chunks.length} messages)`)
    .join(', ');
  return [
    '## Token counting',
    '',
    `Each message (~4 KiB) counted separately, as the session layer does. Corpus: ${sizes}. ${passes} passes, all tokenizers interleaved; warm = median of passes 2–${passes}. Throughput is MB per second of CPU time (this process's user + system), so other work on the machine (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores during this run) does not skew it. Target: Parley counts at least as fast as the fastest tokenizer measured (≈ 12 MB/s here), loaded lazily.`,
    '',
    table(
      [
        'tokenizer',
        'MB/s all, warm',
        'MB/s prose / code / transcript, warm',
        'first pass',
        'speed vs gpt-tokenizer cl100k',
        'tokens vs o200k (prose / code / transcript)',
      ],
      rows,
    ),
    '',
    `Cold start in a fresh \`node\` process (median of ${runs}), from the script's first line to the first count returned:`,
    '',
    table(['tokenizer', 'cold start, CPU', 'cold start, wall'], coldRows),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await run());
}
