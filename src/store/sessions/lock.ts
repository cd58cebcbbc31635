import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import * as z from 'zod';
import { StoreError, type StoreWarning } from '../errors.js';
import { FORMAT_VERSION } from '../record-format.js';
import { ioError, isErrno, syncDirectory, writeDurably } from '../atomic-file.js';

/** `store.lock`: who holds the data folder for writing. */
const LockOwnerSchema = z.object({
  formatVersion: z.number().int(),
  pid: z.number().int().positive(),
  hostname: z.string(),
  startedAt: z.string(),
});
type LockOwner = z.infer<typeof LockOwnerSchema>;

/** A lock file with no readable owner (damaged by hand) counts as stale once it is this old. */
const UNREADABLE_LOCK_GRACE_MS = 10_000;

export interface StoreLock {
  readonly path: string;
  /** Removes the lock file if it is still ours. */
  release(): Promise<void>;
}

/**
 * Takes `store.lock` for this process (an exclusive create). A lock whose process is gone from this
 * host is stale and taken over with a warning; a live one is STORE_LOCKED, naming its holder.
 */
export async function acquireLock(path: string, warn: (warning: StoreWarning) => void): Promise<StoreLock> {
  const owner: LockOwner = {
    formatVersion: FORMAT_VERSION,
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (await tryCreate(path, owner)) {
      await removeLeftovers(path);
      return { path, release: () => release(path, owner) };
    }
    const seen = await readHolder(path);
    if (seen === 'gone') continue;
    if (!isStale(seen)) throw locked(path, seen.owner);
    if (await setAsideStale(path, seen.text)) {
      warn({
        code: 'STALE_LOCK',
        file: path,
        message: seen.owner
          ? `Took over ${path}: it was held by pid ${seen.owner.pid} on ${seen.owner.hostname} since ${seen.owner.startedAt}, which is no longer running (it probably crashed).`
          : `Took over ${path}: it had no readable owner and had not changed for ${UNREADABLE_LOCK_GRACE_MS / 1000} s.`,
      });
    }
  }
  throw locked(path, undefined);
}

/**
 * Exclusive create with the content already in place: the owner is written to a temp file which is
 * then hard-linked to `store.lock` (link fails with EEXIST like O_EXCL), so a crash can never leave
 * an empty lock behind.
 */
async function tryCreate(path: string, owner: LockOwner): Promise<boolean> {
  const temp = `${path}.${process.pid}-${Math.random().toString(36).slice(2, 8)}.tmp`;
  try {
    await writeDurably(temp, `${JSON.stringify(owner)}\n`);
    await fs.link(temp, path);
  } catch (error) {
    // ENOENT: the holder removed our temp file as a leftover between our write and our link.
    if (isErrno(error, 'EEXIST') || isErrno(error, 'ENOENT')) return false;
    // DISK_FULL on a full disk (a new file needs space even to open the data folder), STORE_IO otherwise.
    throw ioError('create the lock file', path, error);
  } finally {
    await fs.rm(temp, { force: true });
  }
  await syncDirectory(dirname(path));
  return true;
}

/** Once we hold the lock, any `store.lock.*` beside it is a leftover of a crashed open. */
async function removeLeftovers(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  for (const name of await fs.readdir(dirname(path))) {
    if (name.startsWith(prefix)) await fs.rm(join(dirname(path), name), { force: true });
  }
}

type Holder = { text: string; owner: LockOwner | undefined; ageMs: number };

async function readHolder(path: string): Promise<Holder | 'gone'> {
  try {
    const [text, stat] = await Promise.all([fs.readFile(path, 'utf8'), fs.stat(path)]);
    let owner: LockOwner | undefined;
    try {
      const parsed = LockOwnerSchema.safeParse(JSON.parse(text));
      owner = parsed.success ? parsed.data : undefined;
    } catch {
      owner = undefined;
    }
    return { text, owner, ageMs: Date.now() - stat.mtimeMs };
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return 'gone';
    throw error;
  }
}

function isStale(holder: Holder): boolean {
  if (holder.owner === undefined) return holder.ageMs > UNREADABLE_LOCK_GRACE_MS;
  return holder.owner.hostname === hostname() && !isAlive(holder.owner.pid);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return isErrno(error, 'EPERM');
  }
}

/**
 * Moves the stale lock aside and checks that what moved is the stale lock we judged: if another
 * process took it over first, its fresh lock is put back and we lose the race.
 */
async function setAsideStale(path: string, staleText: string): Promise<boolean> {
  const aside = `${path}.stale-${process.pid}`;
  try {
    await fs.rename(path, aside);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return false;
    throw error;
  }
  let moved: string;
  try {
    moved = await fs.readFile(aside, 'utf8');
  } catch (error) {
    // The winner of the race removed it as a leftover: it holds the lock now.
    if (isErrno(error, 'ENOENT')) return false;
    throw error;
  }
  if (moved !== staleText) {
    await fs.link(aside, path).catch(() => undefined);
    await fs.rm(aside, { force: true });
    return false;
  }
  await fs.rm(aside, { force: true });
  return true;
}

function locked(path: string, owner: LockOwner | undefined): StoreError {
  const holder = owner ? `process ${owner.pid} on ${owner.hostname} (since ${owner.startedAt})` : 'another process';
  return new StoreError(
    'STORE_LOCKED',
    `The data folder ${dirname(path)} is in use by ${holder}. Stop that Parley process, or point this one at another data folder. ` +
      `If no Parley process is using it, delete ${path} and try again.`,
    { fault: 'user', data: { file: path, pid: owner?.pid, hostname: owner?.hostname } },
  );
}

async function release(path: string, owner: LockOwner): Promise<void> {
  try {
    const text = await fs.readFile(path, 'utf8');
    if (text.trim() !== JSON.stringify(owner)) return;
    await fs.rm(path, { force: true });
    await syncDirectory(dirname(path));
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw error;
  }
}
