import { spawn } from 'node:child_process';
import { MiddleCutBuffer } from './output-cap.js';
import { sandboxedSpawn, type SandboxPlan } from './sandbox.js';

/**
 * Runs one shell command as the leader of its own process group (spawned detached), so a timeout
 * or a cancel kills the whole tree: SIGTERM to the group, SIGKILL after a grace period. When the
 * shell exits, what it left running in its group is killed too: a command's background jobs do not
 * outlive it. (A process that makes its own session escapes the group; in the bwrap sandbox the
 * private PID namespace catches it.)
 */
export interface RunProcessOptions {
  command: string;
  /** Absolute working folder. */
  cwd: string;
  timeoutMs: number;
  /** Cap on the captured output (stdout and stderr interleaved); the middle is cut and marked. */
  maxOutputChars: number;
  signal?: AbortSignal;
  sandbox?: SandboxPlan;
  /** Grace between SIGTERM and SIGKILL (default 2 s). */
  killGraceMs?: number;
  /** Called with the group leader's pid once it started (tests, diagnostics). */
  onSpawn?: (pid: number) => void;
}

export interface RunProcessResult {
  /** Null when the process was ended by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  /** Characters cut from the middle of `output`. */
  cutChars: number;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
}

export function runProcess(options: RunProcessOptions): Promise<RunProcessResult> {
  const started = Date.now();
  const { file, args } = sandboxedSpawn(options.command, options.cwd, options.sandbox);
  const buffer = new MiddleCutBuffer(options.maxOutputChars);
  return new Promise((resolve) => {
    let timedOut = false;
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const child = spawn(file, args, {
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PARLEY_TOOL: 'run_command' },
    });
    const pid = child.pid;
    const killGroup = (signal: NodeJS.Signals): void => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, signal);
      } catch {
        // The group is gone already.
      }
    };
    const stop = (): void => {
      killGroup('SIGTERM');
      killTimer ??= setTimeout(() => killGroup('SIGKILL'), options.killGraceMs ?? 2_000);
      killTimer.unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = (): void => {
      cancelled = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    if (pid !== undefined) options.onSpawn?.(pid);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => buffer.push(chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => buffer.push(chunk));
    // Background jobs of a finished command would hold its pipes open (and `close` back) forever.
    child.on('exit', () => killGroup('SIGKILL'));
    child.on('error', (error) => buffer.push(`${error.message}\n`));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      options.signal?.removeEventListener('abort', onAbort);
      const { text, cut } = buffer.text();
      resolve({
        exitCode: code,
        signal,
        output: text,
        cutChars: cut,
        timedOut,
        cancelled,
        durationMs: Date.now() - started,
      });
    });
  });
}
