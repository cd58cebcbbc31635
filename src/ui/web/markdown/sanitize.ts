import createDOMPurify, { type Config, type DOMPurify } from 'dompurify';
import { isLinkable } from './render.js';

/**
 * The last gate between rendered Markdown and the page: DOMPurify with an allow-list of the tags
 * and attributes `render.ts` produces and nothing else (no `<img>`, no `style`, no event handlers,
 * no forms). `render.ts` already emits nothing unsafe; this holds even if a parser bug let
 * something through. The HTML is parsed in a `<template>` (an inert document: nothing in it loads or
 * runs) and sanitized there in place, which costs far less than DOMPurify's own parse (a new
 * document per call) when a session opens with hundreds of answers.
 */

const CONFIG: Config = {
  ALLOWED_TAGS: [
    'a',
    'p',
    'br',
    'hr',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'strong',
    'em',
    'del',
    's',
    'code',
    'pre',
    'blockquote',
    'ul',
    'ol',
    'li',
    'input',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'span',
    'div',
    'button',
  ],
  ALLOWED_ATTR: [
    'href',
    'title',
    'class',
    'type',
    'checked',
    'disabled',
    'start',
    'align',
    'data-src',
    'data-alt',
    'data-lang',
    'target',
    'rel',
    'aria-label',
  ],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  IN_PLACE: true,
};

let purifier: DOMPurify | undefined;

function instance(): DOMPurify {
  if (purifier) return purifier;
  // An instance of its own: its hooks do not reach any other user of DOMPurify.
  const created = createDOMPurify(window);
  created.addHook('afterSanitizeAttributes', (node) => {
    if (node instanceof Element && node.tagName === 'A') {
      const href = node.getAttribute('href');
      if (href === null || !isLinkable(href)) {
        node.removeAttribute('href');
        node.removeAttribute('target');
      } else {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    }
    // Task-list boxes show a state; they are not a form (any other input becomes such a box).
    if (node instanceof Element && node.tagName === 'INPUT') {
      node.setAttribute('type', 'checkbox');
      node.setAttribute('disabled', '');
    }
    if (node instanceof Element && node.tagName === 'BUTTON') node.setAttribute('type', 'button');
  });
  // Parsed once here, not on every call.
  created.setConfig(CONFIG);
  purifier = created;
  return created;
}

/** Sanitized nodes for `html`, ready to insert. */
export function sanitizeToFragment(html: string): DocumentFragment {
  const template = document.createElement('template');
  template.innerHTML = `<div>${html}</div>`;
  const root = template.content.firstElementChild;
  const fragment = document.createDocumentFragment();
  if (!root) return fragment;
  instance().sanitize(root);
  fragment.append(...Array.from(root.childNodes));
  return fragment;
}
