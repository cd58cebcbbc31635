/**
 * The path race, on demand (`npm run bench -- path-race`; `PARLEY_BENCH_RACE_TRIES`, default
 * 10,000; `PARLEY_BENCH_RACE_AGENTS`, default 4). Several agents call the workspace tools at once,
 * each on its own folder `agent-<k>/dir/file.txt`, while one racing process per agent (a separate
 * process, as an agent's command is: the tools' synchronous descent cannot be raced from inside
 * this one) swaps, over and over, the folder `dir` for a symbolic link to a folder outside the
 * project, and the file for a link to a file outside. Outside, every name and every content
 * carries the word OUTSIDE.
 *
 * An escape is a tool call that read outside (its answer holds OUTSIDE: contents, or names a
 * listing or search found there) or wrote outside (the outside file changed, or a file appeared
 * there). The table counts calls, escapes (must be 0), refusals and answers per tool. Exits with
 * an error when any tool escaped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { grepProject, ProjectWorkspace, type WorkspaceTool } from '../src/workspace/index.js';
import { table } from './stats.js';

const OUTSIDE_CONTENT = 'OUTSIDE secret contents\n';
const OUTSIDE_NAME = 'OUTSIDE-only-name.txt';

/**
 * The racer: loops until killed. Each round puts the real tree back first (a write may have made a
 * folder where the link was), then swaps the folder, then the file, each for a moment.
 */
const RACER = `
const fs = require('node:fs');
const [base, outside] = process.argv.slice(1);
const dir = base + '/dir', real = base + '/dir.real', file = dir + '/file.txt', kept = dir + '/.kept';
const quiet = (action) => { try { action(); } catch {} };
const isLink = (at) => { try { return fs.lstatSync(at).isSymbolicLink(); } catch { return false; } };
const exists = (at) => { try { fs.lstatSync(at); return true; } catch { return false; } };
for (;;) {
  if (isLink(dir)) quiet(() => fs.unlinkSync(dir));
  if (exists(real)) { quiet(() => fs.rmSync(dir, { recursive: true, force: true })); quiet(() => fs.renameSync(real, dir)); }
  if (isLink(file)) quiet(() => fs.unlinkSync(file));
  if (exists(kept)) quiet(() => fs.renameSync(kept, file));
  // The folder: moved aside and a link to the outside folder put in its place, then back.
  quiet(() => { fs.renameSync(dir, real); fs.symlinkSync(outside + '/dir', dir); });
  for (let spin = Math.random() * 2000; spin > 0; spin--);
  quiet(() => fs.unlinkSync(dir));
  quiet(() => fs.renameSync(real, dir));
  // The file: moved aside and a link to the outside file put at its name, then back.
  quiet(() => { fs.renameSync(file, kept); fs.symlinkSync(outside + '/dir/file.txt', file); });
  for (let spin = Math.random() * 2000; spin > 0; spin--);
  quiet(() => fs.unlinkSync(file));
  quiet(() => fs.renameSync(kept, file));
}
`;

type ToolName = 'read_file' | 'write_file' | 'edit_file' | 'list_files' | 'glob' | 'grep (rg)' | 'grep (node)';
const TOOLS: readonly ToolName[] = [
  'read_file',
  'write_file',
  'edit_file',
  'list_files',
  'glob',
  'grep (rg)',
  'grep (node)',
];

interface Counts {
  calls: number;
  escapes: number;
  refused: number;
  answered: number;
  example?: string;
}

export interface PathRaceReport {
  tries: number;
  agents: number;
  seconds: number;
  byTool: Record<ToolName, Counts>;
  escapes: number;
}

