import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import type { SessionStore } from '../../store/index.js';
import { eventParser } from './deferred-parsers.js';
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
 * The events go to `onEvents` in order, a batch per chunk of the copy read, and are not kept here.
 * `raw` is the store under the building view (a view's `lastSeq` would build). Returns false,
 * having parsed nothing, when there is nothing to parse here: no manifest, nothing pending, or a
 * log that already holds a prefix of the events (a crashed build, which the next build resumes).
 */
export async function parseUnbuiltEvents(
  raw: SessionStore,
  sessionId: string,
  onEvents: (events: StreamEvent[]) => void,
): Promise<boolean> {
  const manifest = await readManifest(raw, sessionId);
  const pending = manifest?.pendingEvents;
  if (pending === undefined) return false;
  if ((await raw.lastSeq(sessionId)) !== -1) return false;
  const chunks = await copyChunks(raw, sessionId, pending);
  let seq = 0;
  let batch: StreamEvent[] = [];
  const handOver = (): void => {
    if (batch.length === 0) return;
    const events = batch;
    batch = [];
    onEvents(events);
  };
  // Numbered in place, with the keys the log's append adds: the events are this parser's own, and a
  // copy of each (as the append makes) was a seventh of a show's CPU time (the first-show row of
  // bench/import.bench.ts).
  const number = (unsequenced: UnsequencedEvent): void => {
    const event = unsequenced as StreamEvent;
    event.sessionId = sessionId;
    event.seq = seq++;
    event.at ??= Date.now();
    batch.push(event);
  };
  const parser = eventParser(manifest?.source, number, pending.file);
  await streamChunks(chunks, parser, `${pending.transcript} of session ${sessionId}`, { afterChunk: handOver });
  parser.end();
  handOver();
  return true;
}
