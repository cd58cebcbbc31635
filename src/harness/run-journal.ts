import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';
import type { RunJournalEntry, RunStore } from '../store/index.js';
import { HarnessError, ReplayDivergenceError, truncate } from './errors.js';

/**
 * A durable run's journal, as the harness reads and writes it. Every result the
 * workflow could not compute again is a step here, appended before the workflow sees it:
 *
 * - `session`: the Parley session an agent's turns go to (ids are random);
 * - `turn-start` / `turn`: an agent turn's prompt and the messages it took, and its result,
 *   written together when the turn ends (a turn cut by a crash has neither, and runs again);
 * - `prompt`, `reply`, `timeout`: a `waitForUser` question with its deadline, and how it ended;
 * - `send`: a message from `send`/`sendTo`, journaled before it is delivered;
 * - `read-messages` / `has-messages`, `now`, `random`: values the harness handed the workflow.
 *
 * Resume re-executes the workflow from its start: each step with an entry gets the journaled
 * result instead of doing the work (no agent called twice, no question asked twice); a `send` goes
 * back into the inbox just before the first step journaled after it. Once every entry is used the
 * run is live. A step whose journaled entry does not match what the code does now (another
 * prompt, another question), a step the journal never saw while it still holds unused entries,
 * and a workflow that ends before its journal does, stop the run with ReplayDivergenceError.
 */

const ErrorSnapshotSchema = z.object({
  name: z.string(),
  message: z.string(),
  code: z.string().optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorSnapshot = z.infer<typeof ErrorSnapshotSchema>;

export const JournalStepSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('session'),
    agent: z.string(),
    index: z.number().int().positive(),
    sessionId: z.string(),
  }),
  z.object({
    kind: z.literal('turn-start'),
    agent: z.string(),
    turn: z.number().int().positive(),
    prompt: z.string(),
    messages: z.array(z.string()),
  }),
  z.object({
    kind: z.literal('turn'),
    agent: z.string(),
    turn: z.number().int().positive(),
    output: z.string(),
    ok: z.boolean(),
    error: ErrorSnapshotSchema.optional(),
    /** Messages the running turn took live (its back end's injection). */
    injected: z.array(z.string()).optional(),
  }),
  z.object({
    kind: z.literal('prompt'),
    promptId: z.string(),
    prompt: z.string(),
    /** The answers it accepts, when it offers choices (journals written before forks had none). */
    choices: z.array(z.string()).optional(),
    askedAt: z.number(),
    deadline: z.number().optional(),
  }),
  z.object({
    kind: z.literal('reply'),
    promptId: z.string(),
    content: z.string(),
    choice: z.string().optional(),
    timestamp: z.number(),
  }),
  z.object({ kind: z.literal('timeout'), promptId: z.string(), timestamp: z.number() }),
  z.object({ kind: z.literal('send'), content: z.string(), agent: z.string().optional(), timestamp: z.number() }),
  z.object({
    kind: z.literal('read-messages'),
    index: z.number().int().positive(),
    messages: z.array(z.object({ content: z.string(), targetAgent: z.string().optional(), timestamp: z.number() })),
  }),
  z.object({ kind: z.literal('has-messages'), index: z.number().int().positive(), value: z.boolean() }),
  z.object({ kind: z.literal('now'), index: z.number().int().positive(), value: z.number() }),
  z.object({ kind: z.literal('random'), index: z.number().int().positive(), value: z.number() }),
]);
export type JournalStep = z.infer<typeof JournalStepSchema>;
type StepOf<K extends JournalStep['kind']> = Extract<JournalStep, { kind: K }>;
type CountedKind = 'read-messages' | 'has-messages' | 'now' | 'random';

/** The key a step is matched by on replay: what the workflow asks for, in its own terms. */
export function stepKey(step: JournalStep): string {
  switch (step.kind) {
    case 'session':
      return `session:${step.agent}#${step.index}`;
    case 'turn-start':
    case 'turn':
      return `${step.kind}:${step.agent}#${step.turn}`;
    case 'prompt':
    case 'reply':
    case 'timeout':
      return `${step.kind}:${step.promptId}`;
    case 'send':
      return 'send';
    default:
      return `${step.kind}#${step.index}`;
  }
}