export async function runPathRace(options: { tries: number; agents: number }): Promise<PathRaceReport> {
  const top = await fs.mkdtemp(path.join(tmpdir(), 'parley-path-race-'));
  const root = path.join(top, 'project');
  const outside = path.join(top, 'outside');
  const racers: ChildProcess[] = [];
  try {
    await fs.mkdir(path.join(outside, 'dir'), { recursive: true });
    await fs.writeFile(path.join(outside, 'dir', 'file.txt'), OUTSIDE_CONTENT);
    await fs.writeFile(path.join(outside, 'dir', OUTSIDE_NAME), OUTSIDE_CONTENT);
    for (let agent = 0; agent < options.agents; agent++) {
      await fs.mkdir(path.join(root, `agent-${agent}`, 'dir'), { recursive: true });
      await fs.writeFile(path.join(root, `agent-${agent}`, 'dir', 'file.txt'), 'inside: alpha\n');
    }
    const workspace = await ProjectWorkspace.open({ root, sandbox: 'none' });
    const tools = new Map<string, WorkspaceTool>(
      workspace
        .tools({ sessionId: 'race', permissions: ['files-read', 'files-write'], mode: 'bypassPermissions' })
        .map((tool) => [tool.name, tool]),
    );
    for (let agent = 0; agent < options.agents; agent++) {
      const racer = spawn(process.execPath, ['-e', RACER, path.join(root, `agent-${agent}`), outside], {
        stdio: 'ignore',
      });
      racers.push(racer);
    }

    const byTool = Object.fromEntries(TOOLS.map((name) => [name, { calls: 0, escapes: 0, refused: 0, answered: 0 }]));
    const counts = byTool as Record<ToolName, Counts>;
    const outsideState = () =>
      JSON.stringify([
        readdirSync(path.join(outside, 'dir')).sort(),
        readFileSync(path.join(outside, 'dir', 'file.txt'), 'utf8'),
      ]);
    const untouched = outsideState();
    const escaped = (name: ToolName, detail: string) => {
      counts[name].escapes += 1;
      counts[name].example ??= detail.slice(0, 160).replace(/\n/g, ' ');
    };

    const call = async (agent: number, name: ToolName): Promise<void> => {
      const base = `agent-${agent}`;
      const file = `${base}/dir/file.txt`;
      counts[name].calls += 1;
      let content: string;
      let failed: boolean;
      try {
        if (name === 'grep (node)' || name === 'grep (rg)') {
          const found = await grepProject(
            workspace.paths,
            { pattern: 'OUTSIDE|inside', path: base },
            { maxResults: 100, engine: name === 'grep (rg)' ? 'rg' : 'node' },
          );
          content = found.lines.join('\n');
          failed = false;
        } else {
          const input =
            name === 'read_file'
              ? { path: file }
              : name === 'write_file'
                ? { path: file, content: 'inside: alpha\n' }
                : name === 'edit_file'
                  ? { path: file, old_string: 'alpha', new_string: 'alpha!' }
                  : name === 'list_files'
                    ? { path: `${base}/dir` }
                    : { pattern: `${base}/**/*` };
          const result = await tools.get(name)!.execute(input, {});
          content = result.content;
          failed = result.isError === true;
        }
      } catch (error) {
        content = String(error);
        failed = true;
      }
      if (failed) counts[name].refused += 1;
      else counts[name].answered += 1;
      // A refusal that quotes an outside path is no escape; an answer that holds OUTSIDE is one.
      if (!failed && content.includes('OUTSIDE')) escaped(name, content);
      if (name === 'write_file' || name === 'edit_file') {
        const now = outsideState();
        if (now !== untouched) {
          escaped(name, `the outside folder changed: ${now}`);
          // Put it back, so the next escape is seen too.
          for (const entry of readdirSync(path.join(outside, 'dir')))
            if (entry !== 'file.txt' && entry !== OUTSIDE_NAME)
              await fs.rm(path.join(outside, 'dir', entry), { force: true });
          writeFileSync(path.join(outside, 'dir', 'file.txt'), OUTSIDE_CONTENT);
        }
      }
    };

    const started = performance.now();
    let next = 0;
    // Each agent calls its tools one after another, as an agent does; the agents run at once.
    await Promise.all(
      Array.from({ length: options.agents }, async (_, agent) => {
        while (next < options.tries) {
          const index = next++;
          await call(agent, TOOLS[index % TOOLS.length]!);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const escapes = Object.values(counts).reduce((sum, entry) => sum + entry.escapes, 0);
    return { tries: options.tries, agents: options.agents, seconds, byTool: counts, escapes };
  } finally {
    for (const racer of racers) racer.kill('SIGKILL');
    await Promise.all(racers.map((racer) => new Promise((resolve) => racer.once('exit', resolve))));
    await fs.rm(top, { recursive: true, force: true });
  }
}

export function formatPathRace(report: PathRaceReport): string {
  const rows = TOOLS.map((name) => {
    const entry = report.byTool[name];
    return [
      name,
      String(entry.calls),
      String(entry.escapes),
      String(entry.refused),
      String(entry.answered),
      entry.example ?? '',
    ];
  });
  return [
    `## Path race: ${report.tries} tool calls by ${report.agents} agents at once, each folder and file swapped for a link out by a racing process`,
    '',
    `**escapes: ${report.escapes}** (must be 0) · ${report.seconds.toFixed(1)} s`,
    '',
    table(['tool', 'calls', 'escapes', 'refused (an error)', 'answered', 'first escape'], rows),
    '',
  ].join('\n');
}

export async function run(): Promise<string> {
  const report = await runPathRace({
    tries: Number(process.env['PARLEY_BENCH_RACE_TRIES'] ?? 10_000),
    agents: Number(process.env['PARLEY_BENCH_RACE_AGENTS'] ?? 4),
  });
  const text = formatPathRace(report);
  if (report.escapes > 0) throw new Error(`The path race found ${report.escapes} escapes.\n\n${text}`);
  return text;
}
