import { promises as fs } from 'node:fs';
import path from 'node:path';
import { WorkspaceError } from './errors.js';

/**
 * Confinement: every path a tool touches resolves inside the project folder. A path given as
 * `../x`, an absolute path elsewhere, or one that reaches outside through a symlink is refused with
 * PATH_OUTSIDE_PROJECT; a write into `.git/` or Parley's data folder (`.parley/`) with
 * PATH_PROTECTED. Checks run on real paths (symlinks resolved), also for a file that does not exist
 * yet (its nearest existing folder is resolved), so a link cannot smuggle a write out. These checks
 * give the clear errors; the disk itself is opened by `confined-files.ts`, which refuses a link
 * swapped in after them.
 */
export interface ResolvedPath {
  /** The real absolute path. */
  absolute: string;
  /** Relative to the project folder, with `/` separators; `.` for the folder itself. */
  relative: string;
  /**
   * The project folder's real path. The disk is reached by descending from it one component at a
   * time, so a component swapped for a link after this check still cannot lead out.
   */
  root: string;
  /** For a write: the folders (relative to `root`) it may not enter, checked again as it descends. */
  protectedFolders?: readonly string[];
}

export class WorkspacePaths {
  private constructor(
    /** The project folder's real path. */
    readonly root: string,
    private readonly protectedFolders: readonly string[],
  ) {}

  /** `root` must exist; `dataDir` (default `<root>/.parley`) is never written by a tool. */
  static async open(root: string, options: { dataDir?: string } = {}): Promise<WorkspacePaths> {
    let real: string;
    try {
      real = await fs.realpath(root);
    } catch (cause) {
      throw new WorkspaceError('NOT_FOUND', `The project folder ${root} does not exist.`, {
        fault: 'user',
        cause,
        data: { root },
      });
    }
    const dataDir = options.dataDir ?? path.join(root, '.parley');
    const protectedFolders = [path.join(real, '.git'), await realOrLexical(dataDir)];
    return new WorkspacePaths(real, protectedFolders);
  }

  /** Resolves a path for reading (it may be a file or folder; it need not exist). */
  resolveForRead(input: string): Promise<ResolvedPath> {
    return this.resolve(input, false);
  }

  /** Resolves a path for writing: also refused inside `.git/` and the data folder. */
  resolveForWrite(input: string): Promise<ResolvedPath> {
    return this.resolve(input, true);
  }

  /** The project-relative form of an absolute real path inside the folder. */
  relativeOf(absolute: string): string {
    const relative = path.relative(this.root, absolute);
    return relative === '' ? '.' : relative.split(path.sep).join('/');
  }

  private async resolve(input: string, forWrite: boolean): Promise<ResolvedPath> {
    if (typeof input !== 'string' || input.trim() === '' || input.includes('\0')) {
      throw new WorkspaceError(
        'INVALID_INPUT',
        'A path must be non-empty text without NUL characters, relative to the project folder.',
        { data: { path: String(input) } },
      );
    }
    const lexical = path.resolve(this.root, input);
    if (!this.contains(lexical)) throw this.outside(input, lexical);
    const real = await realPathOfMaybeMissing(lexical);
    if (!this.contains(real)) {
      throw new WorkspaceError(
        'PATH_OUTSIDE_PROJECT',
        `"${input}" leads outside the project folder through a symbolic link (to ${real}); only files inside ${this.root} can be used.`,
        {
          data: { path: input, resolved: real, root: this.root },
        },
      );
    }
    if (forWrite) {
      const guarded = this.protectedFolders.find((folder) => real === folder || real.startsWith(folder + path.sep));
      if (guarded) throw protectedFolderError(input, this.contains(guarded) ? this.relativeOf(guarded) : guarded);
    }
    const target = { absolute: real, relative: this.relativeOf(real), root: this.root };
    if (!forWrite) return target;
    const inside = this.protectedFolders.filter((folder) => this.contains(folder));
    return { ...target, protectedFolders: inside.map((folder) => this.relativeOf(folder)) };
  }

  private contains(candidate: string): boolean {
    const relative = path.relative(this.root, candidate);
    return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
  }

  private outside(input: string, resolved: string): WorkspaceError {
    return new WorkspaceError(
      'PATH_OUTSIDE_PROJECT',
      `"${input}" is outside the project folder (${resolved}); use a path inside ${this.root}, relative to it.`,
      {
        data: { path: input, resolved, root: this.root },
      },
    );
  }
}

/** The refusal of a write into `.git/` or Parley's data folder (`name`: as shown to the agent). */
export function protectedFolderError(input: string, name: string): WorkspaceError {
  return new WorkspaceError(
    'PATH_PROTECTED',
    `"${input}" is inside ${name}/, which tools may not write (${name === '.git' ? 'git’s own data: use git commands' : 'Parley’s data folder'}).`,
    { data: { path: input, protected: name } },
  );
}

/** The real path of `target`, or of its nearest existing ancestor joined with the missing rest. */
async function realPathOfMaybeMissing(target: string): Promise<string> {
  const missing: string[] = [];
  let current = target;
  for (;;) {
    try {
      const real = await fs.realpath(current);
      return missing.length === 0 ? real : path.join(real, ...[...missing].reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ENOTDIR')
        throw error;
      // A dangling symlink: where it points decides, not that the target is missing.
      const link = await fs.readlink(current).catch(() => undefined);
      if (link !== undefined)
        return realPathOfMaybeMissing(path.resolve(path.dirname(current), link)).then((real) =>
          missing.length === 0 ? real : path.join(real, ...[...missing].reverse()),
        );
      const parent = path.dirname(current);
      if (parent === current) return target;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

async function realOrLexical(folder: string): Promise<string> {
  return realPathOfMaybeMissing(path.resolve(folder));
}
