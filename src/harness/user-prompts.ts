import { currentBranch } from './branches.js';
import { HarnessError, TimeoutError, truncate } from './errors.js';
import type { UnstampedSessionEvent, UserReply, UserResponse } from './events.js';
import type { HarnessClock } from './clock.js';
import type { UnstampedRecordedInput } from './recording.js';
import { type RunJournal } from './run-journal.js';
import type { PendingPrompt, ReplyOutcome, WaitOptions } from './types.js';

/** What the prompts of a run need from the run. */
export interface PromptHost {
  /** False under replay: a recorded timeout arrives as an input, not from the clock. Read when a prompt opens. */
  readonly armTimers: boolean;
  /** Appends an event with the given branch (a prompt's events keep the branch that asked). */
  emit(unstamped: UnstampedSessionEvent, branch: string | undefined): number;
  /** Tells the run's observers about an outside action, before it takes effect. */
  notify(input: UnstampedRecordedInput): void;
  /** Throws when the run can take no new prompt (aborted or ended). */
  throwIfStopped(): void;
  /** Where timeouts are timed. */
  readonly clock: HarnessClock;
  /** A durable run's journal: questions, answers and timeouts are journaled, and fed from it on resume. */
  readonly journal: RunJournal | undefined;
  /** Runs the `emit`s of a step fed from the journal, so they count as replayed. */
  replayedEmit<T>(work: () => T): T;
}

interface PromptEntry {
  info: PendingPrompt;
  options: WaitOptions;
  branch: string | undefined;
  state: 'pending' | 'answered' | 'timed_out' | 'cancelled';
  resolve: (response: UserResponse) => void;
  reject: (error: unknown) => void;
  timer?: unknown;
}

const noop = (): void => {};

/**
 * The `waitForUser` prompts of an interactive run: a request and a response matched by id.
 * A prompt ends exactly once: answered by a reply, timed out (the clock or
 * a replayed recording), or cancelled when the run ends or is aborted. Replies and timeouts are the
 * run's non-deterministic inputs; each is announced to the observers before it takes effect.
 */
export class UserPrompts {
  private readonly prompts = new Map<string, PromptEntry>();
  private counter = 0;

  constructor(private readonly host: PromptHost) {}

  pending(): PendingPrompt[] {
    return [...this.prompts.values()].filter((entry) => entry.state === 'pending').map((entry) => ({ ...entry.info }));
  }

  waitForUser(prompt: string, options: WaitOptions = {}): Promise<UserResponse> {
    try {
      checkWaitOptions(prompt, options);
      this.host.throwIfStopped();
    } catch (error) {
      return Promise.reject(error);
    }
    const promptId = `prompt-${++this.counter}`;
    let resolve!: (response: UserResponse) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<UserResponse>((onResolve, onReject) => {
      resolve = onResolve;
      reject = onReject;
    });
    // An abort rejects every waiting prompt; a workflow that did not await one must not crash the process.
    promise.catch(noop);
    const info: PendingPrompt = {
      promptId,
      prompt,
      ...(options.choices ? { choices: [...options.choices] } : {}),
      ...(options.defaultChoice !== undefined ? { defaultChoice: options.defaultChoice } : {}),
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    };
    const entry: PromptEntry = { info, options, branch: currentBranch(), state: 'pending', resolve, reject };
    const journal = this.host.journal;
    if (journal) {
      this.openDurably(journal, entry).catch(reject);
      return promise;
    }
    this.prompts.set(promptId, entry);
    this.host.emit({ type: 'user:prompt', ...info }, entry.branch);
    if (options.timeout !== undefined && this.host.armTimers && entry.state === 'pending') {
      entry.timer = this.host.clock.setTimeout(() => this.timeout(promptId), options.timeout);
    }
    return promise;
  }

