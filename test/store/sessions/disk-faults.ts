import type * as NodeFs from 'node:fs';

/**
 * A fault-injection layer over `node:fs` for store tests, installed with
 *
 *   vi.mock('node:fs', async (importOriginal) => (await import('./disk-faults.js')).withDiskFaults(await importOriginal()));
 *
 * Only files under `diskFaults.root` are affected; everything else passes straight through. It
 * plays a disk with `freeBytes` left (a write that does not fit writes what fits and returns short,
 * the next one fails with ENOSPC, as the kernel does), and fails the exact call a test names
 * (`failNext('fsync', 'log.jsonl', 'EIO')`). Deterministic, so it runs everywhere; the real small
 * file system (`small-disk.ts`) runs the same behaviours where it can be mounted.
 *
 * This module must not import `node:fs` at run time: it is loaded by the mock of that module.
 */

export type FaultedCall = 'write' | 'fsync' | 'truncate' | 'rename' | 'link' | 'mkdir';

interface ScriptedFault {
  call: FaultedCall;
  pathIncludes: string;
  code: string;
  times: number;
}

class DiskFaults {
  /** Files under this folder are subject to faults; undefined: none. */
  root: string | undefined;
  /** Bytes that may still be written under `root`. */
  freeBytes = Number.POSITIVE_INFINITY;
  /** Calls that failed on purpose, for tests to check a fault was really hit. */
  readonly injected: Array<{ call: FaultedCall; path: string; code: string }> = [];
  private scripted: ScriptedFault[] = [];

  /** Fails the next `times` calls of `call` on a path containing `pathIncludes`. */
  failNext(call: FaultedCall, pathIncludes: string, code = 'EIO', times = 1): void {
    this.scripted.push({ call, pathIncludes, code, times });
  }

  reset(): void {
    this.root = undefined;
    this.freeBytes = Number.POSITIVE_INFINITY;
    this.scripted = [];
    this.injected.length = 0;
  }

  covers(path: string | undefined): path is string {
    return path !== undefined && this.root !== undefined && path.startsWith(this.root);
  }

  /** Throws the scripted fault for this call, if any. */
  check(call: FaultedCall, path: string | undefined): void {
    if (!this.covers(path)) return;
    const fault = this.scripted.find((candidate) => candidate.call === call && path.includes(candidate.pathIncludes));
    if (fault === undefined) return;
    fault.times -= 1;
    if (fault.times <= 0) this.scripted.splice(this.scripted.indexOf(fault), 1);
    throw this.fail(call, path, fault.code);
  }

  /** How many of `wanted` bytes fit; throws ENOSPC when none do. */
  take(path: string | undefined, wanted: number): number {
    if (!this.covers(path) || wanted === 0) return wanted;
    if (this.freeBytes <= 0) throw this.fail('write', path, 'ENOSPC');
    const granted = Math.min(wanted, this.freeBytes);
    this.freeBytes -= granted;
    return granted;
  }

  fail(call: FaultedCall, path: string, code: string): NodeJS.ErrnoException {
    this.injected.push({ call, path, code });
    const description = code === 'ENOSPC' ? 'no space left on device' : code === 'EIO' ? 'i/o error' : 'injected fault';
    return Object.assign(new Error(`${code}: ${description} (injected), ${call} '${path}'`), {
      code,
      syscall: call,
      path,
    });
  }
}

export const diskFaults = new DiskFaults();

type PromisesApi = typeof NodeFs.promises;
type FileHandle = NodeFs.promises.FileHandle;

/** `node:fs` with the store's write, fsync, truncate, rename, link and mkdir calls routed through `diskFaults`. */
export function withDiskFaults(actual: typeof NodeFs): typeof NodeFs {
  const fdPaths = new Map<number, string>();

  const openSync = ((path: NodeFs.PathLike, ...rest: unknown[]) => {
    const fd = (actual.openSync as (...args: unknown[]) => number)(path, ...rest);
    fdPaths.set(fd, String(path));
    return fd;
  }) as typeof NodeFs.openSync;
  const closeSync: typeof NodeFs.closeSync = (fd) => {
    fdPaths.delete(fd);
    actual.closeSync(fd);
  };
  // The store calls writeSync(fd, buffer, offset, length); a short count is what a nearly full disk returns.
  const writeSync = ((
    fd: number,
    buffer: NodeJS.ArrayBufferView,
    offset?: number,
    length?: number,
    position?: number | null,
  ) => {
    const path = fdPaths.get(fd);
    diskFaults.check('write', path);
    const wanted = length ?? buffer.byteLength - (offset ?? 0);
    const granted = diskFaults.take(path, wanted);
    return actual.writeSync(fd, buffer, offset ?? 0, granted, position);
  }) as typeof NodeFs.writeSync;
  const fdatasyncSync: typeof NodeFs.fdatasyncSync = (fd) => {
    diskFaults.check('fsync', fdPaths.get(fd));
    actual.fdatasyncSync(fd);
  };
  const fsyncSync: typeof NodeFs.fsyncSync = (fd) => {
    diskFaults.check('fsync', fdPaths.get(fd));
    actual.fsyncSync(fd);
  };
  const ftruncateSync: typeof NodeFs.ftruncateSync = (fd, length) => {
    diskFaults.check('truncate', fdPaths.get(fd));
    actual.ftruncateSync(fd, length);
  };

  const wrapHandle = (handle: FileHandle, path: string): FileHandle =>
    new Proxy(handle, {
      get(target, property) {
        if (property === 'writeFile') {
          return async (data: string | Uint8Array) => {
            diskFaults.check('write', path);
            const bytes =
              typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
            let written = 0;
            // Like a full disk: what fits is written, then the next write fails.
            while (written < bytes.length) {
              const granted = diskFaults.take(path, bytes.length - written);
              const { bytesWritten } = await target.write(bytes, written, granted);
              written += bytesWritten;
            }
          };
        }
        if (property === 'sync' || property === 'datasync') {
          return async () => {
            diskFaults.check('fsync', path);
            await target[property]();
          };
        }
        if (property === 'truncate') {
          return async (length?: number) => {
            diskFaults.check('truncate', path);
            await target.truncate(length);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });

  const promises: PromisesApi = {
    ...actual.promises,
    open: (async (path: NodeFs.PathLike, ...rest: unknown[]) => {
      const handle = await (actual.promises.open as (...args: unknown[]) => Promise<FileHandle>)(path, ...rest);
      return diskFaults.covers(String(path)) ? wrapHandle(handle, String(path)) : handle;
    }) as PromisesApi['open'],
    rename: async (from, to) => {
      diskFaults.check('rename', String(to));
      await actual.promises.rename(from, to);
    },
    link: async (existing, target) => {
      diskFaults.check('link', String(target));
      await actual.promises.link(existing, target);
    },
    mkdir: (async (path: NodeFs.PathLike, options?: NodeFs.MakeDirectoryOptions) => {
      diskFaults.check('mkdir', String(path));
      // A new folder takes a block; an existing one is refused with EEXIST first, as on a real disk.
      if (diskFaults.covers(String(path)) && diskFaults.freeBytes <= 0) {
        const exists = await actual.promises.stat(path).then(
          () => true,
          () => false,
        );
        if (!exists) throw diskFaults.fail('mkdir', String(path), 'ENOSPC');
      }
      return actual.promises.mkdir(path, options);
    }) as PromisesApi['mkdir'],
  };

  const overrides = { openSync, closeSync, writeSync, fdatasyncSync, fsyncSync, ftruncateSync, promises };
  return { ...actual, ...overrides, default: { ...actual, ...overrides } } as typeof NodeFs;
}
