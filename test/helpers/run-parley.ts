import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const main = resolve('src/cli/main.ts');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

export interface ParleyRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `parley` CLI from source as a process (Node + tsx), in `cwd`, with only the given
 * environment beside PATH and HOME: no key of the developer's machine leaks into a test.
 */
export function runParley(
  args: string[],
  options: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<ParleyRun> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      ['--import', tsx, main, ...args],
      {
        cwd: options.cwd,
        env: { PATH: process.env['PATH'] ?? '', HOME: options.cwd, ...options.env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