  /**
   * A durable run's question: asked (journaled with its deadline) before anyone can see it. On
   * resume, a question the journal has is not asked again: it keeps its deadline, and its journaled
   * answer or timeout applies at once; a deadline that passed while the run was down times it out now.
   */
  private async openDurably(journal: RunJournal, entry: PromptEntry): Promise<void> {
    const { promptId, prompt } = entry.info;
    const key = `prompt:${promptId}`;
    const journaled = journal.take('prompt', key);
    let askedAt: number;
    let deadline: number | undefined;
    if (journaled) {
      if (journaled.prompt !== prompt) {
        throw journal.diverge(
          journal.seqOf(key),
          `question ${promptId}`,
          `its journal asked "${truncate(journaled.prompt, 80)}", but the workflow now asks "${truncate(prompt, 80)}". The workflow's code has changed since this run started.`,
          journaled.prompt,
          prompt,
        );
      }
      ({ askedAt, deadline } = journaled);
    } else {
      await journal.whenLive(`question ${promptId} ("${truncate(prompt, 60)}")`);
      this.host.throwIfStopped();
      askedAt = this.host.clock.now();
      deadline = entry.options.timeout !== undefined ? askedAt + entry.options.timeout : undefined;
      await journal.record({
        kind: 'prompt',
        promptId,
        prompt,
        // Kept so a fork can check an answer to this question before it changes anything.
        ...(entry.info.choices ? { choices: [...entry.info.choices] } : {}),
        askedAt,
        ...(deadline !== undefined ? { deadline } : {}),
      });
      this.host.throwIfStopped();
    }
    entry.info.askedAt = askedAt;
    if (deadline !== undefined) entry.info.deadline = deadline;
    this.prompts.set(promptId, entry);
    const announce = (): number => this.host.emit({ type: 'user:prompt', ...withoutTimes(entry.info) }, entry.branch);
    if (journaled) this.host.replayedEmit(announce);
    else announce();
    const reply = journal.take('reply', `reply:${promptId}`);
    if (reply) {
      entry.state = 'answered';
      const response = {
        content: reply.content,
        ...(reply.choice !== undefined ? { choice: reply.choice } : {}),
        timestamp: new Date(reply.timestamp),
      };
      this.host.replayedEmit(() => this.answered(entry, response));
      return;
    }
    const timedOut = journal.take('timeout', `timeout:${promptId}`);
    if (timedOut) {
      entry.state = 'timed_out';
      this.host.replayedEmit(() => this.timedOut(entry, new Date(timedOut.timestamp)));
      return;
    }
    if (deadline !== undefined) {
      const remaining = deadline - this.host.clock.now();
      if (remaining <= 0) this.timeout(promptId);
      else entry.timer = this.host.clock.setTimeout(() => this.timeout(promptId), remaining);
    }
  }

  reply(promptId: string, reply: UserReply): ReplyOutcome {
    const entry = this.prompts.get(promptId);
    if (!entry) {
      const pending = this.pending().map((prompt) => prompt.promptId);
      throw new HarnessError(
        'UNKNOWN_PROMPT',
        `There is no prompt "${promptId}" in this session. ${pending.length > 0 ? `Waiting prompts: ${pending.join(', ')}.` : 'No prompt is waiting.'}`,
        { fault: 'user', data: { promptId, pending } },
      );
    }
    if (entry.state !== 'pending') {
      const what =
        entry.state === 'answered'
          ? 'has already been answered'
          : entry.state === 'timed_out'
            ? 'timed out'
            : 'was cancelled (the session ended or was aborted)';
      throw new HarnessError('PROMPT_ALREADY_ANSWERED', `Prompt ${promptId} ${what}; a prompt takes one reply.`, {
        fault: 'user',
        data: { promptId, state: entry.state },
      });
    }
    const given = typeof reply === 'string' ? { content: reply } : (reply ?? {});
    const content = typeof given.content === 'string' ? given.content : '';
    const explicitChoice = typeof given.choice === 'string' ? given.choice : undefined;
    this.host.notify({
      action: 'reply',
      promptId,
      ...(content !== '' ? { content } : {}),
      ...(explicitChoice !== undefined ? { choice: explicitChoice } : {}),
    });

    let choice: string | undefined;
    const choices = entry.options.choices;
    if (choices) {
      choice = pickChoice(choices, explicitChoice ?? content);
      if (choice === undefined) {
        return this.rejectReply(
          entry,
          content,
          `"${explicitChoice ?? content}" is not one of the choices (${choices.join(', ')}). Reply with one of them or its number.`,
        );
      }
    }
    const text = content !== '' && explicitChoice !== undefined ? content : (choice ?? content);
    if (entry.options.validator) {
      let verdict: boolean | string;
      try {
        verdict = entry.options.validator(text);
      } catch (error) {
        verdict = error instanceof Error ? error.message : String(error);
      }
      if (verdict !== true)
        return this.rejectReply(
          entry,
          text,
          typeof verdict === 'string' && verdict !== ''
            ? verdict
            : `The reply "${truncate(text, 60)}" was not accepted.`,
        );
    }
    entry.state = 'answered';
    this.clearTimer(entry);
    const response: UserResponse = {
      content: text,
      ...(choice !== undefined ? { choice } : {}),
      timestamp: given.timestamp ?? new Date(),
    };
    const journal = this.host.journal;
    if (journal) {
      // Durable before the workflow (or anyone watching its events) sees it.
      journal
        .record({
          kind: 'reply',
          promptId,
          content: response.content,
          ...(choice !== undefined ? { choice } : {}),
          timestamp: response.timestamp.getTime(),
        })
        .then(() => this.answered(entry, response), entry.reject);
    } else {
      this.answered(entry, response);
    }
    return { accepted: true, response };
  }

