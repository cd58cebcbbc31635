/**
 * Fenced code, highlighted by language for the terminal: highlight.js (its core and the grammars
 * agents write most) turns code into classed spans, read here into ANSI colours with the chalk
 * Ink uses, so code follows the colour support Ink detects.
 *
 * Not cli-highlight: it parses highlight.js's HTML with a full HTML parser (per block, and per
 * streamed chunk of an open block) and styles with its own copy
 * of chalk, whose colour detection can disagree with Ink's.
 */
import chalk from 'chalk';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import csharp from 'highlight.js/lib/languages/csharp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import kotlin from 'highlight.js/lib/languages/kotlin';
import markdown from 'highlight.js/lib/languages/markdown';
import php from 'highlight.js/lib/languages/php';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import swift from 'highlight.js/lib/languages/swift';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { decodeEntities } from './terminal-text.js';

const GRAMMARS = {
  bash,
  c,
  cpp,
  csharp,
  css,
  diff,
  dockerfile,
  go,
  ini,
  java,
  javascript,
  json,
  kotlin,
  markdown,
  php,
  python,
  ruby,
  rust,
  shell,
  sql,
  swift,
  typescript,
  xml,
  yaml,
};
let registered = false;

/**
 * highlight.js with the grammars registered, on first use rather than at load: registering builds
 * every grammar (a hundredth of a second or more), and the TUI's first frame has no code in it.
 */
function highlighter(): typeof hljs {
  if (registered) return hljs;
  registered = true;
  for (const [name, grammar] of Object.entries(GRAMMARS)) hljs.registerLanguage(name, grammar);
  hljs.registerAliases(['console', 'zsh'], { languageName: 'bash' });
  hljs.registerAliases(['jsonc'], { languageName: 'json' });
  return hljs;
}

type Style = (text: string) => string;

/** highlight.js's classes (the first word after `hljs-`) to colours; unlisted ones take their parent's. */
const STYLES: Record<string, Style> = {
  keyword: chalk.blue,
  built_in: chalk.cyan,
  type: chalk.cyan,
  literal: chalk.blue,
  number: chalk.green,
  regexp: chalk.red,
  string: chalk.red,
  class: chalk.blue,
  function: chalk.yellow,
  title: chalk.yellow,
  comment: chalk.gray,
  doctag: chalk.green,
  meta: chalk.gray,
  section: chalk.bold,
  tag: chalk.gray,
  name: chalk.blue,
  attr: chalk.cyan,
  emphasis: chalk.italic,
  strong: chalk.bold,
  link: chalk.underline,
  addition: chalk.green,
  deletion: chalk.red,
  variable: chalk.magenta,
  symbol: chalk.magenta,
};

/**
 * The fence's language as highlight.js knows it, or undefined when it is unknown or absent. Code
 * without a known language is never auto-detected: detection runs every grammar, too slow for a
 * block that re-renders on each streamed chunk, and often wrong.
 */
export function codeLanguage(lang: string | undefined): string | undefined {
  const name = (lang ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  return name !== '' && highlighter().getLanguage(name) ? name : undefined;
}

/** The code with ANSI colours for its language; as it is when the language is unknown or the grammar fails. */
export function highlightCode(code: string, lang: string | undefined): string {
  const language = codeLanguage(lang);
  if (language === undefined) return code;
  try {
    return spansToAnsi(highlighter().highlight(code, { language, ignoreIllegals: true }).value);
  } catch {
    return code;
  }
}

const PART = /<span class="([^"]*)">|<\/span>|[^<]+/g;

/** highlight.js's output (nested `<span class="hljs-…">`, text escaped) as styled text. */
function spansToAnsi(html: string): string {
  const stack: Array<Style | undefined> = [];
  let out = '';
  for (const match of html.matchAll(PART)) {
    if (match[1] !== undefined) {
      const kind = /hljs-([\w-]+)/.exec(match[1])?.[1];
      stack.push((kind ? STYLES[kind] : undefined) ?? stack[stack.length - 1]);
    } else if (match[0] === '</span>') stack.pop();
    else {
      const text = decodeEntities(match[0]);
      const style = stack[stack.length - 1];
      out += style ? style(text) : text;
    }
  }
  return out;
}
