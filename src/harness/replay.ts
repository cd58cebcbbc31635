import type { UnsequencedEvent } from '../conversation/index.js';
import type { AgentBackend, AgentTurn } from '../backends/index.js';
import type { SessionManager } from '../sessions/index.js';
import { startInteractive } from './define.js';
import { HarnessError, ReplayDivergenceError, truncate } from './errors.js';
import type { SessionEvent } from './events.js';
import {
  loadRecording,
  type RecordedEvent,
  type RecordedInput,
  type RecordedTurn,
  type Recording,
} from './recording.js';
import { HarnessRuntime, type AnyHarnessDefinition } from './runtime.js';
import type { AgentMap, Harness, SessionResult } from './types.js';

/** Options of `replay`: where the replayed agents' sessions go, and how a divergence is handled. */
export interface ReplayOptions {
  /** Where the replayed agents' sessions go; default a fresh memory store. */
  sessionManager?: SessionManager;
  /**
   * Milliseconds the run may sit still while it waits on the recording (an agent turn, a prompt)
   * before the replay fails as diverged. Default 5000.
   */
  stallTimeoutMs?: number;
  /** Sees every event of the replayed run as it happens (to show it). */
  on?: (event: SessionEvent) => void;
}

/**
 * Re-runs `harness` from a recording, with no back end and no user: agents play their recorded
 * turns, and replies, messages, timeouts, pauses and aborts come from the recording at the step
 * where they happened. Every event the run produces is compared with the recording; the first
 * that differs fails the replay with ReplayDivergenceError, which names the step, what was expected
 * and what happened. Resolves with the run's result; a run whose recording ended in an error
 * rejects with that error, as the recorded run did.
 *
 * Events are compared per lane: the main line of the workflow, each `parallel` branch, each
 * prompt, and the user's own actions. Order within a lane must match exactly; lanes may
 * interleave differently, since that is scheduling, not behaviour.
 */
export async function replay<TAgents extends AgentMap, TInput, TState, TResult>(
  recording: string | Recording,
  harness: Harness<TAgents, TInput, TState, TResult>,
  input?: TInput,
  options: ReplayOptions = {},
): Promise<SessionResult<TState, TResult>> {
  const loaded = typeof recording === 'string' ? loadRecording(recording) : recording;
  if (loaded.header.harness !== harness.name) {
    throw new HarnessError(
      'INVALID_RECORDING',
      `The recording is of the "${loaded.header.harness}" workflow, not "${harness.name}". Replay it with the harness that made it.`,
      {
        fault: 'user',
        data: { recorded: loaded.header.harness, harness: harness.name },
      },
    );
  }
  const driver = new ReplayDriver(loaded, options.stallTimeoutMs ?? 5000);
  const backends: Record<string, AgentBackend> = {};
  for (const key of Object.keys(harness.agents)) backends[key] = driver.backendFor(key);
  const runInput = (input === undefined ? loaded.header.input : input) as TInput;
  const definition = harness.definition as unknown as AnyHarnessDefinition;
  const state = definition.state ? definition.state(runInput) : {};
  const runtime = new HarnessRuntime(definition, runInput, state, {
    backends,
    ...(options.sessionManager ? { sessionManager: options.sessionManager } : {}),
  });
  const session = startInteractive<TState, TResult>(runtime, {}, (prepared) => {
    prepared.armTimers = false;
    driver.attach(prepared);
    if (options.on) prepared.log.on('*', options.on);
  });
  let result: SessionResult<TState, TResult>;
  try {
    result = await session.complete();
  } catch (error) {
    driver.finish();
    throw driver.divergence ?? error;
  }
  driver.finish();
  if (driver.divergence) throw driver.divergence;
  return result;
}

const VOLATILE_KEYS = new Set([
  'timestamp',
  'duration',
  'durationMs',
  'durationApiMs',
  'sessionId',
  'seq',
  'at',
  'createdAt',
  'updatedAt',
  'completedAt',
]);

interface Gate {
  position: number;
  resolve: () => void;
}

/** Feeds a run from a recording and checks every event it produces against it. */
class ReplayDriver {
  divergence: ReplayDivergenceError | undefined;
  private readonly lanes = new Map<string, RecordedEvent[]>();
  private readonly inputs: RecordedInput[];
  private nextInput = 0;
  private readonly turns = new Map<string, RecordedTurn[]>();
  private readonly gates = new Set<Gate>();
  private runtime: HarnessRuntime | undefined;
  private watchdog: ReturnType<typeof setTimeout> | undefined;
  private finished = false;

  constructor(
    private readonly recording: Recording,
    private readonly stallTimeoutMs: number,
  ) {
    for (const entry of recording.events) {
      const lane = laneOf(entry.event as unknown as SessionEvent);
      const list = this.lanes.get(lane) ?? [];
      list.push(entry);
      this.lanes.set(lane, list);
    }
    this.inputs = recording.inputs
      .map((input, order) => ({ input, order }))
      .sort((a, b) => a.input.at - b.input.at || a.order - b.order)
      .map(({ input }) => input);
    for (const turn of [...recording.turns].sort((a, b) => a.turn - b.turn)) {
      const list = this.turns.get(turn.agent) ?? [];
      list.push(turn);
      this.turns.set(turn.agent, list);
    }
  }

