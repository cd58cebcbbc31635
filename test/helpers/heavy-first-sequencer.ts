import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** A test file that starts processes, servers, real CLIs, tmux or Chromium (CONTRIBUTING.md's naming). */
export const isEndToEnd = (file: string): boolean => /\.e2e\.test\.tsx?$/.test(file);

/** What a file without a recorded duration is guessed to take, in ms: the end-to-end files are the long ones. */
const GUESSED_END_TO_END_MS = 20_000;

/**
 * Starts the files that take longest first, so that the last minutes of a run are not one heavy
 * file alone on one core while the other is idle (two workers, vitest.config.ts).
 *
 * Vitest's own order does this only for files whose duration its cache recorded; a clean clone
 * (CI) has no cache, and Vitest then starts the largest files first, which put the real-CLI files
 * (small files, a minute or two each) at the end. Here a file with no recorded duration is guessed:
 * end-to-end files first, then by size, larger first.
 */
export class HeavyFirstSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const weight = new Map<TestSpecification, number>();
    for (const file of files) {
      const key = `${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`;
      const recorded = cache.getFileTestResults(key)?.duration;
      const size = cache.getFileStats(key)?.size ?? 0;
      weight.set(file, recorded ?? (isEndToEnd(file.moduleId) ? GUESSED_END_TO_END_MS : 0) + size / 1000);
    }
    return Promise.resolve([...files].sort((a, b) => weight.get(b)! - weight.get(a)!));
  }
}