  private answered(entry: PromptEntry, response: UserResponse): void {
    this.host.emit({ type: 'user:reply', promptId: entry.info.promptId, response }, entry.branch);
    entry.resolve(response);
  }

  private clearTimer(entry: PromptEntry): void {
    if (entry.timer !== undefined) this.host.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  /** Ends a waiting prompt as timed out (the clock, or a replayed recording). False when it is not waiting. */
  timeout(promptId: string): boolean {
    const entry = this.prompts.get(promptId);
    if (!entry || entry.state !== 'pending') return false;
    this.host.notify({ action: 'timeout', promptId });
    entry.state = 'timed_out';
    this.clearTimer(entry);
    const journal = this.host.journal;
    const at = new Date(this.host.clock.now());
    if (journal) {
      journal
        .record({ kind: 'timeout', promptId, timestamp: at.getTime() })
        .then(() => this.timedOut(entry, at), entry.reject);
    } else {
      this.timedOut(entry, at);
    }
    return true;
  }

  private timedOut(entry: PromptEntry, at: Date): void {
    const { promptId } = entry.info;
    const fallback = entry.options.defaultChoice;
    this.host.emit(
      { type: 'user:timeout', promptId, ...(fallback !== undefined ? { defaultChoice: fallback } : {}) },
      entry.branch,
    );
    if (fallback !== undefined) {
      entry.resolve({
        content: fallback,
        ...(entry.options.choices ? { choice: fallback } : {}),
        timestamp: at,
        timedOut: true,
      });
    } else {
      entry.reject(new TimeoutError(promptId, entry.info.prompt, entry.options.timeout ?? 0));
    }
  }

  /** Rejects every waiting prompt with `error` (the run ended or was aborted). */
  cancelAll(error: unknown): void {
    for (const entry of this.prompts.values()) {
      if (entry.state !== 'pending') continue;
      entry.state = 'cancelled';
      this.clearTimer(entry);
      entry.reject(error);
    }
  }

  private rejectReply(entry: PromptEntry, content: string, message: string): ReplyOutcome {
    this.host.emit({ type: 'user:reply-rejected', promptId: entry.info.promptId, content, message }, entry.branch);
    return { accepted: false, message };
  }
}

/** A choice by exact text, case-insensitive text, or 1-based number. */
export function pickChoice(choices: readonly string[], given: string): string | undefined {
  const trimmed = given.trim();
  const exact = choices.find((choice) => choice === trimmed);
  if (exact !== undefined) return exact;
  const folded = choices.find((choice) => choice.toLowerCase() === trimmed.toLowerCase());
  if (folded !== undefined) return folded;
  if (/^\d+$/.test(trimmed)) return choices[Number(trimmed) - 1];
  return undefined;
}

function checkWaitOptions(prompt: string, options: WaitOptions): void {
  const fail = (detail: string): never => {
    throw new HarnessError('INVALID_INPUT', `waitForUser: ${detail}`, { fault: 'user' });
  };
  if (typeof prompt !== 'string' || prompt.trim() === '') fail('the prompt must be non-empty text.');
  if (options.timeout !== undefined && !(Number.isFinite(options.timeout) && options.timeout > 0)) {
    fail(`timeout must be a positive number of milliseconds, not ${String(options.timeout)}.`);
  }
  if (options.choices !== undefined) {
    if (
      !Array.isArray(options.choices) ||
      options.choices.length === 0 ||
      options.choices.some((choice) => typeof choice !== 'string' || choice.trim() === '')
    ) {
      fail('choices must be a non-empty list of non-empty strings.');
    }
    if (new Set(options.choices).size !== options.choices.length)
      fail(`choices must be distinct (${options.choices.join(', ')}).`);
  }
  if (
    options.defaultChoice !== undefined &&
    options.choices !== undefined &&
    !options.choices.includes(options.defaultChoice)
  ) {
    fail(`defaultChoice "${options.defaultChoice}" is not one of the choices (${options.choices.join(', ')}).`);
  }
}

/** The prompt event keeps its recorded shape: when it was asked is the journal's business. */
function withoutTimes(info: PendingPrompt): PendingPrompt {
  const { askedAt: _askedAt, deadline: _deadline, ...rest } = info;
  return rest;
}
