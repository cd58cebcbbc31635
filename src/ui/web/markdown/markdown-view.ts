import type { Token } from 'marked';
import { splitMarkdown, type MarkdownSplit } from './blocks.js';
import { highlightCodeIn } from './highlight.js';
import { isPlainLine, lexMarkdown, tokensToHtml, type MarkdownOptions } from './render.js';
import { sanitizeToFragment } from './sanitize.js';

/**
 * One text shown as Markdown, kept up to date as it streams. Each finished top-level block is
 * rendered once, into an element of its own that stays put; only the open tail (the block still
 * growing) is rendered again on an update, so a fence or a table arriving line by line does not
 * flicker and long answers do not get slower per delta. The element handles its own clicks: a
 * code block's Copy button, and an image placeholder that loads the image.
 */
export class MarkdownView {
  readonly element: HTMLElement;
  private split: MarkdownSplit | undefined;
  private readonly chunks: HTMLElement[] = [];
  private readonly tail: HTMLElement;
  /** The tail holds the whole text, rendered at once (see `update`). */
  private whole = false;

  constructor(private readonly options: MarkdownOptions = {}) {
    this.tail = document.createElement('div');
    this.tail.className = 'md-tail';
    this.element = document.createElement('div');
    this.element.className = 'markdown';
    this.element.append(this.tail);
    this.element.addEventListener('click', (event) => onClick(event));
  }

  /**
   * Shows `text`: appended text re-renders the tail only; any other change renders it all again.
   * A text that is `complete` on its first update is rendered whole, as one element (a session
   * opening with hundreds of answers needs no per-block elements for texts that will not grow).
   */
  update(text: string, complete = false): void {
    if (this.split?.source === text) return;
    if (complete && this.split === undefined) {
      if (isPlainLine(text)) {
        // What marked would make of it, without the parser and the sanitizer: set as text.
        const paragraph = document.createElement('p');
        paragraph.textContent = text;
        this.tail.replaceChildren(paragraph);
      } else {
        this.fill(this.tail, lexMarkdown(text, this.options));
      }
      this.split = { source: text, finished: [], openFrom: 0, open: [] };
      this.whole = true;
      return;
    }
    const previous = this.whole ? undefined : this.split;
    this.whole = false;
    const next = splitMarkdown(text, previous, this.options);
    const kept =
      previous &&
      next.finished.length >= previous.finished.length &&
      previous.finished.every((chunk, index) => next.finished[index] === chunk)
        ? previous.finished.length
        : 0;
    for (const element of this.chunks.splice(kept)) element.remove();
    for (const chunk of next.finished.slice(kept)) {
      const element = document.createElement('div');
      element.className = 'md-block';
      this.fill(element, chunk.tokens);
      this.tail.before(element);
      this.chunks.push(element);
    }
    this.fill(this.tail, next.open);
    this.split = next;
  }

  private fill(element: HTMLElement, tokens: Token[]): void {
    element.replaceChildren(sanitizeToFragment(tokensToHtml(tokens, this.options)));
    highlightCodeIn(element);
  }
}

function onClick(event: Event): void {
  const target = event.target instanceof Element ? event.target : null;
  const copy = target?.closest('button.copy-code');
  if (copy instanceof HTMLButtonElement) {
    const code = copy.closest('.code-block')?.querySelector('pre > code')?.textContent ?? '';
    void copyText(code).then(
      () => flash(copy, 'Copied'),
      () => flash(copy, 'Copy failed'),
    );
    return;
  }
  const image = target?.closest('button.md-image');
  if (image instanceof HTMLButtonElement) {
    const source = image.dataset['src'] ?? '';
    // Only what render.ts made loadable (https) is ever fetched, and only now, on the reader's click.
    if (!/^https:\/\//i.test(source)) return;
    const element = document.createElement('img');
    element.alt = image.dataset['alt'] ?? '';
    element.referrerPolicy = 'no-referrer';
    element.className = 'md-loaded-image';
    element.src = source;
    image.replaceWith(element);
  }
}

async function copyText(text: string): Promise<void> {
  // The Clipboard API needs a secure context (loopback is one); a server reached over plain HTTP
  // elsewhere falls back to the older copy command.
  if (navigator.clipboard) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const copied = document.execCommand('copy');
  area.remove();
  if (!copied) throw new Error('The browser refused to copy.');
}

function flash(button: HTMLButtonElement, label: string): void {
  button.textContent = label;
  setTimeout(() => (button.textContent = 'Copy'), 1_500);
}

/**
 * What a page's first Markdown costs once, whatever the text: the parser's regular expressions
 * compiled and DOMPurify set up.
 * Paid here, on a detached element, when the page is idle after it loads, instead of in the frame
 * that opens the first session. No code fence with a language: highlight.js still loads only when
 * a code block needs it.
 */
export function prepareMarkdown(): void {
  for (const options of [{}, { breaks: true }]) {
    new MarkdownView(options).update(
      'A **bold** and *em* word, `code`, ~~gone~~ and [a link](https://example.com).\n\n- [x] a task\n- an item\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n\n```\nplain\n```',
      true,
    );
  }
}
