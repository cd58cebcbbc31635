import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * Where `run_command` runs. With bubblewrap (`bwrap`) on PATH and working, a command sees the
 * whole file system read-only except the project folder (writable) and a private, empty `/tmp`
 * (where the folders PATH names under `/tmp` are bound read-only, so the user's programs run);
 * Parley's data folder is hidden (an empty tmpfs over it: no transcripts, no server token); the
 * network is cut (a private network namespace) unless the role allows it; its processes live in a
 * private PID namespace that dies with it. Without bwrap, commands run as the user, unconfined.
 *
 * It does not stop: reading any file the user can read, writing anything inside the project
 * (`.git/` included, so `git commit` works), using all CPU or memory, or, with network allowed,
 * reaching anything the machine can.
 */
export interface SandboxInfo {
  kind: 'bwrap' | 'none';
  /** One line for the user: what protects commands, or why nothing does. */
  detail: string;
  /** The bwrap binary, when kind is `bwrap`. */
  binary?: string;
}

export interface SandboxPlan {
  info: SandboxInfo;
  /** The project folder (writable inside). */
  root: string;
  /** Folders hidden from commands (Parley's data folder). */
  hidden: readonly string[];
  /** Whether commands may use the network. */
  network: boolean;
}

let detected: Promise<SandboxInfo> | undefined;

/**
 * Finds a working sandbox once per process. bwrap is tried for real (`bwrap … true`): it can be
 * installed and still refused by the kernel (no unprivileged user namespaces, a container's policy).
 */
export function detectSandbox(): Promise<SandboxInfo> {
  return (detected ??= probe());
}

async function probe(): Promise<SandboxInfo> {
  const binary = findOnPath('bwrap');
  if (!binary)
    return {
      kind: 'none',
      detail: 'bubblewrap (bwrap) is not installed, so commands run unconfined, as you, with your network.',
    };
  const works = await new Promise<boolean>((resolve) => {
    const child = spawn(
      binary,
      [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--unshare-net',
        '--unshare-pid',
        '--die-with-parent',
        '--',
        // By its path, as commands run: PATH may name no folder that holds `true`.
        '/bin/sh',
        '-c',
        'exit 0',
      ],
      { stdio: 'ignore' },
    );
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
  return works
    ? {
        kind: 'bwrap',
        binary,
        detail: `commands run in bubblewrap (${binary}): the project is writable, the rest of the file system read-only, the network off unless the role allows it.`,
      }
    : {
        kind: 'none',
        detail: `bubblewrap (${binary}) is installed but cannot make a sandbox here (user namespaces refused?), so commands run unconfined.`,
      };
}

/** The program and arguments that run `command` through `/bin/sh` under the plan. */
export function sandboxedSpawn(
  command: string,
  cwd: string,
  plan: SandboxPlan | undefined,
  searchPath: string = process.env['PATH'] ?? '',
): { file: string; args: string[] } {
  const shell = ['/bin/sh', '-c', command];
  if (!plan || plan.info.kind !== 'bwrap' || !plan.info.binary) return { file: '/bin/sh', args: ['-c', command] };
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    ...pathFoldersUnderTmp(searchPath, plan.root).flatMap((folder) => ['--ro-bind', folder, folder]),
    '--bind',
    plan.root,
    plan.root,
  ];
  for (const folder of plan.hidden) if (existsSync(folder)) args.push('--tmpfs', folder);
  if (!plan.network) args.push('--unshare-net');
  // A private PID namespace whose first process dies with bwrap: killing bwrap ends every process
  // the command started, even one that left its process group.
  args.push('--unshare-pid', '--die-with-parent', '--chdir', cwd, '--');
  return { file: plan.info.binary, args: [...args, ...shell] };
}

/**
 * The real paths of the folders `searchPath` names that the private `/tmp` would hide (a user's
 * folder of links to their tools under `/tmp`), to bind read-only over it. Mounted before the
 * project folder and the hidden folders, so the project stays writable and the data folder hidden
 * even when one lies inside such a folder. `/tmp` itself is left private.
 */
export function pathFoldersUnderTmp(searchPath: string, root: string): string[] {
  const folders = new Set<string>();
  for (const entry of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(entry)) continue;
    let real: string;
    try {
      real = realpathSync(entry);
    } catch {
      continue;
    }
    if (!real.startsWith('/tmp/') || real === root || real.startsWith(`${root}/`)) continue;
    folders.add(real);
  }
  return [...folders];
}

export function findOnPath(name: string): string | undefined {
  for (const folder of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (folder === '') continue;
    const candidate = path.join(folder, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
