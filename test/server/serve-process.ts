import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import WebSocket from 'ws';
import {
  ProtocolClient,
  ServerFileSchema,
  webSocketTransport,
  type ServerFile,
  type WebSocketLike,
} from '../../src/protocol/index.js';
import { parleyNodeArguments } from '../helpers/parley-cli.js';

export interface ServeProcess {
  child: ChildProcess;
  info: ServerFile;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `parley serve --port 0` (plus `args`) in `cwd` as its own process; resolves at the ready line with server.json. */
export async function startServeProcess(
  cwd: string,
  env: Record<string, string> = {},
  args: string[] = [],
): Promise<ServeProcess> {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  delete childEnv['PARLEY_DATA_DIR'];
  // One process (no wrapper), so SIGKILL hits the server itself.
  const child = spawn(process.execPath, [...parleyNodeArguments(), 'serve', '--port', '0', ...args], {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  await new Promise<void>((ready, fail) => {
    const check = () => {
      if (output.includes('Parley server ready:')) {
        child.stdout!.off('data', check);
        ready();
      }
    };
    child.stdout!.on('data', check);
    void exited.then(({ code, signal }) =>
      fail(new Error(`parley serve exited (${code ?? signal}) before it was ready:\n${output}`)),
    );
  });
  const info = ServerFileSchema.parse(JSON.parse(await readFile(join(cwd, '.parley', 'server.json'), 'utf8')));
  return { child, info, output: () => output, exited };
}

/** A client of a `parley serve` process on `channel`, connected, that does not reconnect (the tests kill servers on purpose). The caller closes it. */
export async function connectToServer(info: ServerFile, channel: string): Promise<ProtocolClient> {
  const client = new ProtocolClient({
    transport: webSocketTransport({
      url: info.wsUrl,
      token: info.token,
      channel,
      createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
    }),
    reconnect: false,
    onError: () => {},
  });
  await client.connect();
  return client;
}
