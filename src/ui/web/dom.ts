/** A few lines of DOM building, instead of a framework: elements from tags, attributes and children. */

export type Child = Node | string | number | false | null | undefined | readonly Child[];

export type Attributes = Record<string, string | number | boolean | undefined | null | EventListener>;

/**
 * `h('div', { class: 'row', onclick: handler }, 'text', child)`. `on…` attributes become event
 * listeners, `true` sets an empty attribute, `false`/`null`/`undefined` leave it out. Text is always
 * set as text, never parsed as HTML, so nothing a model wrote can run in the page.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  append(element, children);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element (they live in their own namespace). */
export function svg(tag: string, attributes: Attributes = {}, ...children: Child[]): SVGElement {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  append(element, children);
  return element as SVGElement;
}

function setAttributes(element: Element, attributes: Attributes): void {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') {
      element.addEventListener(name.slice(2).toLowerCase(), value);
      continue;
    }
    if (
      name === 'value' &&
      (element instanceof HTMLInputElement ||
        element instanceof HTMLTextAreaElement ||
        element instanceof HTMLSelectElement)
    ) {
      element.value = String(value);
      continue;
    }
    element.setAttribute(name, value === true ? '' : String(value));
  }
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(parent, child as readonly Child[]);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  const fragment = document.createDocumentFragment();
  append(fragment, children);
  parent.replaceChildren(fragment);
}

/** Sets an element's text only when it differs: the element (and what the pointer is on) stays. */
export function setText(element: HTMLElement, text: string): void {
  if (element.textContent !== text) element.textContent = text;
}
