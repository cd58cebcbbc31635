import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import * as z from 'zod';
import {
  BlockCompleteEventSchema,
  BlockStartEventSchema,
  BlockUpdateEventSchema,
  describeIssues,
  MetadataUpdateEventSchema,
  TextDeltaEventSchema,
} from '../conversation/index.js';
import { HarnessError } from './errors.js';
import type { SessionEvent } from './events.js';

/**
 * A recording is JSONL: a header line, then one line per event, per user action and per agent turn,
 * in the order they happened. Versioned: a reader refuses versions it does
 * not know, with an error that says so.
 */
export const RECORDING_FORMAT_VERSION = 1;

export const RecordingHeaderSchema = z.object({
  kind: z.literal('header'),
  formatVersion: z.literal(RECORDING_FORMAT_VERSION),
  harness: z.string(),
  /** ISO 8601. */
  createdAt: z.string(),
  /** The harness input, when it is JSON. */
  input: z.unknown().optional(),
  /** Each agent key's name and back end, for people reading the file. */
  agents: z.record(z.string(), z.object({ name: z.string(), backend: z.string() })),
});
/** A recording's first line: its format version, workflow and input. */
export type RecordingHeader = z.infer<typeof RecordingHeaderSchema>;

export const RecordedEventSchema = z.object({
  kind: z.literal('event'),
  /** Position in the session's event log. */
  index: z.number().int().nonnegative(),
  event: z.looseObject({ type: z.string() }),
});
/** One session event as a recording keeps it. */
export type RecordedEvent = z.infer<typeof RecordedEventSchema>;

/** Where an outside action happened: the number of events dispatched before it. */
const At = z.number().int().nonnegative();
export const RecordedInputSchema = z.discriminatedUnion('action', [
  z.object({
    kind: z.literal('input'),
    at: At,
    action: z.literal('reply'),
    promptId: z.string(),
    content: z.string().optional(),
    choice: z.string().optional(),
  }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('timeout'), promptId: z.string() }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('send'), content: z.string() }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('send_to'), agent: z.string(), content: z.string() }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('abort'), reason: z.string().optional() }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('pause') }),
  z.object({ kind: z.literal('input'), at: At, action: z.literal('resume') }),
]);
/** One input a recording keeps: a user's reply or a message sent to an agent. */
export type RecordedInput = z.infer<typeof RecordedInputSchema>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type UnstampedRecordedInput = DistributiveOmit<RecordedInput, 'kind' | 'at'>;

const storeFields = { sessionId: true, seq: true } as const;
const optionalAt = { at: z.number().int().nonnegative().optional() };
export const RecordedStreamEventSchema = z.discriminatedUnion('type', [
  BlockStartEventSchema.omit(storeFields).extend(optionalAt),
  TextDeltaEventSchema.omit(storeFields).extend(optionalAt),
  BlockUpdateEventSchema.omit(storeFields).extend(optionalAt),
  BlockCompleteEventSchema.omit(storeFields).extend(optionalAt),
  MetadataUpdateEventSchema.omit(storeFields).extend(optionalAt),
]);

/** One agent turn's back-end output: the stream events it produced, and where each showed in the event log. */
export const RecordedTurnSchema = z
  .object({
    kind: z.literal('turn'),
    agent: z.string(),
    turn: z.number().int().positive(),
    prompt: z.string(),
    events: z.array(RecordedStreamEventSchema),
    positions: z.array(z.number().int().nonnegative()),
  })
  .refine((turn) => turn.positions.length === turn.events.length, 'positions must have one entry per event');
/** One agent turn as a recording keeps it: the back end's events and output. */
export type RecordedTurn = z.infer<typeof RecordedTurnSchema>;

/** A recorded session: its header, every event, every user reply and every back-end output, for `replay`. */
export interface Recording {
  header: RecordingHeader;
  events: RecordedEvent[];
  inputs: RecordedInput[];
  turns: RecordedTurn[];
}

