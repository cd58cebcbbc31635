/** Fenced code, highlighted by language for the terminal (cli-highlight, over highlight.js). */
import { highlight, supportsLanguage } from 'cli-highlight';

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
    return highlight(code, { language, ignoreIllegals: true });
  } catch {
    return code;
  }
}
