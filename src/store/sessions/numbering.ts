import type { StreamEvent, UnsequencedEvent } from '../../conversation/index.js';
import type { SessionRecord } from './records.js';

/**
 * The seq of a session's first own event: 0, or one past the fork point of a fork, whose history
 * before it is its source's (shared, not copied). Every store numbers a fork's log from here.
 */
export function firstSeqOf(record: Pick<SessionRecord, 'forkedFrom'>): number {
  return (record.forkedFrom?.seq ?? -1) + 1;
}

/**
 * Stamps drafts with the session id, consecutive `seq`s from `firstSeq` and a time. Deliberately no
 * schema parse: these are Parley's own events on the append hot path; they are validated when read.
 */
export function numberEvents(
  sessionId: string,
  firstSeq: number,
  drafts: readonly UnsequencedEvent[],
  now: number = Date.now(),
): StreamEvent[] {
  return drafts.map(
    (draft, index) =>
      ({ ...structuredClone(draft), sessionId, seq: firstSeq + index, at: draft.at ?? now }) as StreamEvent,
  );
}

/** True when `seq` is inside the window `afterSeq < seq <= throughSeq` (either bound optional). */
export function inWindow(seq: number, afterSeq: number | undefined, throughSeq: number | undefined): boolean {
  return (afterSeq === undefined || seq > afterSeq) && (throughSeq === undefined || seq <= throughSeq);
}
