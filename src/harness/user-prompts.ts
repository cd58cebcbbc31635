import { currentBranch } from './branches.js';
import { HarnessError, TimeoutError, truncate } from './errors.js';
import type { SessionEventDraft, UserReply, UserResponse } from './events.js';
import type { RecordedInputDraft } from './recording.js';
import type { PendingPrompt, ReplyOutcome, WaitOptions } from './types.js';

/** What the prompts of a run need from the run. */
export interface PromptHost {
  /** False under replay: a recorded timeout arrives as an input, not from the clock. Read when a prompt opens. */
  readonly armTimers: boolean;
  /** Appends an event with the given branch (a prompt's events keep the branch that asked). */
  emit(draft: SessionEventDraft, branch: string | undefined): number;
  /** Tells the run's observers about an outside action, before it takes effect. */
  notify(input: RecordedInputDraft): void;
  /** Throws when the run can take no new prompt (aborted or ended). */
  throwIfStopped(): void;
}

interface PromptEntry {
  info: PendingPrompt;
  options: WaitOptions;
  branch: string | undefined;
  state: 'pending' | 'answered' | 'timed_out' | 'cancelled';
  resolve: (response: UserResponse) => void;
  reject: (error: unknown) => void;
  timer?: ReturnType<typeof setTimeout>;
}

const noop = (): void => {};

/**
 * The `waitForUser` prompts of an interactive run: a request and a response matched by id
 * (STYLE.md practice 9). A prompt ends exactly once: answered by a reply, timed out (the clock or
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
    this.prompts.set(promptId, entry);
    this.host.emit({ type: 'user:prompt', ...info }, entry.branch);
    if (options.timeout !== undefined && this.host.armTimers && entry.state === 'pending') {
      entry.timer = setTimeout(() => this.timeout(promptId), options.timeout);
    }
    return promise;
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
      const what = entry.state === 'answered' ? 'has already been answered' : entry.state === 'timed_out' ? 'timed out' : 'was cancelled (the session ended or was aborted)';
      throw new HarnessError('PROMPT_ALREADY_ANSWERED', `Prompt ${promptId} ${what}; a prompt takes one reply.`, { fault: 'user', data: { promptId, state: entry.state } });
    }
    const given = typeof reply === 'string' ? { content: reply } : (reply ?? {});
    const content = typeof given.content === 'string' ? given.content : '';
    const explicitChoice = typeof given.choice === 'string' ? given.choice : undefined;
    this.host.notify({ action: 'reply', promptId, ...(content !== '' ? { content } : {}), ...(explicitChoice !== undefined ? { choice: explicitChoice } : {}) });

    let choice: string | undefined;
    const choices = entry.options.choices;
    if (choices) {
      choice = pickChoice(choices, explicitChoice ?? content);
      if (choice === undefined) {
        return this.rejectReply(entry, content, `"${explicitChoice ?? content}" is not one of the choices (${choices.join(', ')}). Reply with one of them or its number.`);
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
      if (verdict !== true) return this.rejectReply(entry, text, typeof verdict === 'string' && verdict !== '' ? verdict : `The reply "${truncate(text, 60)}" was not accepted.`);
    }
    entry.state = 'answered';
    if (entry.timer) clearTimeout(entry.timer);
    const response: UserResponse = { content: text, ...(choice !== undefined ? { choice } : {}), timestamp: given.timestamp ?? new Date() };
    this.host.emit({ type: 'user:reply', promptId, response }, entry.branch);
    entry.resolve(response);
    return { accepted: true, response };
  }

  /** Ends a waiting prompt as timed out (the clock, or a replayed recording). False when it is not waiting. */
  timeout(promptId: string): boolean {
    const entry = this.prompts.get(promptId);
    if (!entry || entry.state !== 'pending') return false;
    this.host.notify({ action: 'timeout', promptId });
    entry.state = 'timed_out';
    if (entry.timer) clearTimeout(entry.timer);
    const fallback = entry.options.defaultChoice;
    this.host.emit({ type: 'user:timeout', promptId, ...(fallback !== undefined ? { defaultChoice: fallback } : {}) }, entry.branch);
    if (fallback !== undefined) {
      entry.resolve({ content: fallback, ...(entry.options.choices ? { choice: fallback } : {}), timestamp: new Date(), timedOut: true });
    } else {
      entry.reject(new TimeoutError(promptId, entry.info.prompt, entry.options.timeout ?? 0));
    }
    return true;
  }

  /** Rejects every waiting prompt with `error` (the run ended or was aborted). */
  cancelAll(error: unknown): void {
    for (const entry of this.prompts.values()) {
      if (entry.state !== 'pending') continue;
      entry.state = 'cancelled';
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(error);
    }
  }

  private rejectReply(entry: PromptEntry, content: string, message: string): ReplyOutcome {
    this.host.emit({ type: 'user:reply-rejected', promptId: entry.info.promptId, content, message }, entry.branch);
    return { accepted: false, message };
  }
}

/** A choice by exact text, case-insensitive text, or 1-based number. */
function pickChoice(choices: readonly string[], given: string): string | undefined {
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
    if (!Array.isArray(options.choices) || options.choices.length === 0 || options.choices.some((choice) => typeof choice !== 'string' || choice.trim() === '')) {
      fail('choices must be a non-empty list of non-empty strings.');
    }
    if (new Set(options.choices).size !== options.choices.length) fail(`choices must be distinct (${options.choices.join(', ')}).`);
  }
  if (options.defaultChoice !== undefined && options.choices !== undefined && !options.choices.includes(options.defaultChoice)) {
    fail(`defaultChoice "${options.defaultChoice}" is not one of the choices (${options.choices.join(', ')}).`);
  }
}
