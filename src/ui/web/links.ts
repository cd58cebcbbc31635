/**
 * The page's own addresses for what waits for a person: a fragment after `#` names it, so a
 * notification's link opens the web UI straight at it, and the fragment never reaches the server
 * (nor its logs): `#approval=<requestId>`, `#run=<runId>`, `#session=<sessionId>`, `#schedule=<scheduleId>`, and
 * `#pair=<code>` for the link `parley pair` prints.
 */
export type PageLink =
  | { kind: 'pair'; code: string }
  | { kind: 'approval'; requestId: string }
  | { kind: 'run'; runId: string }
  | { kind: 'schedule'; scheduleId: string }
  | { kind: 'session'; sessionId: string };

const KEYS = {
  pair: 'code',
  approval: 'requestId',
  run: 'runId',
  schedule: 'scheduleId',
  session: 'sessionId',
} as const;

/** What a fragment names, or undefined for none (or one this page does not know). */
export function linkOf(hash: string): PageLink | undefined {
  const parameters = new URLSearchParams(hash.replace(/^#/, ''));
  for (const kind of Object.keys(KEYS) as Array<keyof typeof KEYS>) {
    const value = parameters.get(kind)?.trim();
    if (!value || value.length > 200) continue;
    if (kind === 'pair') return { kind, code: value };
    if (kind === 'approval') return { kind, requestId: value };
    if (kind === 'run') return { kind, runId: value };
    if (kind === 'schedule') return { kind, scheduleId: value };
    return { kind, sessionId: value };
  }
  return undefined;
}

/** The address of the web UI at `base` (e.g. `https://host:7433/`) that opens at `link`. */
export function pageLink(base: string, link: PageLink): string {
  const url = new URL(base);
  url.search = '';
  const value =
    link.kind === 'pair'
      ? link.code
      : link.kind === 'approval'
        ? link.requestId
        : link.kind === 'run'
          ? link.runId
          : link.kind === 'schedule'
            ? link.scheduleId
            : link.sessionId;
  url.hash = `${link.kind}=${encodeURIComponent(value)}`;
  return url.toString();
}