  get stopped(): boolean {
    return this.divergence !== undefined;
  }

  attach(runtime: HarnessRuntime): void {
    this.runtime = runtime;
    runtime.log.hook('before', (event, index) => this.check(event, index));
    runtime.log.hook('after', (_event, _index, dispatched) => this.advance(dispatched));
    // Actions taken before the first event (a `send` right after startSession) happen first.
    runtime.observers.push({ start: () => this.advance(0) });
  }

  /** The agent's back end during replay: plays its recorded turns, each event at its recorded step. */
  backendFor(agent: string): AgentBackend {
    const name = this.recording.header.agents[agent]?.backend ?? 'replay';
    let started = 0;
    return {
      describe: () => ({ name, continuity: 'managed', models: [], summary: 'Plays turns from a Parley recording.' }),
      execute: (): AgentTurn => {
        started += 1;
        const recorded = this.turns.get(agent)?.shift();
        if (!recorded) {
          const have = started - 1;
          this.fail(
            new ReplayDivergenceError(
              this.runtime?.log.dispatched ?? 0,
              `agent "${agent}" started turn ${started}, but the recording has ${have === 0 ? 'no turns' : `only ${have} turn(s)`} for it.`,
              undefined,
              { agent, turn: started },
            ),
          );
          return {
            events: (async function* (): AsyncGenerator<UnsequencedEvent> {})(),
            inject: () => Promise.resolve(),
          };
        }
        const driver = this;
        async function* events(): AsyncGenerator<UnsequencedEvent> {
          for (let index = 0; index < recorded!.events.length; index++) {
            await driver.gate(recorded!.positions[index]!);
            if (driver.stopped) return;
            yield recorded!.events[index] as UnsequencedEvent;
          }
        }
        return { events: events(), inject: () => Promise.resolve() };
      },
    };
  }

  /** Resolves once `position` events have been dispatched (or the replay stopped). */
  private gate(position: number): Promise<void> {
    if (this.stopped || (this.runtime?.log.dispatched ?? 0) >= position) return Promise.resolve();
    return new Promise((resolve) => {
      this.gates.add({ position, resolve });
      this.armWatchdog();
    });
  }

  private check(event: SessionEvent, index: number): void {
    if (this.stopped || this.finished) return;
    const lane = laneOf(event);
    const queue = this.lanes.get(lane);
    const expected = queue?.[0];
    if (!expected) {
      this.fail(
        new ReplayDivergenceError(
          index,
          `the run produced ${describeEvent(event)} in ${lane}, where the recording has nothing more.${this.nextRecorded(index)}`,
          undefined,
          normalize(event),
        ),
      );
      return;
    }
    const difference = firstDifference(normalize(expected.event), normalize(event), '');
    if (difference !== undefined) {
      this.fail(
        new ReplayDivergenceError(
          expected.index,
          `expected ${describeEvent(expected.event as unknown as SessionEvent)} but the run produced ${describeEvent(event)} (${difference}).`,
          normalize(expected.event),
          normalize(event),
        ),
      );
      return;
    }
    queue!.shift();
  }

  private nextRecorded(index: number): string {
    const next = this.recording.events[index];
    return next ? ` The recording continues there with ${describeEvent(next.event as unknown as SessionEvent)}.` : '';
  }

  /** The recorded events not matched yet, oldest first (each lane's next one). */
  private oldestExpected(): RecordedEvent | undefined {
    return [...this.lanes.values()]
      .flatMap((queue) => (queue[0] ? [queue[0]] : []))
      .sort((a, b) => a.index - b.index)[0];
  }

  private stillExpected(): string {
    const heads = [...this.lanes.values()]
      .flatMap((queue) => (queue[0] ? [queue[0]] : []))
      .sort((a, b) => a.index - b.index);
    if (heads.length === 0) return 'nothing more';
    return heads
      .slice(0, 3)
      .map((entry) => `${describeEvent(entry.event as unknown as SessionEvent)} (step ${entry.index})`)
      .join(', ');
  }

  private advance(dispatched: number): void {
    if (this.stopped) return;
    while (this.nextInput < this.inputs.length && this.inputs[this.nextInput]!.at <= dispatched && !this.stopped) {
      this.deliver(this.inputs[this.nextInput++]!);
    }
    for (const gate of [...this.gates]) {
      if (gate.position <= dispatched) {
        this.gates.delete(gate);
        gate.resolve();
      }
    }
    this.armWatchdog();
  }

