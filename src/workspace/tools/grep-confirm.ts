import { readConfined } from '../confined-files.js';

/**
 * Checks a search's matching lines against the files as the tools may read them. Both engines
 * read files by path while walking (ripgrep is a separate program; the built-in search reads
 * what the walk found), so a folder swapped for a link to the outside in the middle of a search
 * could put outside lines, or outside names, in the answer. Each reported file is read again
 * through the confined descent (confined-files.ts), and a line is kept only when that file, inside
 * the project, holds that text at that line: what is shown is then exactly what an inside read
 * shows. Files are read once each, however many of their lines matched.
 */
export async function confirmInside(root: string, lines: readonly string[]): Promise<string[]> {
  const files = new Map<string, string[] | undefined>();
  const kept: string[] = [];
  for (const line of lines) {
    // "path:line:text": the first ":<digits>:" ends the path (a path holding one is a rare loss, never a leak).
    const match = /^(.*?):(\d+):/.exec(line);
    if (!match) continue;
    const file = match[1]!;
    if (!files.has(file)) files.set(file, await linesOf(root, file));
    const inside = files.get(file)?.[Number(match[2]) - 1];
    if (inside !== undefined && shows(inside, line.slice(match[0].length))) kept.push(line);
  }
  return kept;
}

async function linesOf(root: string, file: string): Promise<string[] | undefined> {
  try {
    const buffer = await readConfined({ absolute: `${root}/${file}`, relative: file, root });
    return buffer?.toString('utf8').split('\n');
  } catch {
    // Led outside, a folder now, unreadable: nothing of it is shown.
    return undefined;
  }
}

/** Whether `shown` is `inside` as the engines print it: whole, or its start and an omission mark for a long line. */
function shows(inside: string, shown: string): boolean {
  const line = inside.replace(/\r$/, '');
  const text = shown.replace(/\r$/, '');
  if (text === line) return true;
  const mark = text.lastIndexOf(' [');
  return mark > 0 && text.endsWith(']') && line.length > mark && line.startsWith(text.slice(0, mark));
}
