import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { isParleyError } from '../conversation/index.js';
import type { DraftLeaseResult } from '../store/index.js';
import type { ActiveDraft, DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';

// The draft lease: this server runs a draft only while it holds the draft's lease in the DraftStore.
// It takes the lease before a turn, renews it on a timer from then on (between turns too, so a live
// server keeps its drafts), and lets it go at a graceful close. When a server dies its leases expire,
// and another server takes its drafts over at their next prompt (draft-recovery.ts, takeOver).

export const DEFAULT_LEASE_TTL_MS = 30_000;

/** This process's name in leases: readable in the error another server's client gets, and unique. */
export function defaultLeaseOwner(): string {
  return `${hostname()} pid ${process.pid} ${randomUUID().slice(0, 8)}`;
}

/**
 * Takes (or extends) the lease of a draft this server is about to run. Refused with
 * DRAFT_RUN_ELSEWHERE, naming the server that holds it, while another live server does. Says whom
 * the lease was taken from when another server held it before (the draft may have run there since).
 */
export async function takeLease(
  state: DraftServiceState,
  session: { sessionId: string; channelId: string },
): Promise<{ takenFrom?: string }> {
  const result = await state.catalog.store.acquireDraftLease(session.sessionId, state.leaseOwner, state.leaseTtlMs);
  if (!result.granted) throw runElsewhere(session, result);
  return result.takenFrom === undefined ? {} : { takenFrom: result.takenFrom };
}

function runElsewhere(session: { sessionId: string; channelId: string }, result: DraftLeaseResult): DraftError {
  const until = result.expiresAt ? ` until ${result.expiresAt}` : '';
  return new DraftError(
    'DRAFT_RUN_ELSEWHERE',
    `The draft on channel "${session.channelId}" is run by another Parley server ("${result.holder ?? 'unknown'}", its lease runs${until}). ` +
      "Connect this channel's client to that server. If that server has stopped, its lease expires and the next prompt here takes the draft over.",
    {
      fault: 'user',
      data: {
        channelId: session.channelId,
        sessionId: session.sessionId,
        holder: result.holder,
        expiresAt: result.expiresAt,
      },
    },
  );
}

/**
 * Renews the draft's lease every third of its TTL until `stopLease`, on a timer that keeps no
 * process alive. A renewal that fails (the database is away) is tried again at the next tick; one
 * refused because another server took the draft over lets the draft go here.
 */
export function keepLease(state: DraftServiceState, draft: ActiveDraft): void {
  if (draft.lease) return;
  const { sessionId } = draft.session;
  let renewing = false;
  const timer = setInterval(
    () => {
      if (renewing) return;
      renewing = true;
      state.catalog.store
        .renewDraftLease(sessionId, state.leaseOwner, state.leaseTtlMs)
        .then(
          (result) => {
            if (!result.granted && draft.lease?.timer === timer) letGo(state, draft, result);
          },
          (error: unknown) => {
            // A closed store never answers again: nothing more to renew.
            if (isParleyError(error, 'STORE_CLOSED') && draft.lease?.timer === timer) stopLease(draft);
          },
        )
        .finally(() => (renewing = false));
    },
    Math.max(10, Math.floor(state.leaseTtlMs / 3)),
  );
  timer.unref();
  draft.lease = { timer };
}

export function stopLease(draft: ActiveDraft): void {
  if (draft.lease) clearInterval(draft.lease.timer);
  draft.lease = undefined;
}

/** Graceful close: the lease ends now, so another server may take the draft over at once. */
export async function releaseLease(state: DraftServiceState, draft: ActiveDraft): Promise<void> {
  stopLease(draft);
  await state.catalog.store.releaseDraftLease(draft.session.sessionId, state.leaseOwner);
}

/**
 * Another server holds the draft now (this one's lease expired and was taken over), or closed it
 * (undraft through another server drops the lease with the draft): this server stops running it. Its turn and workers end here (so two servers never write one conversation);
 * the draft's record is the new holder's, so nothing is saved.
 */
export function letGo(state: DraftServiceState, draft: ActiveDraft, result: DraftLeaseResult): void {
  if (draft.closing) return;
  draft.closing = true;
  stopLease(draft);
  const { sessionId, channelId } = draft.session;
  process.emitWarning(
    result.holder === undefined
      ? `Parley: the draft on channel "${channelId}" (session ${sessionId}) was closed through another server; this server let it go.`
      : `Parley: the draft on channel "${channelId}" (session ${sessionId}) is now run by another server ("${result.holder}"); this server let it go.`,
  );
  if (state.drafts.get(channelId) === draft) state.drafts.delete(channelId);
  if (state.bySession.get(sessionId) === draft) state.bySession.delete(sessionId);
  draft.turn?.controller.abort();
  void state.workers.killAll((agent) => agent.parentSessionId === sessionId).catch(() => undefined);
  state.pool.release(sessionId);
}
