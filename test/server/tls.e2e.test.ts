import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { commandRuns } from '../helpers/system-part.js';
import { describePairing } from '../../src/cli/commands/pair.js';
import { connectToProjectServer } from '../../src/cli/project-server.js';
import { selfSignedCertificate } from '../../src/server/index.js';
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

describe.skipIf(!hasOpenssl)('a command on this machine (parley pair) and a TLS server', () => {
  it('connects by the fingerprint server.json pins, and prints the link, its QR code and the fingerprint', async () => {
    const dataDir = running!.dataDir;
    const connection = await connectToProjectServer(dataDir);
    try {
      const pairing = await connection.client.request('create_pairing');
      expect(pairing.tlsFingerprint).toBe(running!.server.tlsFingerprint);
      expect(pairing.links[0]).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/#pair=[A-Za-z0-9_-]{22}$/);
      const printed = await describePairing(pairing, new Date());
      expect(printed).toContain(pairing.links[0]);
      expect(printed).toContain(pairing.tlsFingerprint);
      expect(printed).toMatch(/[▀▄█]/);
      expect(printed).toContain('cannot reach it');
    } finally {
      connection.close();
    }
  });

  it('refuses a server whose certificate is not the pinned one, before sending the token', async () => {
    const dataDir = running!.dataDir;
    const path = join(dataDir, 'server.json');
    const original = await readFile(path, 'utf8');
    const file = JSON.parse(original) as Record<string, unknown>;
    await writeFile(path, JSON.stringify({ ...file, tlsFingerprint: 'AA:'.repeat(31) + 'AA' }));
    try {
      await expect(connectToProjectServer(dataDir)).rejects.toMatchObject({ code: 'NO_SERVER' });
    } finally {
      await writeFile(path, original, { mode: 0o600 });
    }
  });
});
