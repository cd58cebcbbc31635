import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ParleyError } from '../conversation/index.js';
import { writePrivateFile } from './auth.js';

const run = promisify(execFile);

/** A certificate and its key, PEM, as `startServer({ tls })` takes them. */
export interface TlsCredentials {
  cert: string;
  key: string;
}

/** The SHA-256 fingerprint of a PEM certificate, as browsers show it (`AB:CD:…`). */
export function certificateFingerprint(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256;
}

/**
 * A self-signed certificate for `names`, made once with `openssl` (Node's crypto signs no
 * certificates) and kept in `<dataDir>/tls/` (the key mode 0600), so a phone that trusted it keeps
 * trusting it across restarts; made again when the names it must cover change.
 */
export async function selfSignedCertificate(dataDir: string, names: readonly string[]): Promise<TlsCredentials> {
  const folder = join(dataDir, 'tls');
  const certPath = join(folder, 'self-signed.crt');
  const keyPath = join(folder, 'self-signed.key');
  const wanted = [...new Set(names)].sort();
  try {
    const [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    const existing = new X509Certificate(cert);
    const covered = (existing.subjectAltName ?? '').split(', ').map((entry) => entry.replace(/^(DNS|IP Address):/, ''));
    if (wanted.every((name) => covered.includes(name)) && new Date(existing.validTo).getTime() > Date.now())
      return { cert, key };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const subjectAltName = wanted.map((name) => (isIP(name) ? `IP:${name}` : `DNS:${name}`)).join(',');
  const temporaryKey = `${keyPath}.${process.pid}.tmp`;
  const temporaryCert = `${certPath}.${process.pid}.tmp`;
  try {
    await run(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        temporaryKey,
        '-out',
        temporaryCert,
        '-days',
        '825',
        '-subj',
        '/CN=Parley (self-signed)',
        '-addext',
        `subjectAltName=${subjectAltName}`,
      ],
      { timeout: 30_000 },
    );
    const [cert, key] = await Promise.all([readFile(temporaryCert, 'utf8'), readFile(temporaryKey, 'utf8')]);
    await writePrivateFile(keyPath, key);
    await writePrivateFile(certPath, cert);
    return { cert, key };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ParleyError(
        'OPENSSL_MISSING',
        'Making a self-signed certificate needs `openssl`, which is not installed here. Install it, or give a certificate with --tls-cert <file> --tls-key <file>.',
        { fault: 'user' },
      );
    }
    throw error;
  } finally {
    await Promise.all([rm(temporaryKey, { force: true }), rm(temporaryCert, { force: true })]);
  }
}
