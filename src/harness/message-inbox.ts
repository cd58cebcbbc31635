import { HarnessError } from './errors.js';
import type { InjectedMessage, UnstampedSessionEvent } from './events.js';
import type { UnstampedRecordedInput } from './recording.js';

/** An agent as the inbox sees it: a key, and a running turn that may take a message now. */
export interface MessageRecipient {
  readonly key: string;
  /** Delivers to the running turn; false when no turn runs or its back end cannot take a message mid-turn. */
  deliverLive(message: InjectedMessage): boolean;
}

/** What the inbox needs from the run. */
export interface MessageHost {
  readonly name: string;
  readonly finished: boolean;
  /** Appends an event with the given branch (the user's messages have none). */
  emit(unstamped: UnstampedSessionEvent, branch: string | undefined): number;
  /** Tells the run's observers about an outside action, before it takes effect. */
  notify(input: UnstampedRecordedInput): void;
  /** The agent by key or name; throws `UNKNOWN_AGENT`. */
  findAgent(name: string): MessageRecipient;
}

interface WaitingMessage {
  message: InjectedMessage;
  /** The agent whose next turn takes it; undefined: the next turn of any agent. */
  agent?: string;
}

/**
 * Routes the user's messages in an interactive run: to the turn running now when its back end takes
 * messages mid-turn, else into the inbox, where the named agent's (or any agent's) next turn takes
 * them. Each message is announced to the observers before it is routed: it is one of the run's
 * non-deterministic inputs.
 */
export class MessageInbox {
  private waiting: WaitingMessage[] = [];
  /** Agents with a turn in flight, in the order they started; an untargeted message goes to the latest. */
  private readonly running: MessageRecipient[] = [];

  constructor(private readonly host: MessageHost) {}

  /** Checks a message as `send` would, changing nothing; returns the target agent's key. */
  check(content: string, agentName?: string): string | undefined {
    if (typeof content !== 'string' || content.trim() === '') {
      throw new HarnessError('INVALID_INPUT', 'A message must be non-empty text.', { fault: 'user' });
    }
    if (this.host.finished)
      throw new HarnessError(
        'SESSION_ENDED',
        `The "${this.host.name}" session has ended; messages can no longer reach it.`,
        { fault: 'user' },
      );
    return agentName === undefined ? undefined : this.host.findAgent(agentName).key;
  }

  /** `send` (no agent) and `sendTo` (an agent's key or name); `timestamp` is a journaled message's own. */
  send(content: string, agentName?: string, timestamp = new Date()): void {
    this.check(content, agentName);
    const target = agentName === undefined ? undefined : this.host.findAgent(agentName);
    this.host.notify(target ? { action: 'send_to', agent: target.key, content } : { action: 'send', content });
    const message: InjectedMessage = { content, timestamp, ...(target ? { targetAgent: target.key } : {}) };
    const agent = target ?? this.running[this.running.length - 1];
    if (!agent) {
      this.waiting.push({ message });
      this.host.emit({ type: 'message:injected', content, delivery: 'queue' }, undefined);
      return;
    }
    const live = agent.deliverLive(message);
    if (!live) this.waiting.push({ message, agent: agent.key });
    this.host.emit(
      {
        type: 'message:injected',
        content,
        ...(target ? { targetAgent: target.key } : {}),
        agent: agent.key,
        delivery: live ? 'live' : 'inbox',
      },
      undefined,
    );
  }

  /** A live delivery that failed (the turn ended first): the message waits for the agent's next turn. */
  requeue(agent: MessageRecipient, message: InjectedMessage): void {
    if (this.host.finished) return;
    this.waiting.push({ message, agent: agent.key });
    this.host.emit(
      {
        type: 'message:injected',
        content: message.content,
        ...(message.targetAgent ? { targetAgent: message.targetAgent } : {}),
        agent: agent.key,
        delivery: 'inbox',
      },
      undefined,
    );
  }

  /** The messages waiting for this agent's turn (its own and untargeted ones), in arrival order. */
  takeFor(agentKey: string): InjectedMessage[] {
    const taken: InjectedMessage[] = [];
    const rest: WaitingMessage[] = [];
    for (const entry of this.waiting) {
      if (entry.agent === undefined || entry.agent === agentKey) taken.push(entry.message);
      else rest.push(entry);
    }
    this.waiting = rest;
    return taken;
  }

  /** Removes one waiting message per content given (a replayed turn or read took them), oldest first. */
  takeMatching(contents: readonly string[]): void {
    for (const content of contents) {
      const index = this.waiting.findIndex((entry) => entry.message.content === content);
      if (index >= 0) this.waiting.splice(index, 1);
    }
  }

  hasMessages(): boolean {
    return this.waiting.length > 0;
  }

  /** Every waiting message, whoever it was for (the workflow reads them itself). */
  takeAll(): InjectedMessage[] {
    const taken = this.waiting.map((entry) => entry.message);
    this.waiting = [];
    return taken;
  }

  markRunning(agent: MessageRecipient): void {
    if (!this.running.includes(agent)) this.running.push(agent);
  }

  markStopped(agent: MessageRecipient): void {
    const index = this.running.indexOf(agent);
    if (index >= 0) this.running.splice(index, 1);
  }
}
