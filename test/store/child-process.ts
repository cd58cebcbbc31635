import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/** Starts a fixture script under tsx in a child process. */
export function startFixture(script: string, args: readonly string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', join(fixtures, script), ...args], { stdio: 'pipe' });
}

/** Resolves with everything the child printed once `predicate` holds for it; rejects if it exits first. */
export function waitForOutput(
  child: ChildProcessWithoutNullStreams,
  predicate: (stdout: string) => boolean,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      if (predicate(stdout)) {
        child.stdout.off('data', onData);
        child.off('exit', onExit);
        resolve(stdout);
      }
    };
    const onExit = (code: number | null) =>
      reject(new Error(`fixture exited (${code}) before it was ready: ${stderr}`));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', onData);
    child.once('exit', onExit);
  });
}

export async function killAndWait(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
