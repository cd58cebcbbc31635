import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import type { SessionStore } from '../../store/index.js';
import { eventParser } from './deferred-parsers.js';
import { readManifest } from './manifest.js';
import { copyChunks } from './materialize.js';
import { forEachChunk, splitterFor } from './read-file.js';
import type { ImportSource } from './session-ids.js';

/**
 * The events of an imported session whose blocks are not built yet (`deferred-import.ts`), parsed
 * from its native copy in memory and numbered exactly as the build will number them in the log
 * (`seq` from 0, the header-only log's next; `at` from the parser, which stamps every event), but
 * written nowhere: for a reader that only shows the session (`parley show`), which then costs one
 * parse of the copy instead of the build (parse, serialize, encode, write, fsync) plus a read of
 * the log. The log is built by the first reader that needs the session's stored events
 * (`withImportedSessions`).
 */

/** An unbuilt session's native copy, ready to be parsed (`UnbuiltEventParser`). */
export interface UnbuiltTranscript {
  sessionId: string;
  /** The manifest's source (undefined: Claude Code, the first). */
  source: ImportSource | undefined;
  /** The native file's name, for the parser's warnings. */
  file: string;
  /** Names the copy in errors. */
  label: string;
  /** The copy, a chunk at a time (streamed where the store can). */
  chunks: AsyncIterable<Uint8Array | string>;
}

/**
 * The copy to parse, or undefined when there is nothing to parse here: no manifest, nothing
 * pending, or a log that already holds a prefix of the events (a crashed build, which the next
 * build resumes). `raw` is the store under the building view (a view's `lastSeq` would build).
 */
export async function openUnbuiltTranscript(
  raw: SessionStore,
  sessionId: string,
): Promise<UnbuiltTranscript | undefined> {
  const manifest = await readManifest(raw, sessionId);
  const pending = manifest?.pendingEvents;
  if (manifest === undefined || pending === undefined) return undefined;
  if ((await raw.lastSeq(sessionId)) !== -1) return undefined;
  const chunks = await copyChunks(raw, sessionId, pending);
  return {
    sessionId,
    source: manifest.source,
    file: pending.file,
    label: `${pending.transcript} of session ${sessionId}`,
    chunks,
  };
}

/**
 * Parses an unbuilt session's copy pushed a chunk at a time, numbering the events as the log
 * will. Events go to `onEvent` in order.
 */
export class UnbuiltEventParser {
  private seq = 0;
  private readonly splitter;
  private readonly parser;

  constructor(
    transcript: Pick<UnbuiltTranscript, 'sessionId' | 'source' | 'file'>,
    onEvent: (event: StreamEvent) => void,
  ) {
    const sessionId = transcript.sessionId;
    // Numbered in place, with the keys the log's append adds: the events are this parser's own, and a
    // copy of each (as the append makes) was a seventh of a show's CPU time (the first-show row of
    // bench/import.bench.ts).
    const number = (unsequenced: UnsequencedEvent): void => {
      const event = unsequenced as StreamEvent;
      event.sessionId = sessionId;
      event.seq = this.seq++;
      event.at ??= Date.now();
      onEvent(event);
    };
    this.parser = eventParser(transcript.source, number, transcript.file);
    this.splitter = splitterFor(this.parser);
  }

  push(chunk: Uint8Array | string): void {
    this.splitter.push(chunk);
  }

  get bytesRead(): number {
    return this.splitter.bytesRead;
  }

  /** The last line (even unterminated) and what the parser held back. */
  end(): void {
    this.splitter.end();
    this.parser.end();
  }
}

/** An opened copy parsed here: the events go to `onEvents` in order, a batch per chunk of the copy read, and are not kept. */
export async function parseUnbuiltTranscript(
  transcript: UnbuiltTranscript,
  onEvents: (events: StreamEvent[]) => void,
): Promise<void> {
  let batch: StreamEvent[] = [];
  const handOver = (): void => {
    if (batch.length === 0) return;
    const events = batch;
    batch = [];
    onEvents(events);
  };
  const parser = new UnbuiltEventParser(transcript, (event) => batch.push(event));
  await forEachChunk(transcript.chunks, transcript.label, (chunk) => parser.push(chunk), { afterChunk: handOver });
  parser.end();
  handOver();
}
