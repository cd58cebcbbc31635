import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  createMessageConnection,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

/**
 * One `codex app-server` process and the JSON-RPC connection to it. The app server speaks
 * JSON-RPC 2.0 over stdio as one JSON object per line (it omits the `"jsonrpc"` member, which
 * vscode-jsonrpc does not require), where vscode-jsonrpc's own stream reader expects LSP's
 * `Content-Length` headers: the reader and writer below only split and join lines, and
 * vscode-jsonrpc does the rest (ids, responses, errors, requests in both directions).
 */

/** Reads one JSON-RPC message per line; a line that is not JSON is reported as an error and skipped. */
class LineMessageReader extends AbstractMessageReader {
  constructor(private readonly input: Readable) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    const lines = createInterface({ input: this.input, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (line.trim() === '') return;
      let message: Message;
      try {
        message = JSON.parse(line) as Message;
      } catch (error) {
        this.fireError(
          new Error(`codex app-server wrote a line that is not JSON: ${line.slice(0, 200)}`, { cause: error }),
        );
        return;
      }
      callback(message);
    });
    lines.on('close', () => this.fireClose());
    return { dispose: () => lines.close() };
  }
}

/** Writes one JSON-RPC message per line. */
class LineMessageWriter extends AbstractMessageWriter {
  constructor(private readonly output: Writable) {
    super();
  }

  write(message: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.output.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  end(): void {
    this.output.end();
  }
}

export interface AppServerProcess {
  connection: MessageConnection;
  /** The last part of what the process wrote to stderr (for a failure's detail). */
  stderrTail(): string;
  /** Resolves when the process has exited (with its code, or the signal that ended it). */
  exited: Promise<string>;
  /** Ends the connection and the process (SIGTERM, then SIGKILL after a grace period). */
  close(): Promise<void>;
}

const STDERR_TAIL_CHARS = 4000;
const KILL_GRACE_MS = 2000;

/** Starts `<binary> app-server <args>` with `env`, and the connection to it (listening already). */
export function startAppServer(options: {
  executablePath: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd?: string;
}): AppServerProcess {
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn(
    options.executablePath,
    ['app-server', ...options.args],
    { env: options.env, stdio: ['pipe', 'pipe', 'pipe'], ...(options.cwd ? { cwd: options.cwd } : {}) },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
  });
  // A write after the process died must fail the request, not the Node process.
  child.stdin.on('error', () => undefined);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${String(code)}`));
    child.once('error', (error) => resolve(`error ${error.message}`));
  });
  const connection = createMessageConnection(new LineMessageReader(child.stdout), new LineMessageWriter(child.stdin));
  connection.listen();
  let closing: Promise<void> | undefined;
  return {
    connection,
    stderrTail: () => stderr,
    exited,
    close: () =>
      (closing ??= (async () => {
        connection.dispose();
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
      })()),
  };
}