/** Parses a recording's text; INVALID_RECORDING names the line, UNSUPPORTED_RECORDING_VERSION the version. */
export function parseRecording(text: string, source = 'recording'): Recording {
  const lines = text.split('\n');
  const recording:
    Recording | { header?: RecordingHeader; events: RecordedEvent[]; inputs: RecordedInput[]; turns: RecordedTurn[] } =
    {
      events: [],
      inputs: [],
      turns: [],
    };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.trim();
    if (line === '') continue;
    const lineNumber = index + 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw invalid(source, lineNumber, 'the line is not JSON (the file may be cut short)');
    }
    const kind = (value as { kind?: unknown } | null)?.kind;
    if (recording.header === undefined) {
      if (kind !== 'header')
        throw invalid(source, lineNumber, 'the first line must be the header ({"kind":"header",…})');
      const version = (value as { formatVersion?: unknown }).formatVersion;
      if (version !== RECORDING_FORMAT_VERSION) {
        throw new HarnessError(
          'UNSUPPORTED_RECORDING_VERSION',
          `${source} has recording format version ${JSON.stringify(version)}; this Parley reads version ${RECORDING_FORMAT_VERSION}. Record it again with this version, or use the Parley that wrote it.`,
          { fault: 'user', data: { source, formatVersion: version } },
        );
      }
      recording.header = check(RecordingHeaderSchema, value, source, lineNumber);
      continue;
    }
    switch (kind) {
      case 'event':
        recording.events.push(check(RecordedEventSchema, value, source, lineNumber));
        break;
      case 'input':
        recording.inputs.push(check(RecordedInputSchema, value, source, lineNumber));
        break;
      case 'turn':
        recording.turns.push(check(RecordedTurnSchema, value, source, lineNumber) as RecordedTurn);
        break;
      default:
        throw invalid(source, lineNumber, `unknown line kind ${JSON.stringify(kind)} (expected event, input or turn)`);
    }
  }
  if (recording.header === undefined) throw invalid(source, 1, 'the file is empty');
  recording.events.forEach((entry, position) => {
    if (entry.index !== position)
      throw invalid(
        source,
        undefined,
        `event ${position} is numbered ${entry.index}: events are missing or out of order`,
      );
  });
  return recording as Recording;
}

/** Reads a recording file (JSONL), checking its format version. */
export function loadRecording(path: string): Recording {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new HarnessError('INVALID_RECORDING', `Cannot read the recording ${path}: ${(error as Error).message}.`, {
      fault: 'user',
      cause: error,
    });
  }
  return parseRecording(text, path);
}

function check<T>(schema: z.ZodType<T>, value: unknown, source: string, line: number): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalid(source, line, describeIssues(parsed.error.issues));
  return parsed.data;
}

function invalid(source: string, line: number | undefined, detail: string): HarnessError {
  return new HarnessError(
    'INVALID_RECORDING',
    `${source}${line !== undefined ? `, line ${line}` : ''} is not a valid Parley recording: ${detail}.`,
    {
      fault: 'user',
      data: { source, ...(line !== undefined ? { line } : {}) },
    },
  );
}

/**
 * Writes a recording as the session runs. Lines are written synchronously, in the order the
 * session produced them, so the file is ordered and a crash leaves every line before it intact.
 * The file is opened at once, so a bad path fails `startSession` rather than the end of the run.
 */
export class RecordingWriter {
  private fd: number | undefined;
  private failure: HarnessError | undefined;

  constructor(
    readonly path: string,
    header: Omit<RecordingHeader, 'kind' | 'formatVersion' | 'createdAt'>,
  ) {
    try {
      this.fd = openSync(path, 'w');
    } catch (error) {
      throw new HarnessError(
        'RECORDING_FAILED',
        `Cannot write the recording ${path}: ${(error as Error).message}. Choose a path in a folder that exists and is writable.`,
        {
          fault: 'user',
          cause: error,
        },
      );
    }
    const input = jsonSafe(header.input);
    this.write({
      kind: 'header',
      formatVersion: RECORDING_FORMAT_VERSION,
      harness: header.harness,
      createdAt: new Date().toISOString(),
      ...(input !== undefined ? { input } : {}),
      agents: header.agents,
    });
  }

  /** The first write error, if any: `complete()` reports it. */
  get error(): HarnessError | undefined {
    return this.failure;
  }

  event(index: number, event: SessionEvent): void {
    this.write({ kind: 'event', index, event });
  }

  input(at: number, input: UnstampedRecordedInput): void {
    this.write({ kind: 'input', at, ...input });
  }

  turn(turn: Omit<RecordedTurn, 'kind'>): void {
    this.write({ kind: 'turn', ...turn });
  }

  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      closeSync(fd);
    } catch (error) {
      this.fail(error);
    }
  }

  private write(line: Record<string, unknown>): void {
    if (this.fd === undefined || this.failure) return;
    try {
      writeSync(this.fd, `${JSON.stringify(line)}\n`);
    } catch (error) {
      this.fail(error);
    }
  }

  private fail(error: unknown): void {
    this.failure ??= new HarnessError(
      'RECORDING_FAILED',
      `Writing the recording ${this.path} failed: ${(error as Error).message}. The recording is incomplete.`,
      {
        fault: 'system',
        cause: error,
      },
    );
  }
}

/** The value if it survives a JSON round trip unchanged in kind, else undefined (functions, cycles). */
function jsonSafe(value: unknown): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    return undefined;
  }
}
