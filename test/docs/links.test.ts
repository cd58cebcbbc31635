import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link and image in the README, CONTRIBUTING.md and docs/ must lead somewhere: to a file
 * or folder that exists, and, for `#anchor` links into a Markdown file, to one of its headings, named
 * as GitHub names them. Web and mail links are left to the reader.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(): string[] {
  const files = ['README.md', 'CONTRIBUTING.md'].filter((name) => existsSync(join(root, name)));
  const walk = (folder: string): void => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files.sort();
}

/** The text with fenced code blocks blanked (line breaks kept, so line numbers stay right). */
function withoutCodeBlocks(text: string): string {
  const lines = text.split('\n');
  let fence: string | undefined;
  return lines
    .map((line) => {
      const opening = /^\s*(`{3,}|~{3,})/.exec(line);
      if (fence === undefined) {
        if (opening) {
          fence = opening[1]![0]!.repeat(opening[1]!.length);
          return '';
        }
        return line;
      }
      if (opening && opening[1]!.startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') fence = undefined;
      return '';
    })
    .join('\n');
}

/** Inline code spans blanked to spaces of the same length: a link written as code is not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

interface Link {
  target: string;
  line: number;
}

function linksIn(markdown: string): Link[] {
  const text = withoutCodeSpans(withoutCodeBlocks(markdown));
  const found: Link[] = [];
  const lineOf = (index: number): number => text.slice(0, index).split('\n').length;
  const patterns = [
    // [text](target) and ![alt](target), with an optional "title"
    /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
    // [label]: target (reference definitions)
    /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm,
    // <img src="…">, <a href="…">
    /\b(?:src|href)="([^"]+)"/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push({ target: match[1]!, line: lineOf(match.index) });
  }
  return found.sort((a, b) => a.line - b.line);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/<[^>]+>/g, '') // HTML tags show nothing
    .replace(/[`*]/g, '') // code and emphasis markers are not text
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a Markdown file has: its headings' slugs (repeats numbered as GitHub does) and HTML ids. */
function anchorsIn(markdown: string): Set<string> {
  const text = withoutCodeBlocks(markdown);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string): void => {
    const slug = slugOf(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  };
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const atx = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+\s*)?$/.exec(line);
    if (atx) add(atx[1]!);
    else if (
      index > 0 &&
      /^\s{0,3}(=+|-+)\s*$/.test(line) &&
      /\S/.test(lines[index - 1]!) &&
      !/^\s*[-*+>|]/.test(lines[index - 1]!)
    )
      add(lines[index - 1]!);
  });
  for (const match of text.matchAll(/<[^>]*\b(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

/** What is wrong with each relative link of the file at `path` (relative to the root), one line each. */
function brokenLinks(path: string, markdown: string, readFile: (absolute: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const { target, line } of linksIn(markdown)) {
    if (/^(https?|mailto):/i.test(target)) continue;
    const where = `${path}:${line}: ${target}`;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      problems.push(`${where}: a link with a scheme other than http(s) or mailto`);
      continue;
    }
    const hash = target.indexOf('#');
    const filePart = decodeURI(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const absolute = filePart === '' ? join(root, path) : resolve(join(root, dirname(path)), filePart);
    if (filePart.startsWith('/')) {
      problems.push(`${where}: an absolute path; write it relative to ${path}`);
      continue;
    }
    if (!absolute.startsWith(root)) {
      problems.push(`${where}: leads out of the repository`);
      continue;
    }
    const text = readFile(absolute);
    if (text === undefined && !existsSync(absolute)) {
      problems.push(`${where}: no such file (${relative(root, absolute)})`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!absolute.endsWith('.md') || text === undefined) {
      problems.push(`${where}: an anchor into something that is not a Markdown file`);
      continue;
    }
    if (!anchorsIn(text).has(anchor)) problems.push(`${where}: no heading "#${anchor}" in ${relative(root, absolute)}`);
  }
  return problems;
}

function readFromDisk(absolute: string): string | undefined {
  return existsSync(absolute) && statSync(absolute).isFile() ? readFileSync(absolute, 'utf8') : undefined;
}

/**
 * Files of the repository named in code spans (`src/store/sessions/file-store.ts`): a file that moved
 * leaves the docs pointing at nothing, with no link to catch it. Only paths under the repository's own
 * top folders, ending in a source or docs extension, count; names in examples (`src/app.ts`) are
 * written in code blocks, which are left out.
 */
export function missingPaths(markdown: string, exists: (path: string) => boolean): string[] {
  const text = withoutCodeBlocks(markdown);
  const missing: string[] = [];
  for (const span of text.matchAll(/`([^`\n]+)`/g)) {
    for (const match of span[1]!.matchAll(
      /(?:^|[\s(])((?:src|test|bench|scripts|examples|docs)\/[\w./-]+\.(?:ts|tsx|mjs|md))\b/g,
    )) {
      const path = match[1]!;
      if (!exists(path)) missing.push(path);
    }
  }
  return missing;
}

describe('links in the README and docs', () => {
  const files = markdownFiles();

  it('finds the README, CONTRIBUTING.md and the guides', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', join('docs', 'README.md')]));
    expect(files.some((file) => file.startsWith(join('docs', 'guides')))).toBe(true);
  });

  for (const file of files) {
    it(`every relative link in ${file} resolves`, () => {
      expect(brokenLinks(file, readFileSync(join(root, file), 'utf8'), readFromDisk)).toEqual([]);
    });
    if (file === join('docs', 'protocol.md') || file.startsWith(join('docs', 'api'))) continue;
    it(`every repository file ${file} names in code exists`, () => {
      expect(missingPaths(readFileSync(join(root, file), 'utf8'), (path) => existsSync(join(root, path)))).toEqual([]);
    });
  }
});

describe('the link checker', () => {
  const pages: Record<string, string> = {
    [join(root, 'docs', 'page.md')]: '# A page\n\n## The `seq`, and why\n\n## Twice\n\n## Twice\n',
  };
  const read = (absolute: string): string | undefined => pages[absolute] ?? readFromDisk(absolute);

  it('reports a missing file, a missing heading and a link out of the repository', () => {
    const markdown = [
      '[gone](guides/no-such-page.md)',
      '![gone](screenshots/no-such.png)',
      '[wrong heading](page.md#no-such-heading)',
      '[out](../../outside.md)',
    ].join('\n');
    const problems = brokenLinks(join('docs', 'index.md'), markdown, read);
    expect(problems).toHaveLength(4);
    expect(problems[0]).toContain('docs/index.md:1: guides/no-such-page.md: no such file');
    expect(problems[1]).toContain('no such file');
    expect(problems[2]).toContain('no heading "#no-such-heading"');
    expect(problems[3]).toContain('leads out of the repository');
  });

  it("accepts headings named by GitHub's rules, repeats numbered", () => {
    const markdown = '[a](page.md#the-seq-and-why) [b](page.md#twice) [c](page.md#twice-1) [d](page.md)';
    expect(brokenLinks(join('docs', 'index.md'), markdown, read)).toEqual([]);
    expect(brokenLinks(join('docs', 'index.md'), '[e](page.md#twice-2)', read)).toHaveLength(1);
  });

  it('leaves web and mail links, code spans and code blocks alone', () => {
    const markdown = [
      '[web](https://example.com/x) [mail](mailto:someone@example.com)',
      '`[not a link](nowhere.md)`',
      '```md',
      '[not a link either](nowhere.md)',
      '```',
    ].join('\n');
    expect(brokenLinks(join('docs', 'index.md'), markdown, read)).toEqual([]);
  });

  it('reports a file named in code that does not exist, and leaves code blocks alone', () => {
    const markdown = 'See `src/store/gone.ts` and `src/index.ts` (and `npm test`).\n\n```ts\n// src/app.ts\n```\n';
    expect(missingPaths(markdown, (path) => path === 'src/index.ts')).toEqual(['src/store/gone.ts']);
  });

  it('slugs headings as GitHub does', () => {
    expect(slugOf('Carrying a conversation between back ends, and following native sessions')).toBe(
      'carrying-a-conversation-between-back-ends-and-following-native-sessions',
    );
    expect(slugOf('Editors (Agent Client Protocol)')).toBe('editors-agent-client-protocol');
    expect(slugOf('The `draft_store`: claims')).toBe('the-draft_store-claims');
    expect(slugOf('Moving a data folder into PostgreSQL, and back')).toBe(
      'moving-a-data-folder-into-postgresql-and-back',
    );
  });
});