/** A step in words, for errors and the run's record. */
export function describeStep(step: JournalStep): string {
  switch (step.kind) {
    case 'session':
      return `the session of agent "${step.agent}"`;
    case 'turn-start':
    case 'turn':
      return `agent "${step.agent}" turn ${step.turn}`;
    case 'prompt':
      return `question ${step.promptId} ("${truncate(step.prompt, 60)}")`;
    case 'reply':
      return `the answer to ${step.promptId}`;
    case 'timeout':
      return `the timeout of ${step.promptId}`;
    case 'send':
      return `the message "${truncate(step.content, 40)}"`;
    default:
      return `${step.kind} call ${step.index}`;
  }
}

/** What the journal does to its run while replaying. */
export interface JournalTarget {
  /** A journaled `send` goes back into the run's inbox. */
  deliverSend(step: StepOf<'send'>): void;
  /** The journal no longer matches the code: stop the run. */
  diverged(error: ReplayDivergenceError): void;
  /** An append failed: the run cannot go on durably. */
  failed(error: unknown): void;
  /** Every entry was used: the run is live from here. */
  replayEnded(): void;
}

interface Keyed {
  seq: number;
  step: JournalStep;
  used: boolean;
}

export interface RunJournalOptions {
  /** Milliseconds a step the journal never saw may wait for the replay to end before it counts as a divergence. */
  stallTimeoutMs?: number;
}

export class RunJournal {
  divergence: ReplayDivergenceError | undefined;
  failure: unknown;
  /** Set when the run's process stops it (close): nothing more is appended. */
  stopped = false;
  private target: JournalTarget | undefined;
  private readonly keyed = new Map<string, Keyed>();
  private readonly order: Keyed[] = [];
  private readonly sends: Array<{ seq: number; step: StepOf<'send'> }> = [];
  private sendCursor = 0;
  private unused = 0;
  private readonly counters = new Map<CountedKind, number>();
  private readonly pending = new Set<Promise<unknown>>();
  private liveWaiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  private watchdog: ReturnType<typeof setTimeout> | undefined;
  private usedSinceArmed = false;
  private length: number;
  private readonly stallTimeoutMs: number;

  constructor(
    private readonly store: RunStore,
    readonly runId: string,
    entries: readonly RunJournalEntry[] = [],
    options: RunJournalOptions = {},
  ) {
    this.stallTimeoutMs = options.stallTimeoutMs ?? 5000;
    this.length = entries.length;
    for (const entry of entries) {
      const parsed = JournalStepSchema.safeParse({ ...(entry.data as object), kind: entry.kind });
      if (!parsed.success) {
        throw new HarnessError(
          'INVALID_JOURNAL',
          `Entry ${entry.seq} of run ${runId}'s journal is not a step this Parley knows: ${describeIssues(parsed.error.issues)}.`,
          {
            fault: 'system',
            data: { runId, seq: entry.seq },
          },
        );
      }
      const step = parsed.data;
      if (step.kind === 'send') {
        this.sends.push({ seq: entry.seq, step });
        continue;
      }
      const keyed = { seq: entry.seq, step, used: false };
      this.keyed.set(stepKey(step), keyed);
      this.order.push(keyed);
      this.unused += 1;
    }
  }

  /** Entries in the journal, written ones and those being written. */
  get size(): number {
    return this.length;
  }

  /** True while journaled steps remain to be fed to the workflow. */
  get replaying(): boolean {
    return this.unused > 0 && this.divergence === undefined;
  }

  /** Attaches the run; with nothing to replay the run is live at once. */
  attach(target: JournalTarget): void {
    this.target = target;
    if (this.unused === 0) this.endReplay();
  }

  /** The journaled step of this key, used up (undefined when the journal has none). */
  take<K extends JournalStep['kind']>(kind: K, key: string): StepOf<K> | undefined {
    const found = this.keyed.get(key);
    if (!found || found.used || found.step.kind !== kind) return undefined;
    this.deliverSendsBefore(found.seq);
    found.used = true;
    this.usedSinceArmed = true;
    this.unused -= 1;
    if (this.unused === 0) this.endReplay();
    return found.step as StepOf<K>;
  }

  /** Whether the journal holds a step of this key (used or not). */
  has(key: string): boolean {
    return this.keyed.has(key);
  }

  /** The next call number of a counted step (`now`, `random`, `read-messages`, `has-messages`). */
  next(kind: CountedKind): number {
    const value = (this.counters.get(kind) ?? 0) + 1;
    this.counters.set(kind, value);
    return value;
  }

