import { spawn } from 'node:child_process';
import { build } from 'esbuild';

/**
 * A crash-test victim: a fixture bundled by esbuild into one ES module started with plain node (no
 * tsx start-up per victim), which prints `stopped` where it wants to be killed.
 */
export async function bundleVictim(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    // Bundled packages that require Node's own modules get a require of their own.
    banner: {
      js: "import { createRequire as parleyRequire } from 'node:module'; const require = parleyRequire(import.meta.url);",
    },
  });
}

/** Runs the victim until it prints `stopped` (then SIGKILLs it) or ends; resolves with what it printed and its signal. */
export function runVictim(script: string, args: readonly string[]): Promise<{ stdout: string; signal: string | null }> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('stopped')) child.kill('SIGKILL');
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code, signal) =>
      code !== 0 && signal === null ? reject(new Error(`the victim failed: ${stderr}`)) : resolve({ stdout, signal }),
    ),
  );
}
