#!/usr/bin/env node
// `npm test`'s first step: the type check and the lint (`npm run typecheck`, `npm run lint`) at the
// same time. Each is one Node thread (tsc, then ESLint's own TypeScript program), so on two cores
// they take as long as the longer of the two, not their sum. Each one's output is printed whole
// when it ends, so the two do not interleave; the exit code is non-zero when either failed.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs `npm run <script>`, its output collected; resolves with its exit code once printed. */
function run(script) {
  return new Promise((done) => {
    const started = Date.now();
    const child = spawn(npm, ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    let ended = false;
    const end = (code, status) => {
      if (ended) return;
      ended = true;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(Buffer.concat(output));
      process.stdout.write(`npm run ${script}: ${status} in ${seconds} s\n`);
      done(code);
    };
    child.on('error', (error) => end(1, `could not start: ${error.message}`));
    child.on('close', (code, signal) =>
      end(code ?? 1, code === 0 ? 'passed' : `failed (${signal ?? `exit code ${code}`})`),
    );
  });
}

const codes = await Promise.all([run('typecheck'), run('lint')]);
process.exitCode = codes.every((code) => code === 0) ? 0 : 1;
