/**
 * A dev agent's "Ralph loop": a dev agent iterates on a task until the project's build,
 * lint and test checks pass. The checks are real commands run in the project folder. After each
 * iteration the loop's state (iteration, passed and failed checks, last error) goes into the
 * `ralphLoop` of the dev agent's task session checkpoint (`dev-task-{feature}-{task}-in_dev`), and
 * after `askAfterFailures` failed iterations in a row the user is asked whether to go on.
 *
 * Runs offline: with no `projectDir` it makes a small temporary project with a buggy `sum`, and
 * the scripted dev agent gets it right on its fourth try.
 *   npx tsx examples/dev-loop.ts
 *   parley run examples/dev-loop.ts [--input '{"askAfterFailures":3}']
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { createScriptedBackend, defineAgent, defineHarness, type ScriptedCall, type ScriptStep } from 'parley';

/** A check is a command run in the project folder; exit code 0 passes. */
export interface Check {
  name: string;
  command: string;
  args: string[];
}

export interface DevLoopInput {
  task?: string;
  /** The project to work in; default: a fresh temporary sample project (removed afterwards). */
  projectDir?: string;
  checks?: Check[];
  /** Ask the user after this many failed iterations in a row (default 2). */
  askAfterFailures?: number;
  /** Stop after this many iterations in all (default 8). */
  maxIterations?: number;
  /** Milliseconds to wait for the user's answer; then the loop stops (default: wait). */
  askTimeoutMs?: number;
  featureId?: string;
  taskId?: string;
}

const SAMPLE_TASK =
  'Make `sum(numbers)` in src/sum.mjs return the sum of the numbers, following the lint rules (no `var`).';
const SAMPLE_SOURCE = 'export function sum(numbers) {\n  return 0;\n}\n';

/** The sample project's checks: `node --check`, a small lint rule and a test, each a `node -e` script. */
export function sampleChecks(): Check[] {
  const node = process.execPath;
  const lint = [
    "const text = require('node:fs').readFileSync('src/sum.mjs', 'utf8');",
    "const line = text.split('\\n').findIndex((l) => /\\bvar\\b/.test(l));",
    "if (line >= 0) { console.error('src/sum.mjs:' + (line + 1) + ': no-var: use let or const'); process.exit(1); }",
  ].join('\n');
  const test = [
    "const { sum } = await import(require('node:url').pathToFileURL(require('node:path').resolve('src/sum.mjs')).href);",
    'const got = sum([1, 2, 3]);',
    "if (got !== 6) { console.error('sum([1, 2, 3]) returned ' + got + ', expected 6'); process.exit(1); }",
  ].join('\n');
  return [
    { name: 'build', command: node, args: ['--check', 'src/sum.mjs'] },
    { name: 'lint', command: node, args: ['-e', lint] },
    {
      name: 'test',
      command: node,
      args: [
        '--input-type=module',
        '-e',
        `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${test}`,
      ],
    },
  ];
}

/** The scripted dev agent's attempts, by iteration: a syntax error, a lint error, a wrong result, then right. */
const ATTEMPTS = [
  {
    summary: 'Loop over the numbers.',
    source:
      'export function sum(numbers) {\n  let total = 0\n  for (const n of numbers) {\n    total += n;\n  return total;\n}\n',
  },
  {
    summary: 'Fixed the missing brace.',
    source:
      'export function sum(numbers) {\n  var total = 0;\n  for (const n of numbers) total += n;\n  return total;\n}\n',
  },
  {
    summary: 'Use let instead of var.',
    source:
      'export function sum(numbers) {\n  let total = 0;\n  for (let i = 1; i < numbers.length; i++) total += numbers[i];\n  return total;\n}\n',
  },
  {
    summary: 'Start the loop at the first number.',
    source:
      'export function sum(numbers) {\n  let total = 0;\n  for (const n of numbers) total += n;\n  return total;\n}\n',
  },
];

function scriptedDev(call: ScriptedCall): ScriptStep[] {
  const iteration = Number(/Iteration (\d+)/.exec(call.prompt)?.[1] ?? '1');
  const attempt = ATTEMPTS[Math.min(iteration, ATTEMPTS.length) - 1]!;
  return [
    { type: 'thinking', text: `Iteration ${iteration}: reading the failing checks.` },
    {
      type: 'text',
      text: JSON.stringify({ files: [{ path: 'src/sum.mjs', content: attempt.source }], summary: attempt.summary }),
    },
  ];
}

const ChangeSchema = z.object({
  files: z.array(z.object({ path: z.string().min(1), content: z.string() })),
  summary: z.string(),
});

export const dev = defineAgent({
  name: 'Dev',
  role: 'You implement one task in the project and iterate until the build, the lint and the tests pass.',
  instructions:
    'Answer with JSON: {"files":[{"path": relative path, "content": the whole new file}], "summary": what you changed}.',
  agentType: 'dev',
  backend: createScriptedBackend({ name: 'scripted-dev', defaultTurn: scriptedDev }),
  outputSchema: ChangeSchema,
});

export interface CheckResult {
  name: string;
  passed: boolean;
  output: string;
}

