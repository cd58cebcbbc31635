import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join, relative } from 'node:path';
import { ParleyError } from '../conversation/index.js';
import type { ProtocolClient, ServerFile, WebSocketLike } from '../protocol/index.js';

/**
 * Finding the project's running server, as the TUI does: `server.json` in the data folder names it,
 * its process must be alive, and its JSON-RPC path must answer. Shared by the TUI and the commands
 * that talk to a server (`parley run --detach`, `runs`, `answer`).
 */

export async function readServerFile(dataDir: string): Promise<ServerFile | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, 'server.json'), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const { ServerFileSchema } = await import('../protocol/index.js');
    const parsed = ServerFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The server's JSON-RPC path answers plain HTTP with 426 (Upgrade Required): it is a Parley server, and up. */
export async function answers(file: ServerFile): Promise<boolean> {
  if (file.tlsFingerprint !== undefined) {
    try {
      const socket = await pinnedTlsSocket(file);
      const status = await new Promise<string>((resolve) => {
        let head = '';
        socket.on('data', (chunk: Buffer) => {
          head += chunk.toString('latin1');
          if (head.includes('\r\n')) resolve(head.slice(0, head.indexOf('\r\n')));
        });
        socket.once('close', () => resolve(head));
        socket.write(`GET /rpc HTTP/1.1\r\nHost: ${file.host}\r\nConnection: close\r\n\r\n`);
      });
      socket.destroy();
      return / 426 /.test(status);
    } catch {
      return false;
    }
  }
  try {
    const host = file.host.includes(':') ? `[${file.host}]` : file.host;
    const response = await fetch(`http://${host}:${file.port}/rpc`, { signal: AbortSignal.timeout(1_500) });
    await response.body?.cancel();
    return response.status === 426;
  } catch {
    return false;
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ProjectServerConnection {
  client: ProtocolClient;
  server: ServerFile;
  close(): void;
}

/**
 * Connects to the project's running server (no reconnecting: a command makes its few calls and
 * exits). Fails with NO_SERVER, saying how to start one, when none runs for this data folder.
 */
export async function connectToProjectServer(
  dataDir: string,
  options: { channel?: string } = {},
): Promise<ProjectServerConnection> {
  const file = await readServerFile(dataDir);
  if (!file || !processAlive(file.pid) || !(await answers(file))) {
    throw new ParleyError(
      'NO_SERVER',
      `No Parley server is running for this project (${file ? 'the one' : 'nothing'} ${join(dataDir, 'server.json')} names ${file ? 'does not answer' : 'is there'}). Start one with \`parley serve\` (or \`parley\`) in the project folder, then try again.`,
      { fault: 'user' },
    );
  }
  const [protocol, { WebSocket }] = await Promise.all([import('../protocol/index.js'), import('ws')]);
  // Over TLS the certificate is the one server.json names (self-signed or not): checked before the token is sent.
  const secure = file.tlsFingerprint !== undefined ? await pinnedTlsSocket(file) : undefined;
  const client = new protocol.ProtocolClient({
    transport: protocol.webSocketTransport({
      url: file.wsUrl,
      token: file.token,
      ...(options.channel !== undefined ? { channel: options.channel } : {}),
      openTimeoutMs: 5_000,
      createSocket: (url) =>
        new WebSocket(url, {
          maxPayload: 64 * 1024 * 1024,
          ...(secure ? { createConnection: () => secure } : {}),
        }) as unknown as WebSocketLike,
    }),
    reconnect: false,
    onError: () => undefined,
  });
  await client.connect();
  return { client, server: file, close: () => client.close() };
}

/**
 * Runs `work` on a connection to the project's server and closes it after. A refusal the server
 * sends (an RpcError) becomes a ParleyError with the server's code and message, so the CLI prints
 * it as its own and exits with the code for its fault.
 */
export async function withProjectServer<T>(
  dataDir: string,
  options: { channel?: string },
  work: (connection: ProjectServerConnection) => Promise<T>,
): Promise<T> {
  const connection = await connectToProjectServer(dataDir, options);
  try {
    return await work(connection);
  } catch (error) {
    const { RpcError } = await import('../protocol/index.js');
    if (error instanceof RpcError)
      throw new ParleyError(error.reason ?? 'SERVER_ERROR', error.message, { fault: error.fault, cause: error });
    throw error;
  } finally {
    connection.close();
  }
}

/** A workflow as the server's `start_run` takes it: a file under the project relative to its root, else the name as given. */
export function workflowReference(workflow: string, absolutePath: string | undefined, projectRoot: string): string {
  if (absolutePath === undefined) return workflow;
  const inside = relative(projectRoot, absolutePath);
  return inside.startsWith('..') ? absolutePath : inside;
}

/**
 * A TLS connection to the server of `file` whose certificate has the fingerprint server.json
 * gives, or a NO_SERVER error: a server of this machine pinned by its own file, so a self-signed
 * certificate is trusted exactly, and nothing else is.
 */
export async function pinnedTlsSocket(file: ServerFile): Promise<Socket> {
  const { connect } = await import('node:tls');
  const url = new URL(file.wsUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port),
      // Verified by the pin below instead of a chain: the certificate may be self-signed.
      rejectUnauthorized: false,
      timeout: 5_000,
    });
    socket.once('secureConnect', () => {
      const presented = socket.getPeerCertificate().fingerprint256;
      if (presented === file.tlsFingerprint) {
        socket.setTimeout(0);
        resolve(socket);
        return;
      }
      socket.destroy();
      reject(
        new ParleyError(
          'NO_SERVER',
          `The server at ${file.wsUrl} presents a certificate (${presented}) other than the one ${'server.json'} names (${file.tlsFingerprint}); not connecting.`,
          { fault: 'system' },
        ),
      );
    });
    socket.once('timeout', () => socket.destroy(new Error('timed out')));
    socket.once('error', reject);
  });
}
