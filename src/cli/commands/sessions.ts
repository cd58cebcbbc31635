import { once } from 'node:events';
import { InvalidArgumentError, type Command } from 'commander';
import { ValidationError, describeIssues } from '../../conversation/index.js';
import type { SessionManager } from '../../sessions/index.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  SessionFilterSchema,
  matchesFilter,
  pageOf,
  type SessionPage,
  type SessionPageQuery,
  type SessionFilter,
  type SessionRecord,
  type SessionStore,
} from '../../store/index.js';
import { openListingStore } from '../listing-store.js';
import { openChosenStore, storeOption } from '../options.js';
import { describeScope, formatCost } from '../render.js';

/** The session layer loads only for the commands that read or change sessions: a listing never needs it. */
async function openManager(command: Command): Promise<{ manager: SessionManager; close: () => Promise<void> }> {
  const store = await openChosenStore(command);
  const { createSessionManager } = await import('../../sessions/index.js');
  const manager = await createSessionManager(storeOption(command, store));
  return {
    manager,
    close: async () => {
      await manager.close();
      await store?.close();
    },
  };
}

/** `parley sessions` and `parley show`: every session in the data folder, and one session's blocks. */
export function register(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('List sessions, newest first (pinned ones on top); rename, tag or pin one')
    .option('--json', 'print JSON')
    .option('--status <status>', 'active or archived')
    .option('--agent-type <type>', 'pm, dev, qa, harness, merge, or a role')
    .option('--backend <name>', 'only sessions on this back end')
    .option('--tag <tag>', 'only sessions carrying this tag')
    .option('--pinned', 'only pinned sessions')
    .option('--limit <count>', `sessions per page (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE})`, parseCount)
    .option('--cursor <cursor>', 'the page after this one (the cursor the page before printed)')
    .option('--all', 'every session, page after page')
    .action(async (options: ListOptions, command: Command) => {
      const store = await openListingStore(command);
      try {
        await printSessions(store, options);
      } finally {
        await store.close();
      }
    });

  sessions
    .command('rename')
    .description('Give a session a new title')
    .argument('<sessionId>', 'the session id (see `parley sessions`)')
    .argument('<title...>', 'the new title')
    .action(async (sessionId: string, words: string[], _options: unknown, command: Command) => {
      await changeSession(command, (manager) => manager.relabelSession(sessionId, { title: words.join(' ') }));
    });
  sessions
    .command('tag')
    .description('Add tags to a session (with --remove, take them off)')
    .argument('<sessionId>', 'the session id')
    .argument('<tags...>', 'tags: a letter or digit, then letters, digits or -_.:/')
    .option('--remove', 'remove these tags instead')
    .action(async (sessionId: string, tags: string[], options: { remove?: boolean }, command: Command) => {
      await changeSession(command, (manager) =>
        manager.tagSession(sessionId, options.remove ? { remove: tags } : { add: tags }),
      );
    });
  sessions
    .command('pin')
    .description('Pin a session: listed before the others (with --off, unpin it)')
    .argument('<sessionId>', 'the session id')
    .option('--off', 'unpin it')
    .action(async (sessionId: string, options: { off?: boolean }, command: Command) => {
      await changeSession(command, (manager) => manager.pinSession(sessionId, options.off !== true));
    });

  program
    .command('show')
    .description("Print one session's blocks and subagent threads")
    .argument('<sessionId>', 'the session id (see `parley sessions`)')
    .option('--json', 'print the session data as JSON (RuntimeSessionData)')
    .option('--verbose', 'end with a count of the native records kept but not shown')
    .action(async (sessionId: string, options: { json?: boolean; verbose?: boolean }, command: Command) => {
      const { manager, close } = await openManager(command);
      try {
        if (options.json) {
          const record = await manager.getSession(sessionId);
          const { rawTranscript: _raw, ...rest } = await manager.getRuntimeSession(sessionId);
          process.stdout.write(
            `${JSON.stringify({ session: record, ...rest, subagents: rest.subagents.map(({ rawTranscript: _thread, ...thread }) => thread) }, null, 2)}\n`,
          );
          return;
        }
        const { sessionTextChunks } = await import('../show-text.js');
        // Written as it is made, waiting for the terminal (or pipe) to take each chunk: a huge
        // session's text is never held whole.
        for await (const chunk of sessionTextChunks(manager, sessionId, { verbose: options.verbose === true }))
          if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
        process.stdout.write('\n');
      } finally {
        await close();
      }
    });
}

