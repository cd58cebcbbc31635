import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
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

/** The origins of this server's own pages: every name it is reached by (`reachableNames`), with its scheme and port. */
export function ownOrigins(host: string, port: number, scheme: 'http' | 'https' = 'http'): Set<string> {
  const origins = new Set<string>();
  for (const name of reachableNames(host)) {
    const formatted = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
    origins.add(`${scheme}://${formatted}:${port}`.toLowerCase());
  }
  return origins;
}

/** A wildcard address: the server listens on every interface. */
export function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/**
 * The names a server listening on `host` is reached by: the host itself (for a wildcard address,
 * every address of this machine's interfaces and its host name), and the loopback names when it
 * listens on loopback or everywhere.
 */
export function reachableNames(host: string): string[] {
  const names = new Set<string>([host.replace(/^\[|\]$/g, '')]);
  if (isLoopback(host) || isWildcard(host)) for (const alias of ['127.0.0.1', 'localhost', '::1']) names.add(alias);
  if (isWildcard(host)) {
    for (const addresses of Object.values(networkInterfaces()))
      for (const address of addresses ?? []) if (!address.address.startsWith('fe80:')) names.add(address.address);
    const name = hostname();
    names.add(name);
    if (!name.includes('.')) names.add(`${name}.local`);
  }
  names.delete('0.0.0.0');
  names.delete('::');
  return [...names];
}

/** Where a phone on the network reaches a server listening on `host`: its non-loopback addresses, IPv4 first. */
export function networkNames(host: string): string[] {
  if (!isWildcard(host)) return isLoopback(host) ? [] : [host.replace(/^\[|\]$/g, '')];
  const found: Array<{ address: string; family: string }> = [];
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? [])
      if (!address.internal && !address.address.startsWith('fe80:')) found.push(address);
  return found.sort((a, b) => (a.family === b.family ? 0 : a.family === 'IPv4' ? -1 : 1)).map((entry) => entry.address);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
