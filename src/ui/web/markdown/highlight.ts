/**
 * Colours code blocks by their fence's language. highlight.js loads on first need, in a chunk of
 * its own (`highlighter.ts`), so the first paint never waits for it: a block shows as plain code
 * at once and takes its colours when the chunk arrives. A language highlight.js does not know, or a
 * fence without one, stays plain (no guessing: auto-detection is slow and often wrong on snippets).
 */

interface Highlighter {
  getLanguage(name: string): unknown;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): { value: string };
}

let highlighter: Highlighter | undefined;
let loading: Promise<void> | undefined;
/** Blocks waiting for the chunk; those no longer on the page when it arrives are skipped. */
const waiting = new Set<HTMLElement>();
let failed = false;

/** Highlights the code blocks under `root` (now, or when highlight.js has loaded). */
export function highlightCodeIn(root: ParentNode): void {
  const blocks = Array.from(root.querySelectorAll<HTMLElement>('pre > code[data-lang]:not([data-highlighted])'));
  if (blocks.length === 0) return;
  if (highlighter) {
    for (const block of blocks) colour(highlighter, block);
    return;
  }
  if (failed) return;
  for (const block of blocks) waiting.add(block);
  loading ??= import('./highlighter.js').then(
    (module) => {
      const loaded = module.default as Highlighter;
      highlighter = loaded;
      for (const block of waiting) if (block.isConnected) colour(loaded, block);
      waiting.clear();
    },
    (error: unknown) => {
      // The code stays readable, uncoloured; say why once.
      failed = true;
      waiting.clear();
      console.warn('Code highlighting is off: highlight.js did not load.', error);
    },
  );
}

/** Resolves once highlight.js has loaded (or failed to); for tests and benches. */
export function highlighterReady(): Promise<void> {
  return loading ?? Promise.resolve();
}

function colour(loaded: Highlighter, block: HTMLElement): void {
  block.setAttribute('data-highlighted', '');
  const language = block.getAttribute('data-lang') ?? '';
  if (!loaded.getLanguage(language)) return;
  // highlight.js escapes the code it is given; its output is spans with hljs-* classes around that text.
  block.innerHTML = loaded.highlight(block.textContent ?? '', { language, ignoreIllegals: true }).value;
  block.classList.add('hljs');
}
