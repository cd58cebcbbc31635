import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import { describeIssues, ParleyError } from '../../conversation/index.js';
import type { ScriptedBackendOptions } from './scripted-backend.js';
import type { ScriptedTurn, ScriptStep } from './script.js';

/**
 * Scripts as JSON files, for a scripted back end in a process a test does not control (e.g.
 * `PARLEY_SCRIPTED_SCRIPT=turns.json parley serve`). The steps are the `step` helpers' shapes,
 * plus `delay` (a pause of `ms`, cut short by an abort), which makes a turn slow:
 *
 * ```json
 * { "turns": [[{ "type": "text", "text": "Half an answer" }, { "type": "delay", "ms": 30000 }, { "type": "text", "text": "the rest" }]],
 *   "defaultTurn": [{ "type": "text", "text": "Done." }] }
 * ```
 * Without `defaultTurn`, turns after the script echo the prompt (the back end's default).
 */
const Usage = z.strictObject({
  inputTokens: z.number().nonnegative().optional(),
  outputTokens: z.number().nonnegative().optional(),
  cacheReadTokens: z.number().nonnegative().optional(),
  cacheWriteTokens: z.number().nonnegative().optional(),
});

type FileStep =
  | { type: 'text'; text: string; chunks?: string[] | undefined }
  | { type: 'thinking'; text: string; redacted?: boolean | undefined }
  | {
      type: 'tool';
      name: string;
      input?: unknown;
      output?: string | undefined;
      isError?: boolean | undefined;
      toolUseId?: string | undefined;
    }
  | { type: 'subagent'; name: string; input: string; steps: FileStep[]; output?: string | undefined }
  | { type: 'usage'; usage: z.infer<typeof Usage> }
  | { type: 'cost'; costUsd: number }
  | {
      type: 'error';
      message: string;
      advice?: string | undefined;
      code?: string | undefined;
      retryable?: boolean | undefined;
    }
  | { type: 'delay'; ms: number };

export const ScriptFileStepSchema: z.ZodType<FileStep> = z.lazy(() =>
  z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('text'), text: z.string(), chunks: z.array(z.string()).optional() }),
    z.strictObject({ type: z.literal('thinking'), text: z.string(), redacted: z.boolean().optional() }),
    z.strictObject({
      type: z.literal('tool'),
      name: z.string().min(1),
      input: z.unknown().optional(),
      output: z.string().optional(),
      isError: z.boolean().optional(),
      toolUseId: z.string().optional(),
    }),
    z.strictObject({
      type: z.literal('subagent'),
      name: z.string().min(1),
      input: z.string(),
      steps: z.array(ScriptFileStepSchema),
      output: z.string().optional(),
    }),
    z.strictObject({ type: z.literal('usage'), usage: Usage }),
    z.strictObject({ type: z.literal('cost'), costUsd: z.number().nonnegative() }),
    z.strictObject({
      type: z.literal('error'),
      message: z.string(),
      advice: z.string().optional(),
      code: z.string().optional(),
      retryable: z.boolean().optional(),
    }),
    z.strictObject({ type: z.literal('delay'), ms: z.number().int().nonnegative().max(3_600_000) }),
  ]),
);

export const ScriptFileSchema = z.strictObject({
  turns: z.array(z.array(ScriptFileStepSchema)).default([]),
  defaultTurn: z.array(ScriptFileStepSchema).optional(),
});
export type ScriptFile = z.infer<typeof ScriptFileSchema>;

export class ScriptFileError extends ParleyError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('INVALID_SCRIPT', message, { fault: 'user', ...options });
  }
}

/** A pause that starts when the turn reaches it (not when the script is read). */
function delay(ms: number): PromiseLike<void> {
  return {
    then(onFulfilled, onRejected) {
      return new Promise<void>((resolve) => setTimeout(resolve, ms).unref()).then(onFulfilled, onRejected);
    },
  };
}

function toSteps(steps: readonly FileStep[]): ScriptStep[] {
  return steps.map((item): ScriptStep => {
    switch (item.type) {
      case 'delay':
        return { type: 'wait', until: delay(item.ms) };
      case 'subagent':
        return {
          type: 'subagent',
          name: item.name,
          input: item.input,
          steps: toSteps(item.steps),
          ...(item.output !== undefined ? { output: item.output } : {}),
        };
      case 'tool':
        return {
          type: 'tool',
          name: item.name,
          input: item.input ?? {},
          ...(item.output !== undefined ? { output: item.output } : {}),
          ...(item.isError !== undefined ? { isError: item.isError } : {}),
          ...(item.toolUseId !== undefined ? { toolUseId: item.toolUseId } : {}),
        };
      default:
        return JSON.parse(JSON.stringify(item)) as ScriptStep;
    }
  });
}

/** Scripted back-end options from a parsed script file; `source` names it in errors. */
export function scriptedOptionsFromJson(
  value: unknown,
  source = 'the script',
): Pick<ScriptedBackendOptions, 'turns' | 'defaultTurn'> {
  const parsed = ScriptFileSchema.safeParse(value);
  if (!parsed.success)
    throw new ScriptFileError(
      `${source} is not a valid scripted back-end script: ${describeIssues(parsed.error.issues)}.`,
    );
  // Each turn is built when it is played, so its delays start then.
  const turns: ScriptedTurn[] = parsed.data.turns.map((steps) => () => toSteps(steps));
  const fallback = parsed.data.defaultTurn;
  return { turns, ...(fallback ? { defaultTurn: () => toSteps(fallback) } : {}) };
}

/** Reads a script file (JSON) for `createScriptedBackend`. */
export async function loadScriptFile(path: string): Promise<Pick<ScriptedBackendOptions, 'turns' | 'defaultTurn'>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ScriptFileError(`Could not read the scripted back-end script ${path}: ${String(error)}.`, {
      cause: error,
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ScriptFileError(
      `The scripted back-end script ${path} is not JSON: ${error instanceof Error ? error.message : String(error)}.`,
      { cause: error },
    );
  }
  return scriptedOptionsFromJson(value, path);
}
