import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');

const started: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  // A test that failed midway must not leave its parley process behind.
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** `parley …` as a process (through tsx, as in development), stdin piped, output collected. */
class Parley {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = '';
  stderr = '';
  private readonly waiters: Array<{ pattern: RegExp; from: number; resolve: () => void }> = [];
  readonly exited: Promise<number>;

  constructor(args: string[], dataDir: string, script = MAIN) {
    this.child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: ROOT,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, NO_COLOR: '1' },
    });
    started.push(this.child);
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      this.check();
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code ?? -1)));
  }

  /** Resolves when stdout (after `from`) matches; the process output is in the failure otherwise. */
  waitFor(pattern: RegExp, from = 0): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ pattern, from, resolve });
      void this.exited.then((code) =>
        reject(new Error(`parley exited (${code}) before ${pattern}:\n${this.stdout}\n${this.stderr}`)),
      );
      this.check();
    });
  }

  type(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  private check(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.pattern.test(this.stdout.slice(waiter.from))) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }
}

// Each test starts `parley` through tsx (a few seconds per process on a loaded machine).
describe('parley run', { timeout: 120_000 }, () => {
  it('runs the code-review workflow: streams it, asks the prompt with its choices, records it; the recording replays', async () => {
    const dir = await tempDir();
    const recording = join(dir, 'review.jsonl');
    const run = new Parley(['run', 'examples/code-review.ts', '--record', recording], join(dir, 'data'));
    await run.waitFor(/Fix automatically\?\n {2}1\) Yes\n {2}2\) No\n {2}3\) Review each/);
    expect(run.stdout).toContain('▶ review');
    expect(run.stdout).toContain('reviewer: I found 2 issue(s).');
    run.type('1');
    expect(await run.exited).toBe(0);
    expect(run.stdout).toContain('▶ fix');
    expect(run.stdout).toContain('Result:');
    expect(run.stdout).toContain('"fixed": [');

    // The agents' sessions are ordinary Parley sessions in the data folder.
    const sessions = new Parley(['sessions', '--json'], join(dir, 'data'));
    expect(await sessions.exited).toBe(0);
    const listed = JSON.parse(sessions.stdout) as Array<{ scope: { kind: string; harness?: string; agent?: string } }>;
    expect(
      listed.map((session) => session.scope).sort((a, b) => String(a.agent).localeCompare(String(b.agent))),
    ).toEqual([
      { kind: 'workflow', harness: 'code-review', agent: 'fixer' },
      { kind: 'workflow', harness: 'code-review', agent: 'reviewer' },
    ]);

    const replayed = new Parley(['run', 'examples/code-review.ts', '--replay', recording], join(dir, 'replay-data'));
    expect(await replayed.exited).toBe(0);
    expect(replayed.stdout).toContain('Replay matched the recording.');
  });

  it('sends other lines to the running agent, and /stop aborts', async () => {
    const dir = await tempDir();
    const workflow = join(dir, 'chatty.ts');
    const source = (name: string) => `
      import { defineAgent, defineHarness } from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};
      import { createScriptedBackend, step } from ${JSON.stringify(join(ROOT, 'src', 'entry', 'testing.ts'))};
      const helper = defineAgent({
        name: 'Helper',
        role: 'You help.',
        backend: createScriptedBackend({ turns: [[step.text('Ready for instructions.'), step.awaitInjection((message) => 'Will do: ' + message)]] }),
      });
      export default defineHarness({
        name: ${JSON.stringify(name)},
        agents: { helper },
        run: async ({ agents, session }) => {
          const answer = await agents.helper.run('Wait for the user.');
          await session!.waitForUser('Anything else?');
          return answer;
        },
      });`;
    await writeFile(workflow, source('chatty'));
    const run = new Parley(['run', workflow], join(dir, 'data'));
    await run.waitFor(/helper: Ready for instructions\./);
    run.type('please add tests');
    await run.waitFor(/Anything else\?/);
    expect(run.stdout).toContain('→ helper (delivered to the running turn)');
    expect(run.stdout).toContain('Will do: please add tests');
    run.type('/stop');
    expect(await run.exited).toBe(130);
    expect(run.stdout).toContain('Aborted: stopped by the user (/stop).');
  });

  it('an example runs on its own too (npx tsx examples/dev-loop.ts), asking after two failed iterations', async () => {
    const dir = await tempDir();
    const direct = new Parley([], join(dir, 'data'), join(ROOT, 'examples', 'dev-loop.ts'));
    await direct.waitFor(/Keep going\?\n {2}1\) Continue\n {2}2\) Stop/);
    expect(direct.stdout).toContain('[checks] {"iteration":2,"passed":["build","test"],"failed":["lint"]');
    direct.type('Continue');
    expect(await direct.exited).toBe(0);
    expect(direct.stdout).toContain('"status": "passed"');
    expect(direct.stdout).toContain('"iterations": 4');
  });

  it('refuses a module that does not export a harness, and a missing file, as user errors', async () => {
    const dir = await tempDir();
    const plain = join(dir, 'not-a-harness.js');
    await writeFile(plain, 'export default { hello: "world" };\n');
    const wrong = new Parley(['run', plain], join(dir, 'data'));
    expect(await wrong.exited).toBe(2);
    expect(wrong.stderr).toContain('must `export default` a harness made by defineHarness()');
    const missing = new Parley(['run', join(dir, 'nope.ts')], join(dir, 'data'));
    expect(await missing.exited).toBe(2);
    expect(missing.stderr).toContain('No workflow file');
    const badInput = new Parley(['run', 'examples/code-review.ts', '--input', '{oops'], join(dir, 'data'));
    expect(await badInput.exited).toBe(2);
    expect(badInput.stderr).toContain('--input must be JSON');
  });
});
