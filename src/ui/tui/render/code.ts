/** Fenced code, highlighted by language for the terminal (cli-highlight, over highlight.js). */
import chalk from 'chalk';
import { highlight, supportsLanguage, type Theme } from 'cli-highlight';

const same = (text: string) => text;

/**
 * Every token class styled with the chalk Ink uses, so code follows the colour support Ink detects
 * (cli-highlight's own chalk decides separately, and can differ from the rest of the screen).
 */
const THEME: Theme = {
  keyword: chalk.blue,
  built_in: chalk.cyan,
  type: chalk.cyan,
  literal: chalk.blue,
  number: chalk.green,
  regexp: chalk.red,
  string: chalk.red,
  subst: same,
  symbol: same,
  class: chalk.blue,
  function: chalk.yellow,
  title: same,
  params: same,
  comment: chalk.gray,
  doctag: chalk.green,
  meta: chalk.gray,
  'meta-keyword': same,
  'meta-string': same,
  section: chalk.bold,
  tag: chalk.gray,
  name: chalk.blue,
  'builtin-name': same,
  attr: chalk.cyan,
  attribute: same,
  variable: same,
  bullet: same,
  code: same,
  emphasis: chalk.italic,
  strong: chalk.bold,
  formula: same,
  link: chalk.underline,
  quote: same,
  'selector-tag': same,
  'selector-id': same,
  'selector-class': same,
  'selector-attr': same,
  'selector-pseudo': same,
  'template-tag': same,
  'template-variable': same,
  addition: chalk.green,
  deletion: chalk.red,
  default: same,
};

/** A few fence names people write that highlight.js knows by another name. */
const ALIASES: Record<string, string> = { console: 'bash', shell: 'bash', zsh: 'bash', jsonc: 'json', tsx: 'typescript', jsx: 'javascript', text: '', txt: '', plaintext: '' };

/**
 * The fence's language as highlight.js names it, or undefined when it is unknown or absent. Code
 * without a known language is never auto-detected: detection runs every grammar, too slow for a
 * block that re-renders on each streamed chunk, and often wrong.
 */
export function codeLanguage(lang: string | undefined): string | undefined {
  const name = (lang ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  const known = ALIASES[name] ?? name;
  return known !== '' && supportsLanguage(known) ? known : undefined;
}

/** The code with ANSI colours for its language; as it is when the language is unknown or the grammar fails. */
export function highlightCode(code: string, lang: string | undefined): string {
  const language = codeLanguage(lang);
  if (language === undefined) return code;
  try {
    return highlight(code, { language, ignoreIllegals: true, theme: THEME });
  } catch {
    return code;
  }
}
