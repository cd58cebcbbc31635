import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { commandRuns } from '../helpers/system-part.js';
import { selfSignedCertificate } from '../../src/server/tls.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * A server over TLS with the self-signed certificate Parley makes (with openssl): the web UI over
 * https, JSON-RPC over wss, the fingerprint it reports is the certificate's, and plain HTTP to its
 * port gets no page.
 */

const hasOpenssl = commandRuns('openssl', ['version']);
let running: TestServer | undefined;
let cert = '';

beforeAll(async () => {
  if (!hasOpenssl) return;
  // The data folder does not exist before the server makes it; the certificate goes in a folder of its own.
  running = await startTestServer();
  const dataDir = running.dataDir;
  const credentials = await selfSignedCertificate(dataDir, ['127.0.0.1', 'localhost']);
  cert = credentials.cert;
  await running.restart({ port: 0, tls: credentials });
}, 60_000);
afterAll(async () => {
  await running?.stop();
});

describe.skipIf(!hasOpenssl)('TLS with a self-signed certificate', () => {
  it('keeps the key private and reuses the certificate while its names are covered', async () => {
    const dataDir = running!.dataDir;
    expect((await stat(join(dataDir, 'tls', 'self-signed.key'))).mode & 0o777).toBe(0o600);
    expect((await selfSignedCertificate(dataDir, ['localhost'])).cert).toBe(cert);
    expect(new X509Certificate(cert).subjectAltName).toContain('IP Address:127.0.0.1');
  });

  it('serves the page over https and JSON-RPC over wss; the fingerprint is the one the socket presents', async () => {
    const server = running!.server;
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
    expect(server.wsUrl).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/rpc$/);
    const presented = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: server.port, ca: cert, servername: 'localhost' }, () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.end();
      });
      socket.once('error', reject);
    });
    expect(server.tlsFingerprint).toBe(presented);
    expect(server.tlsFingerprint).toBe(new X509Certificate(cert).fingerprint256);

    const status = await new Promise<number>((resolve, reject) => {
      request(`https://127.0.0.1:${server.port}/rpc`, { ca: cert }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      })
        .once('error', reject)
        .end();
    });
    expect(status).toBe(426);

    const url = new URL(server.wsUrl);
    url.searchParams.set('token', server.token);
    const socket = new WebSocket(url, { ca: cert });
    const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
      socket.once('open', () => socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server_info' })));
      socket.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>));
      socket.once('error', reject);
    });
    socket.close();
    expect(answer['result']).toMatchObject({ name: 'parley' });
  });

  it('gives no page to plain HTTP on its port', async () => {
    const server = running!.server;
    const failed = await fetch(`http://127.0.0.1:${server.port}/`).then(
      (response) => response.status,
      () => 'refused',
    );
    expect(failed).not.toBe(200);
  });
});
