/**
 * The workspace tools:
 * - overhead per tool call: `read_file` and `edit_file` (bypassPermissions: no approval wait) called
 *   through their ToolDefinition (input validation, confinement with real paths, formatting, the
 *   diff), beside the same Node calls made directly (`fs.readFile`; read + replace + write).
 *   Target: at most 1 ms per call over the direct call.
 * - `grep` over a generated tree of 10,000 files: the tool with `rg`, the tool's built-in Node
 *   search, and `rg` spawned directly on the same tree (when rg is installed).
 * `PARLEY_BENCH_CALLS` sets calls per side (default 2,000); `PARLEY_BENCH_GREP_RUNS` grep runs (default 5).
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { grepProject, ProjectWorkspace, type WorkspaceTool } from '../src/workspace/index.js';
import { findOnPath } from '../src/workspace/sandbox.js';
import { formatMs, percentile, ratio, table } from './stats.js';

async function time(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

const SOURCE =
  Array.from(
    { length: 200 },
    (_, index) => `export const value${index} = ${index}; // line ${index + 1} of a typical module`,
  ).join('\n') + '\n';

async function overheadSection(root: string): Promise<string> {
  const calls = Number(process.env['PARLEY_BENCH_CALLS'] ?? 2_000);
  await fs.writeFile(path.join(root, 'module.ts'), SOURCE);
  await fs.writeFile(path.join(root, 'direct.ts'), SOURCE);
  const workspace = await ProjectWorkspace.open({ root, sandbox: 'none' });
  const tools = new Map<string, WorkspaceTool>(
    workspace
      .tools({ sessionId: 'bench', permissions: ['files-read', 'files-write'], mode: 'bypassPermissions' })
      .map((tool) => [tool.name, tool]),
  );
  const readTool = tools.get('read_file')!;
  const editTool = tools.get('edit_file')!;
  const samples = {
    read: [] as number[],
    readDirect: [] as number[],
    edit: [] as number[],
    editDirect: [] as number[],
  };
  const direct = path.join(root, 'direct.ts');
  for (let call = 0; call < calls + 100; call++) {
    const warm = call < 100;
    const from = call % 2 === 0 ? 'value7 = 7;' : 'value7 = 8;';
    const to = call % 2 === 0 ? 'value7 = 8;' : 'value7 = 7;';
    const a = await time(() => readTool.execute({ path: 'module.ts' }, {}));
    const b = await time(() => fs.readFile(direct, 'utf8'));
    const c = await time(async () => {
      const result = await editTool.execute({ path: 'module.ts', old_string: from, new_string: to }, {});
      if (result.isError) throw new Error(result.content);
    });
    const d = await time(async () => {
      const text = await fs.readFile(direct, 'utf8');
      await fs.writeFile(direct, text.replace(from, to));
    });
    if (warm) continue;
    samples.read.push(a);
    samples.readDirect.push(b);
    samples.edit.push(c);
    samples.editDirect.push(d);
  }
  const median = (values: number[]) => percentile(values, 50);
  const rows = [
    [
      'read_file (tool)',
      formatMs(median(samples.read)),
      formatMs(percentile(samples.read, 95)),
      formatMs(median(samples.read) - median(samples.readDirect)),
      ratio(median(samples.read), median(samples.readDirect)),
    ],
    [
      'fs.readFile (direct)',
      formatMs(median(samples.readDirect)),
      formatMs(percentile(samples.readDirect, 95)),
      '—',
      '1.00×',
    ],
    [
      'edit_file (tool, with fsync + diff)',
      formatMs(median(samples.edit)),
      formatMs(percentile(samples.edit, 95)),
      formatMs(median(samples.edit) - median(samples.editDirect)),
      ratio(median(samples.edit), median(samples.editDirect)),
    ],
    [
      'readFile + replace + writeFile (direct)',
      formatMs(median(samples.editDirect)),
      formatMs(percentile(samples.editDirect, 95)),
      '—',
      '1.00×',
    ],
  ];
  return [
    `### Tool-call overhead (${calls} calls each, a 200-line file)`,
    '',
    table(['call', 'median', 'p95', 'overhead per call', 'vs direct'], rows),
    '',
    `Target: ≤ 1 ms per call over the direct call. edit_file's direct baseline writes in place without fsync or a diff; the tool writes temp + fsync + rename and computes the unified diff the UIs show.`,
  ].join('\n');
}

async function generateTree(root: string, files: number): Promise<void> {
  const perFolder = 100;
  for (let folder = 0; folder < files / perFolder; folder++) {
    const dir = path.join(root, 'src', `pkg${folder}`);
    await fs.mkdir(dir, { recursive: true });
    await Promise.all(
      Array.from({ length: perFolder }, (_, index) => {
        const number = folder * perFolder + index;
        const lines = Array.from(
          { length: 40 },
          (_, line) => `const item${line} = compute(${number}, ${line}); // ordinary code line`,
        );
        if (number % 97 === 0) lines.push(`// NEEDLE marker in file ${number}`);
        return fs.writeFile(path.join(dir, `file${index}.ts`), lines.join('\n') + '\n');
      }),
    );
  }
}

function rgDirect(root: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('rg', ['--line-number', '--no-heading', '--color', 'never', 'NEEDLE', '.'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let lines = 0;
    child.stdout.on('data', (chunk: Buffer) => (lines += chunk.toString().split('\n').length - 1));
    child.on('error', reject);
    child.on('close', () => resolve(lines));
  });
}

async function grepSection(root: string): Promise<string> {
  const runs = Number(process.env['PARLEY_BENCH_GREP_RUNS'] ?? 5);
  await generateTree(root, 10_000);
  const workspace = await ProjectWorkspace.open({ root, sandbox: 'none' });
  const hasRg = findOnPath('rg') !== undefined;
  const sides: Array<{ name: string; run: () => Promise<number> }> = [
    {
      name: 'grep tool, built-in Node search',
      run: async () =>
        (await grepProject(workspace.paths, { pattern: 'NEEDLE' }, { maxResults: 10_000, engine: 'node' })).lines
          .length,
    },
    ...(hasRg
      ? [
          {
            name: 'grep tool, through rg',
            run: async () =>
              (await grepProject(workspace.paths, { pattern: 'NEEDLE' }, { maxResults: 10_000, engine: 'rg' })).lines
                .length,
          },
          { name: 'rg spawned directly', run: () => rgDirect(root) },
        ]
      : []),
  ];
  const samples = new Map(sides.map((side) => [side.name, [] as number[]]));
  const found = new Map<string, number>();
  for (let run = 0; run < runs + 1; run++) {
    for (const side of sides) {
      let count = 0;
      const elapsed = await time(async () => (count = await side.run()));
      found.set(side.name, count);
      if (run > 0) samples.get(side.name)!.push(elapsed);
    }
  }
  const baseline = hasRg ? percentile(samples.get('rg spawned directly')!, 50) : undefined;
  const rows = sides.map((side) => {
    const values = samples.get(side.name)!;
    return [
      side.name,
      formatMs(percentile(values, 50)),
      formatMs(percentile(values, 95)),
      String(found.get(side.name)),
      baseline ? ratio(percentile(values, 50), baseline) : '—',
    ];
  });
  return [
    `### grep over 10,000 files (${runs} runs each, ${found.get(sides[0]!.name)} matching lines)`,
    '',
    table(['search', 'median', 'p95', 'lines found', 'vs rg'], rows),
    hasRg ? '' : '\nrg is not installed: only the built-in search was measured.',
  ].join('\n');
}

export async function run(): Promise<string> {
  const root = await fs.mkdtemp(path.join(tmpdir(), 'parley-bench-workspace-'));
  try {
    const overhead = await overheadSection(root);
    const grep = await grepSection(path.join(root, 'tree'));
    return ['## Workspace tools', '', overhead, '', grep].join('\n');
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
}
