import { ClaudeCodeParser } from '../../backends/index.js';
import type { StreamEvent, StreamEventDraft } from '../../conversation/index.js';
import type { SessionStore } from '../../store/index.js';
import { readManifest } from './manifest.js';
import { copyChunks } from './materialize.js';
import { streamChunks } from './read-file.js';

/**
 * The events of an imported session whose blocks are not built yet (`deferred-import.ts`), parsed
 * from its native copy in memory and numbered exactly as the build will number them in the log
 * (`seq` from 0, the header-only log's next; `at` from the parser, which stamps every event), but
 * written nowhere: for a reader that only shows the session (`parley show`), which then costs one
 * parse of the copy instead of the build (parse, serialize, encode, write, fsync) plus a read of
 * the log. The log is built by the first reader that needs the session's stored events
 * (`withImportedSessions`).
 *
 * `raw` is the store under the building view (a view's `lastSeq` would build). Returns undefined
 * when there is nothing to parse here: no manifest, nothing pending, or a log that already holds a
 * prefix of the events (a crashed build, which the next build resumes).
 */
export async function parseUnbuiltEvents(raw: SessionStore, sessionId: string): Promise<StreamEvent[] | undefined> {
  const pending = (await readManifest(raw, sessionId))?.pendingEvents;
  if (pending === undefined) return undefined;
  if ((await raw.lastSeq(sessionId)) !== -1) return undefined;
  const chunks = await copyChunks(raw, sessionId, pending);
  const events: StreamEvent[] = [];
  // Object.assign, as the log's append numbers a draft: the same keys in the same order.
  const number = (draft: StreamEventDraft): void => {
    events.push(Object.assign({}, draft, { sessionId, seq: events.length, at: draft.at ?? Date.now() }) as StreamEvent);
  };
  const parser = new ClaudeCodeParser({ emit: number, file: pending.file });
  await streamChunks(chunks, parser, `${pending.transcript} of session ${sessionId}`);
  parser.end();
  return events;
}
