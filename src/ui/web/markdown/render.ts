import { Marked, type Token, type Tokens } from 'marked';

/**
 * Markdown to HTML for the chat: CommonMark plus GitHub's tables, task lists, strikethrough and
 * autolinks, through `marked`. Pure (no DOM): the HTML it returns still goes through DOMPurify
 * (`sanitize.ts`) before it reaches the page, but it is already made safe here, so the two
 * defences do not depend on each other:
 * - raw HTML a model or a transcript wrote is shown as text, never parsed;
 * - a link is a link only for `http:`, `https:` and `mailto:`; anything else (`javascript:`,
 *   `data:`, a relative path that would point into Parley's own server) is inert text;
 * - an image is never an `<img>`: an HTTPS image becomes a button that loads it when clicked (so a
 *   transcript cannot ping a tracker), any other image its alt text;
 * - a code block carries its language for the lazy highlighter and a copy button.
 */

export interface MarkdownOptions {
  /** A single newline is a line break (for what people type; models write Markdown paragraphs). */
  breaks?: boolean;
}

const LINKABLE = /^(?:https?:|mailto:)/i;
const LOADABLE_IMAGE = /^https:\/\//i;

/** `&`, `<`, `>`, `"` and `'` as entities: text and attribute values both. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character] ?? character);
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Whether a link target may be clicked: web and mail addresses only. */
export function isLinkable(href: string): boolean {
  return LINKABLE.test(href.trim());
}

/** The language name a fence gives (`ts`, `c++`, `shell-session`), or '' when there is none or it is odd. */
export function fenceLanguage(info: string | undefined): string {
  const word = (info ?? '').trim().split(/\s+/)[0] ?? '';
  return /^[\w#+.-]{1,40}$/.test(word) ? word.toLowerCase() : '';
}

/**
 * True for one line with nothing Markdown would read (no markup characters, no line-start markers,
 * no URL or address to autolink): it renders as exactly one paragraph of that text, so a caller can
 * skip the parser and the sanitizer. Most short messages people type are such lines.
 */
export function isPlainLine(text: string): boolean {
  return (
    text.length > 0 && text.length <= 2_000 && !/[\n\r\\`*_[\]<>#|~&!@$]|https?:|www\.|^[\s=+\-\d>]|\s$/i.test(text)
  );
}

function makeMarked(options: MarkdownOptions): Marked {
  return new Marked({
    gfm: true,
    breaks: options.breaks ?? false,
    renderer: {
      html(token: Tokens.HTML | Tokens.Tag): string {
        const text = escapeHtml(token.text);
        return 'block' in token && token.block ? `<p class="md-raw">${text}</p>\n` : text;
      },
      link(token: Tokens.Link): string {
        const label = this.parser.parseInline(token.tokens);
        const href = token.href.trim();
        if (!isLinkable(href))
          return `<span class="md-inert-link" title="${escapeHtml(`Not a web link, not opened: ${href}`)}">${label}</span>`;
        const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
        return `<a href="${escapeHtml(href)}"${title} target="_blank" rel="noopener noreferrer">${label}</a>`;
      },
      image(token: Tokens.Image): string {
        const href = token.href.trim();
        const alt = token.text || 'image';
        if (!LOADABLE_IMAGE.test(href))
          return `<span class="md-image-text" title="${escapeHtml(`Image not loaded: ${href}`)}">[image: ${escapeHtml(alt)}]</span>`;
        let host = href;
        try {
          host = new URL(href).host;
        } catch {
          // Not a URL after all: the button shows it as written.
        }
        return `<button type="button" class="md-image" data-src="${escapeHtml(href)}" data-alt="${escapeHtml(alt)}" title="${escapeHtml(`Load ${href}`)}">Load image: ${escapeHtml(alt)} (${escapeHtml(host)})</button>`;
      },
      code(token: Tokens.Code): string {
        const language = fenceLanguage(token.lang);
        const code = token.text.endsWith('\n') ? token.text : `${token.text}\n`;
        const label = language
          ? `<span class="code-lang">${escapeHtml(language)}</span>`
          : '<span class="code-lang"></span>';
        const attributes = language
          ? ` class="language-${escapeHtml(language)}" data-lang="${escapeHtml(language)}"`
          : '';
        return `<div class="code-block"><div class="code-bar">${label}<button type="button" class="copy-code" aria-label="Copy code">Copy</button></div><pre><code${attributes}>${escapeHtml(code)}</code></pre></div>\n`;
      },
    },
  });
}

let prose: Marked | undefined;
let typed: Marked | undefined;

function markedFor(options: MarkdownOptions): Marked {
  if (options.breaks) return (typed ??= makeMarked(options));
  return (prose ??= makeMarked(options));
}

/** Top-level tokens of a Markdown text (GFM). Their `raw` fields, joined, give the text back. */
export function lexMarkdown(text: string, options: MarkdownOptions = {}): Token[] {
  return markedFor(options).lexer(text);
}

/** HTML for tokens from `lexMarkdown` (made safe as the module comment says; sanitize it still). */
export function tokensToHtml(tokens: Token[], options: MarkdownOptions = {}): string {
  return markedFor(options).parser(tokens);
}

/** HTML for a whole Markdown text. */
export function markdownToHtml(text: string, options: MarkdownOptions = {}): string {
  return tokensToHtml(lexMarkdown(text, options), options);
}