interface ListOptions {
  json?: boolean;
  status?: 'active' | 'archived';
  agentType?: string;
  backend?: string;
  tag?: string;
  pinned?: boolean;
  limit?: number;
  cursor?: string;
  all?: boolean;
}

function parseCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > MAX_PAGE_SIZE)
    throw new InvalidArgumentError(`give a whole number from 1 to ${MAX_PAGE_SIZE}.`);
  return count;
}

/** One page (the newest first), or with `--all` every page; the cursor of the next page goes to stderr, so stdout stays the list. */
async function printSessions(store: SessionStore, options: ListOptions): Promise<void> {
  const parsed = SessionFilterSchema.safeParse({
    ...(options.status ? { status: options.status } : {}),
    ...(options.agentType ? { agentType: options.agentType } : {}),
    ...(options.backend ? { type: options.backend } : {}),
    ...(options.tag ? { tag: options.tag } : {}),
    ...(options.pinned ? { pinned: true } : {}),
  });
  if (!parsed.success) throw new ValidationError(`parley sessions: ${describeIssues(parsed.error.issues)}.`);
  const filter: SessionFilter = parsed.data;
  const sessions: SessionRecord[] = [];
  let cursor = options.cursor;
  let more: string | undefined;
  do {
    const page = await listPage(store, {
      filter,
      limit: options.all ? MAX_PAGE_SIZE : (options.limit ?? DEFAULT_PAGE_SIZE),
      ...(cursor !== undefined ? { cursor } : {}),
    });
    sessions.push(...page.sessions);
    cursor = page.nextCursor;
    more = page.nextCursor;
  } while (options.all && cursor !== undefined);
  if (options.json) process.stdout.write(`${JSON.stringify(sessions, null, 2)}\n`);
  else if (sessions.length === 0 && options.cursor === undefined) {
    process.stdout.write(
      'No sessions yet. Start one with `parley chat "hello"`, or import one with `parley import <path>`.\n',
    );
  } else {
    const lines = sessions.map((session) => {
      const when = new Date(session.lastActivity ?? session.updatedAt).toISOString().replace('T', ' ').slice(0, 16);
      const title = session.title ? `  ${session.title.slice(0, 60)}` : '';
      const marks = `${session.pinned ? '  [pinned]' : ''}${session.tags?.length ? `  #${session.tags.join(' #')}` : ''}`;
      return `${session.sessionId}  ${session.status}  ${describeScope(session)}  ${session.type}  ${session.stats.totalMessages} msgs  ${session.stats.totalTokens} tok  ${formatCost(session.metrics)}  ${when}${title}${marks}\n`;
    });
    process.stdout.write(lines.join(''));
  }
  if (more !== undefined && !options.all)
    process.stderr.write(`More sessions: parley sessions --cursor ${more}   (or --all for every one)\n`);
}

/** A page from the store's index; a store without one (none of Parley's own) is listed whole and paged here. */
async function listPage(store: SessionStore, query: SessionPageQuery): Promise<SessionPage> {
  if (store.listSessionPage !== undefined) return store.listSessionPage(query);
  const records: SessionRecord[] = [];
  for await (const record of store.listSessions(query.filter)) records.push(record);
  return pageOf(records, query, (record) => matchesFilter(record, query.filter ?? {}));
}

/** Opens the store, makes one change to a session and prints it as `parley sessions` would. */
async function changeSession(
  command: Command,
  change: (manager: SessionManager) => Promise<SessionRecord>,
): Promise<void> {
  const { manager, close } = await openManager(command);
  try {
    const session = await change(manager);
    const marks = `${session.pinned ? '  [pinned]' : ''}${session.tags?.length ? `  #${session.tags.join(' #')}` : ''}`;
    process.stdout.write(`${session.sessionId}  ${session.title ?? ''}${marks}\n`);
  } finally {
    await close();
  }
}
