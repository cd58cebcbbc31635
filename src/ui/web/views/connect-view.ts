import { h, type Child } from '../dom.js';
import { connectHelp, type ConnectProblem } from '../view-model.js';

/** Text with `code` spans, as help lines write them. */
export function withCode(text: string): Child[] {
  return text
    .split(/(`[^`]+`)/)
    .map((part) =>
      part.startsWith('`') && part.endsWith('`') && part.length > 1 ? h('code', {}, part.slice(1, -1)) : part,
    );
}

/**
 * Shown instead of the app when the page has no token or the server refused it: how to get the
 * token, and a field to paste it.
 */
export function connectView(
  problem: ConnectProblem,
  options: { origin: string; detail?: string | undefined; onToken(token: string): void },
): HTMLElement {
  const help = connectHelp(problem, options.origin);
  const input = h('input', {
    type: 'password',
    name: 'token',
    placeholder: 'token (64 hex characters)',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-label': 'Server token',
  });
  const form = h(
    'form',
    {
      class: 'token-form',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const token = input.value.trim();
        if (token) options.onToken(token);
      },
    },
    input,
    h('button', { type: 'submit', class: 'primary' }, 'Connect'),
  );
  return h(
    'section',
    { class: 'connect', 'data-testid': 'connect-help', 'data-problem': problem },
    h(
      'div',
      { class: 'connect-card' },
      h('h1', {}, h('span', { class: 'brand-mark' }, '◆'), ' Parley'),
      h('h2', {}, help.title),
      options.detail ? h('p', { class: 'connect-detail' }, options.detail) : null,
      h(
        'ol',
        {},
        help.lines.map((line) => h('li', {}, withCode(line))),
      ),
      form,
    ),
  );
}
