import { ValidationError } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import { checkId } from '../validate.js';

/**
 * The draft lease: which server runs a draft. A draft is run by one server at a time; that server
 * holds its lease in the DraftStore and renews it before it expires. When the server dies its lease
 * expires, and another server may take the draft over. A database store keeps leases in a table and
 * reads expiry off the database's clock; the file and memory stores keep them in this process (one
 * process per data folder), with the same rules.
 */
export interface DraftLeaseResult {
  /** True when `owner` holds the lease now (until `expiresAt`). */
  granted: boolean;
  /**
   * Who holds the lease now: the caller when granted; otherwise the other live holder, or undefined
   * when nobody does (a renewal of a lease that was released with its draft).
   */
  holder?: string;
  /** When the holder's lease ends (ISO 8601, by the store's clock); absent when nobody holds it. */
  expiresAt?: string;
  /**
   * When granted: the owner before the caller, if it was another one (its lease had expired or been
   * released). The draft may have run there since: its state must be read again, and a turn that
   * owner was running was cut.
   */
  takenFrom?: string;
}

/** A live lease: who runs the draft, and until when (ISO 8601, by the store's clock). */
export interface DraftLeaseHolder {
  holder: string;
  expiresAt: string;
}

/** The TTL of a lease: a whole number of milliseconds, at most a day (a lease that long is a lock nobody can break). */
export const MAX_LEASE_TTL_MS = 86_400_000;

export function checkLeaseInput(
  sessionId: unknown,
  owner: unknown,
  ttlMs?: unknown,
): { sessionId: string; owner: string; ttlMs: number } {
  const id = checkId(sessionId, 'session id');
  if (typeof owner !== 'string' || owner.trim() === '' || owner.length > 200) {
    throw new ValidationError(
      `A draft lease owner must be a non-empty string of at most 200 characters; got ${JSON.stringify(owner)}.`,
      {
        data: { field: 'owner', value: owner },
      },
    );
  }
  if (
    ttlMs !== undefined &&
    !(typeof ttlMs === 'number' && Number.isInteger(ttlMs) && ttlMs >= 0 && ttlMs <= MAX_LEASE_TTL_MS)
  ) {
    throw new ValidationError(
      `A draft lease TTL must be a whole number of milliseconds from 0 to ${MAX_LEASE_TTL_MS}; got ${JSON.stringify(ttlMs)}.`,
      {
        data: { field: 'ttlMs', value: ttlMs },
      },
    );
  }
  return { sessionId: id, owner, ttlMs: (ttlMs as number | undefined) ?? 0 };
}

export function noActiveDraft(sessionId: string): StoreError {
  return new StoreError(
    'DRAFT_NOT_FOUND',
    `No active draft has session "${sessionId}": only an active draft has a lease. Draft the task again.`,
    {
      fault: 'user',
      data: { sessionId },
    },
  );
}

interface HeldLease {
  owner: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/**
 * Leases kept in this process (the file and memory stores), by the process's clock. A lease whose
 * expiry has come (`expiresAt <= now`) is free; a released one keeps its owner, so the next owner
 * learns whom it took the draft from.
 */
export class LeaseTable {
  private readonly leases = new Map<string, HeldLease>();

  constructor(private readonly clock: () => number = Date.now) {}

  acquire(sessionId: string, owner: string, ttlMs: number): DraftLeaseResult {
    const now = this.clock();
    const held = this.leases.get(sessionId);
    if (held && held.owner !== owner && held.expiresAt > now)
      return { granted: false, holder: held.owner, expiresAt: iso(held.expiresAt) };
    this.leases.set(sessionId, { owner, expiresAt: now + ttlMs });
    return {
      granted: true,
      holder: owner,
      expiresAt: iso(now + ttlMs),
      ...(held && held.owner !== owner ? { takenFrom: held.owner } : {}),
    };
  }

  /** Extends the lease of its owner (even past its expiry, as long as nobody took it over). */
  renew(sessionId: string, owner: string, ttlMs: number): DraftLeaseResult {
    const held = this.leases.get(sessionId);
    if (!held) return { granted: false };
    if (held.owner !== owner) return { granted: false, holder: held.owner, expiresAt: iso(held.expiresAt) };
    held.expiresAt = this.clock() + ttlMs;
    return { granted: true, holder: owner, expiresAt: iso(held.expiresAt) };
  }

  /** Ends the owner's lease now; another owner's is left alone. */
  release(sessionId: string, owner: string): void {
    const held = this.leases.get(sessionId);
    if (held?.owner === owner) held.expiresAt = Math.min(held.expiresAt, this.clock());
  }

  /** The live lease, or undefined when nobody holds one (none taken, expired or released). */
  read(sessionId: string): DraftLeaseHolder | undefined {
    const held = this.leases.get(sessionId);
    if (!held || held.expiresAt <= this.clock()) return undefined;
    return { holder: held.owner, expiresAt: iso(held.expiresAt) };
  }

  /** The draft closed: nobody runs it any more. */
  forget(sessionId: string): void {
    this.leases.delete(sessionId);
  }
}

function iso(at: number): string {
  return new Date(at).toISOString();
}
