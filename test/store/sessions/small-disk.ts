import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskFaults } from './disk-faults.js';

/**
 * A disk a test can fill up and free again. Two variants run the same behaviours:
 * - `tmpfs`: a real, size-limited tmpfs mounted in a temp folder (Linux, as root, when `mount`
 *   succeeds): the kernel's own ENOSPC, short writes and page accounting;
 * - `fault-injection`: the `node:fs` wrapper of `disk-faults.ts`, deterministic, runs everywhere.
 */
export interface SmallDisk {
  readonly variant: 'tmpfs' | 'fault-injection';
  /** A folder on the disk, for the test's data folder. */
  readonly dir: string;
  /** Uses up the free space (a filler file on tmpfs). */
  fill(): Promise<void>;
  /** Gives the space back (deletes the filler file). */
  free(): Promise<void>;
  /** Unmounts (tmpfs) or disarms (fault injection), and removes the folder. */
  dispose(): Promise<void>;
}

const FILLER = 'filler.bin';

/** Mounts a tmpfs of `sizeKiB`, or says why it cannot. */
export async function mountSmallTmpfs(sizeKiB: number): Promise<SmallDisk | { unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: `tmpfs needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { unavailable: 'mounting a tmpfs needs root' };
  const dir = await mkdtemp(join(tmpdir(), 'parley-full-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { unavailable: `mount -t tmpfs refused: ${stderr || String(error)}` };
  }
  const filler = join(dir, FILLER);
  return {
    variant: 'tmpfs',
    dir,
    fill: () => fillUp(filler),
    free: () => rm(filler, { force: true }),
    dispose: async () => {
      // Lazy: a failed test may leave a store open on the disk, and a plain umount would then fail
      // with EBUSY and leak the mount; -l detaches it now and frees it when the last file closes.
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Writes zeros to `path` until the file system refuses with ENOSPC: big chunks, then a page at a time. */
async function fillUp(path: string): Promise<void> {
  const handle = await open(path, 'a');
  try {
    for (const chunkSize of [64 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(chunkSize);
      for (;;) {
        try {
          const { bytesWritten } = await handle.write(chunk);
          if (bytesWritten < chunk.length) break;
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'ENOSPC') throw error;
          break;
        }
      }
    }
  } finally {
    await handle.close();
  }
}

/** The fault-injection disk: a temp folder whose files go through `diskFaults` (the test file must install the mock). */
export async function faultInjectedDisk(): Promise<SmallDisk> {
  const dir = await mkdtemp(join(tmpdir(), 'parley-faulty-disk-'));
  diskFaults.reset();
  diskFaults.root = dir;
  return {
    variant: 'fault-injection',
    dir,
    fill: async () => {
      diskFaults.freeBytes = 0;
    },
    free: async () => {
      diskFaults.freeBytes = Number.POSITIVE_INFINITY;
    },
    dispose: async () => {
      diskFaults.reset();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