/** Runs a check; its output has the project path replaced by `.`, so results read the same in any folder. */
export function runCheck(check: Check, projectDir: string, signal: AbortSignal): Promise<CheckResult> {
  return new Promise((done) => {
    execFile(
      check.command,
      check.args,
      { cwd: projectDir, signal, timeout: 60_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        const output = `${stderr}${stdout}`
          .split(projectDir + sep)
          .join('')
          .split(projectDir)
          .join('.')
          .trim();
        done({ name: check.name, passed: error === null, output });
      },
    );
  });
}

/** The line of a check's output that says what went wrong. */
function firstError(result: CheckResult): string {
  const lines = result.output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const pick = lines.find((line) => /Error|error|expected|no-var/.test(line)) ?? lines[0] ?? 'failed with no output';
  return `${result.name}: ${pick}`;
}

async function writeFiles(projectDir: string, files: Array<{ path: string; content: string }>): Promise<void> {
  for (const file of files) {
    const target = resolve(projectDir, file.path);
    if (relative(projectDir, target).startsWith('..') || target === projectDir) {
      throw new Error(`The dev agent tried to write outside the project: ${file.path}`);
    }
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, file.content);
  }
}

export type DevLoopResult =
  | { status: 'passed'; iterations: number; summary: string; source?: string }
  | { status: 'stopped' | 'gave-up'; iterations: number; lastError: string };

const devLoop = defineHarness({
  name: 'dev-loop',
  agents: { dev },
  state: (input: DevLoopInput | undefined) => ({
    input: input ?? {},
    iteration: 0,
    passedChecks: [] as string[],
    failedChecks: [] as string[],
    lastError: undefined as string | undefined,
  }),
  run: async ({ agents, state, session, sessionManager, signal, phase, task, emit }): Promise<DevLoopResult> => {
    const input = state.input;
    const sample = input.projectDir === undefined;
    const projectDir = input.projectDir ?? (await mkdtemp(join(tmpdir(), 'parley-dev-loop-')));
    try {
      if (sample) {
        await mkdir(join(projectDir, 'src'), { recursive: true });
        await writeFile(join(projectDir, 'src', 'sum.mjs'), SAMPLE_SOURCE);
      }
      const checks = input.checks ?? sampleChecks();
      const askAfter = input.askAfterFailures ?? 2;
      const maxIterations = input.maxIterations ?? 8;
      const taskText = input.task ?? SAMPLE_TASK;

      // A task session: the dev agent's conversation and its Ralph Loop checkpoint.
      const sessionId = await agents.dev.useSession({
        type: 'task',
        agentType: 'dev',
        featureId: input.featureId ?? 'sample',
        taskId: input.taskId ?? 'sum',
        taskState: 'in_dev',
      });

      let failuresInARow = 0;
      for (let iteration = 1; iteration <= maxIterations; iteration++) {
        state.iteration = iteration;
        const failing =
          state.failedChecks.length > 0
            ? `\nFailing checks: ${state.failedChecks.join(', ')}.\nLast error: ${state.lastError}`
            : '';
        const change = await phase(`iteration ${iteration}`, async () => {
          const proposed = await agents.dev.run(`Iteration ${iteration}: ${taskText}${failing}`);
          await writeFiles(projectDir, proposed.files);
          return proposed;
        });

        const results: CheckResult[] = [];
        for (const check of checks) results.push(await task(check.name, () => runCheck(check, projectDir, signal)));
        state.passedChecks = results.filter((result) => result.passed).map((result) => result.name);
        state.failedChecks = results.filter((result) => !result.passed).map((result) => result.name);
        const failed = results.find((result) => !result.passed);
        state.lastError = failed ? firstError(failed) : undefined;
        await sessionManager.updateRalphLoop(sessionId, {
          currentIteration: iteration,
          passedChecks: state.passedChecks,
          failedChecks: state.failedChecks,
          lastError: state.lastError ?? null,
        });
        emit('checks', {
          iteration,
          passed: state.passedChecks,
          failed: state.failedChecks,
          ...(state.lastError ? { lastError: state.lastError } : {}),
        });

        if (!failed) {
          const source = sample ? await readFile(join(projectDir, 'src', 'sum.mjs'), 'utf8') : undefined;
          return {
            status: 'passed',
            iterations: iteration,
            summary: change.summary,
            ...(source !== undefined ? { source } : {}),
          };
        }
        failuresInARow += 1;
        if (failuresInARow >= askAfter && iteration < maxIterations) {
          // With no user (run()), failing this often ends the loop.
          if (!session) return { status: 'stopped', iterations: iteration, lastError: state.lastError! };
          const answer = await session.waitForUser(
            `The dev agent has failed ${failuresInARow} iterations in a row (last error: ${state.lastError}). Keep going?`,
            {
              choices: ['Continue', 'Stop'],
              ...(input.askTimeoutMs !== undefined ? { timeout: input.askTimeoutMs, defaultChoice: 'Stop' } : {}),
            },
          );
          if (answer.choice === 'Stop')
            return { status: 'stopped', iterations: iteration, lastError: state.lastError! };
          failuresInARow = 0;
        }
      }
      return { status: 'gave-up', iterations: maxIterations, lastError: state.lastError ?? 'unknown' };
    } finally {
      if (sample) await rm(projectDir, { recursive: true, force: true });
    }
  },
});

export default devLoop;

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { runWorkflow } = await import('../src/cli/commands/run.js');
  process.exitCode = await runWorkflow(devLoop, undefined, { stdin: process.stdin, stdout: process.stdout });
}
