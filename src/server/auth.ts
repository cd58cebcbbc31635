import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';

/**
 * The server's secret: 32 random bytes, hex, in `<dataDir>/token` (mode 0600), made on the first
 * start and reused after, so a browser tab or a TUI keeps working across restarts.
 */
export async function loadOrCreateToken(dataDir: string): Promise<string> {
  const path = join(dataDir, 'token');
  try {
    const existing = (await readFile(path, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(existing)) {
      // A token other users could read is no secret: tighten it rather than trust it loosely.
      if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
      return existing;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const token = randomBytes(32).toString('hex');
  await writePrivateFile(path, `${token}\n`);
  return token;
}

/** Writes a file only its owner can read, atomically (temp file, then rename). */
export async function writePrivateFile(path: string, content: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, content, { mode: 0o600, flush: true });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** The token the upgrade presents: `Authorization: Bearer <token>` or the `token` query parameter. */
export function presentedToken(request: IncomingMessage, url: URL): string | undefined {
  const header = request.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match) return match[1];
  }
  return url.searchParams.get('token') ?? undefined;
}

/** Constant-time comparison, so the token cannot be guessed byte by byte from response times. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Browsers send `Origin`; other clients (the TUI, scripts) do not. A browser page may connect
 * only when it was served by this server, so another site open in the same browser cannot drive it.
 */
export function originAllowed(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined) return true;
  return allowed.has(origin.toLowerCase());
}

export function ownOrigins(host: string, port: number): Set<string> {
  const hosts = new Set([host]);
  if (isLoopback(host)) for (const alias of ['127.0.0.1', 'localhost', '[::1]']) hosts.add(alias);
  const origins = new Set<string>();
  for (const name of hosts) {
    const formatted = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
    origins.add(`http://${formatted}:${port}`.toLowerCase());
  }
  return origins;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
