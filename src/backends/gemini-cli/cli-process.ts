import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface CliProcessOptions {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdin, then closed; without it stdin is closed at once (the CLI reads a piped stdin to EOF). */
  stdin?: string;
  /** Milliseconds between SIGTERM and SIGKILL when stopping. */
  killGraceMs: number;
  /** Bytes of stderr kept (the tail). */
  stderrLimit?: number;
}

/**
 * A child process in its own process group, so stopping it also stops what it started (a shell
 * tool's commands). stdout is read line by line; the tail of stderr is kept for error messages.
 */
export class CliProcess {
  readonly exited: Promise<{ exitCode: number | null; signal: NodeJS.Signals | null; spawnError?: Error }>;
  private readonly child: ChildProcess;
  private stderrText = '';
  private killTimer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(private readonly options: CliProcessOptions) {
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    const limit = options.stderrLimit ?? 16_384;
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderrText = (this.stderrText + chunk).slice(-limit);
    });
    if (options.stdin !== undefined && this.child.stdin) {
      this.child.stdin.on('error', () => undefined);
      this.child.stdin.end(options.stdin);
    }
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => {
        this.done = true;
        resolve({ exitCode: null, signal: null, spawnError: error });
      });
      this.child.once('close', (exitCode, signal) => {
        this.done = true;
        clearTimeout(this.killTimer);
        resolve({ exitCode, signal });
      });
    });
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** stdout lines until the process closes it. */
  async *lines(): AsyncGenerator<string> {
    if (!this.child.stdout) return;
    const reader = createInterface({ input: this.child.stdout, crlfDelay: Infinity });
    try {
      for await (const line of reader) yield line;
    } finally {
      reader.close();
    }
  }

  /** SIGTERM to the whole group, SIGKILL after the grace period if it is still there. */
  stop(): void {
    if (this.done || this.child.pid === undefined) return;
    this.signal('SIGTERM');
    this.killTimer ??= setTimeout(() => this.signal('SIGKILL'), this.options.killGraceMs);
    this.killTimer.unref();
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.done || this.child.pid === undefined) return;
    try {
      if (process.platform === 'win32') this.child.kill(signal);
      else process.kill(-this.child.pid, signal);
    } catch {
      // Already gone.
    }
  }
}