  /**
   * Resolves once the replay has ended, for a step the journal never saw: it may belong to a
   * branch that had not got this far. If nothing else is replayed for `stallTimeoutMs` while it
   * waits, the code has a step its journal does not: a divergence.
   */
  whenLive(stepName: string): Promise<void> {
    if (!this.replaying) return Promise.resolve();
    this.armWatchdog(stepName);
    return new Promise((resolve, reject) => this.liveWaiters.push({ resolve, reject }));
  }

  /** Appends steps (one write); resolves once they are durable. Appends are numbered in call order. */
  record(...steps: JournalStep[]): Promise<void> {
    return this.append(steps, 'now');
  }

  /**
   * Appends an agent turn's steps (its start and result, one write) with deferred sync: resolves
   * once they are written where a crash of the process cannot lose them, and they are made durable
   * with the next durable step, at close, or within the store's deferred-sync delay. Only a crash
   * of the machine inside that window can lose them, and then the turn runs again on resume, as a
   * turn cut by a crash does: its session log (fdatasynced with the turn) keeps both attempts.
   * It saves an agent turn a second flush of the disk's cache, after the session log's own.
   */
  recordTurnResult(...steps: JournalStep[]): Promise<void> {
    return this.append(steps, 'deferred');
  }

  private append(steps: JournalStep[], sync: 'now' | 'deferred'): Promise<void> {
    if (this.stopped)
      return Promise.reject(
        new HarnessError('SESSION_ENDED', `Run ${this.runId} is stopping; nothing more is journaled.`, {
          fault: 'system',
        }),
      );
    this.length += steps.length;
    const entries = steps.map(({ kind, ...data }) => ({ kind, data }));
    const written = this.store.appendJournal(this.runId, entries, { sync }).then(
      () => undefined,
      (error: unknown) => {
        this.failure ??= error;
        this.target?.failed(error);
        throw error;
      },
    );
    this.pending.add(written);
    const forget = (): void => void this.pending.delete(written);
    written.then(forget, forget);
    return written;
  }

  /** Settles once every append made so far has (durable, or failed). */
  async flushed(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** Stops the run's journal: a divergence at `seq` (the entry that no longer matches). */
  diverge(seq: number, stepName: string, detail: string, expected: unknown, actual: unknown): ReplayDivergenceError {
    const error = new ReplayDivergenceError(seq, detail, expected, actual, { source: 'journal', stepName });
    if (!this.divergence) {
      this.divergence = error;
      this.release(error);
      this.target?.diverged(error);
    }
    return this.divergence;
  }

  /** The journaled step of `key`'s entry number, for a divergence at it. */
  seqOf(key: string): number {
    return this.keyed.get(key)?.seq ?? this.length;
  }

  /** The first entry not used yet, if any. */
  firstUnused(): { seq: number; step: JournalStep } | undefined {
    return this.order.find((entry) => !entry.used);
  }

  private deliverSendsBefore(seq: number): void {
    while (this.sendCursor < this.sends.length && this.sends[this.sendCursor]!.seq < seq) {
      this.target?.deliverSend(this.sends[this.sendCursor++]!.step);
    }
  }

  private endReplay(): void {
    this.deliverSendsBefore(Number.POSITIVE_INFINITY);
    this.clearWatchdog();
    const waiters = this.liveWaiters;
    this.liveWaiters = [];
    this.target?.replayEnded();
    for (const waiter of waiters) waiter.resolve();
  }

  /** Steps held for the replay's end fail with `error` (the run diverged, or was stopped). */
  release(error: unknown): void {
    this.clearWatchdog();
    const waiters = this.liveWaiters;
    this.liveWaiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }

  private armWatchdog(stepName: string): void {
    if (this.watchdog) return;
    this.usedSinceArmed = false;
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      if (!this.replaying) return;
      if (this.usedSinceArmed) {
        this.armWatchdog(stepName);
        return;
      }
      const next = this.firstUnused()!;
      this.diverge(
        next.seq,
        stepName,
        `the workflow now runs ${stepName}, which its journal does not have, while the journal still holds ${describeStep(next.step)} that the workflow never reached. The workflow's code has changed since this run started.`,
        next.step,
        stepName,
      );
    }, this.stallTimeoutMs);
    this.watchdog.unref?.();
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }
}
