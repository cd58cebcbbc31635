import { execFile } from 'node:child_process';
import { parleyNodeArguments } from './parley-cli.js';

export interface ParleyRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `parley` CLI as a process (compiled for this run, see ./parley-cli.ts), in `cwd`, with only the given
 * environment beside PATH and HOME: no key of the developer's machine leaks into a test.
 */
export function runParley(
  args: string[],
  options: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<ParleyRun> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      [...parleyNodeArguments(), ...args],
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
