import { createTwoFilesPatch } from 'diff';

/** A unified diff of one file (`a/` and `b/` headers, three lines of context), as the UIs render it. */
export function unifiedDiff(relativePath: string, before: string, after: string): string {
  return createTwoFilesPatch(`a/${relativePath}`, `b/${relativePath}`, before, after, undefined, undefined, {
    context: 3,
  });
}