  private deliver(input: RecordedInput): void {
    const runtime = this.runtime!;
    try {
      switch (input.action) {
        case 'reply':
          runtime.reply(input.promptId, {
            ...(input.content !== undefined ? { content: input.content } : {}),
            ...(input.choice !== undefined ? { choice: input.choice } : {}),
          });
          break;
        case 'timeout':
          if (!runtime.timeoutPrompt(input.promptId)) throw new Error(`prompt ${input.promptId} is not waiting`);
          break;
        case 'send':
          runtime.send(input.content);
          break;
        case 'send_to':
          runtime.send(input.content, input.agent);
          break;
        case 'abort':
          runtime.abort(input.reason);
          break;
        case 'pause':
          runtime.pause();
          break;
        case 'resume':
          runtime.resume();
          break;
      }
    } catch (error) {
      this.fail(
        new ReplayDivergenceError(
          input.at,
          `the recorded ${input.action} could not be replayed: ${error instanceof Error ? error.message : String(error)}`,
          input,
          undefined,
        ),
      );
    }
  }

  /** Something the run waits for can only come from the recording. */
  private waitingOnRecording(): boolean {
    const runtime = this.runtime;
    if (!runtime || runtime.finished) return false;
    return this.gates.size > 0 || runtime.pendingPrompts().length > 0 || runtime.status === 'paused';
  }

  private armWatchdog(): void {
    if (this.watchdog || this.stopped || this.finished || !this.waitingOnRecording()) return;
    const seen = this.runtime!.log.dispatched;
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      if (this.stopped || this.finished || !this.waitingOnRecording()) return;
      const now = this.runtime!.log.dispatched;
      if (now !== seen) {
        this.armWatchdog();
        return;
      }
      this.fail(
        new ReplayDivergenceError(
          now,
          `the run produced no event for ${this.stallTimeoutMs} ms while it waited on the recording, which still expects ${this.stillExpected()}. The run has fewer events before this point than the recording.`,
          this.oldestExpected()?.event,
          undefined,
        ),
      );
    }, this.stallTimeoutMs);
  }

  fail(error: ReplayDivergenceError): void {
    if (this.divergence || this.finished) return;
    this.divergence = error;
    for (const gate of this.gates) gate.resolve();
    this.gates.clear();
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    this.runtime?.abort(`the replay diverged from the recording at step ${error.step}`);
  }

  /** After the run: whatever the recording still holds is a divergence. */
  finish(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    if (this.divergence) {
      this.finished = true;
      return;
    }
    const leftovers = [...this.lanes.values()].flat().sort((a, b) => a.index - b.index);
    const first = leftovers[0];
    if (first) {
      this.fail(
        new ReplayDivergenceError(
          first.index,
          `the run ended, but the recording continues with ${describeEvent(first.event as unknown as SessionEvent)}${leftovers.length > 1 ? ` and ${leftovers.length - 1} more event(s)` : ''}.`,
          normalize(first.event),
          undefined,
        ),
      );
    } else if (this.nextInput < this.inputs.length) {
      const input = this.inputs[this.nextInput]!;
      this.fail(
        new ReplayDivergenceError(
          input.at,
          `the run ended before the recorded ${input.action} at this step could be replayed.`,
          input,
          undefined,
        ),
      );
    }
    this.finished = true;
  }
}

/** Which lane an event belongs to: prompts and user actions have their own; the rest follow their branch. */
function laneOf(event: SessionEvent): string {
  switch (event.type) {
    case 'user:prompt':
    case 'user:reply':
    case 'user:reply-rejected':
    case 'user:timeout':
      return `prompt ${event.promptId}`;
    case 'message:injected':
    case 'session:abort':
    case 'session:paused':
    case 'session:resumed':
      return "the user's actions";
    default:
      return event.branch !== undefined ? `parallel branch ${event.branch}` : 'the main line of the workflow';
  }
}

function describeEvent(event: SessionEvent): string {
  const record = event as unknown as Record<string, unknown>;
  const parts: string[] = [String(event.type)];
  for (const key of ['agent', 'turn', 'name', 'id', 'promptId'] as const) {
    if (record[key] !== undefined) parts.push(`${key}=${JSON.stringify(record[key])}`);
  }
  if (event.type === 'agent:event') parts.push(`event=${event.event.type}`);
  return `"${parts.join(' ')}"`;
}

/** A JSON copy without the fields that differ from run to run (times, durations, session ids, log numbers). */
function normalize(value: unknown): unknown {
  const json = JSON.parse(JSON.stringify(value ?? null)) as unknown;
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (typeof node !== 'object' || node === null) return node;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node)) if (!VOLATILE_KEYS.has(key)) out[key] = strip(child);
    return out;
  };
  return strip(json);
}

/** Where two JSON values first differ, as `at <path>: expected …, got …`; undefined when equal. */
function firstDifference(expected: unknown, actual: unknown, path: string): string | undefined {
  if (Object.is(expected, actual)) return undefined;
  const where = path === '' ? 'the event' : path;
  if (typeof expected !== typeof actual || expected === null || actual === null || typeof expected !== 'object') {
    return `at ${where}: expected ${show(expected)}, got ${show(actual)}`;
  }
  if (Array.isArray(expected) !== Array.isArray(actual))
    return `at ${where}: expected ${show(expected)}, got ${show(actual)}`;
  const a = expected as Record<string, unknown>;
  const b = actual as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const key of keys) {
    const difference = firstDifference(a[key], b[key], path === '' ? key : `${path}.${key}`);
    if (difference !== undefined) return difference;
  }
  return undefined;
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  return truncate(JSON.stringify(value), 160);
}
