import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';
import { DraftError } from './errors.js';

/**
 * Structured output of autonomous workers: the final answer must be JSON matching the schema the
 * dispatcher gave. Models wrap JSON in prose or code fences, so the answer is looked for, then
 * validated; a failure gets one repair attempt with the issues spelled out.
 */

export interface OutputValidator {
  schema: Record<string, unknown>;
  validate(text: string): { ok: true; value: unknown } | { ok: false; problem: string };
}

/** Compiles a JSON Schema once; INVALID_INPUT naming the problem when it cannot be used. */
export function compileOutputSchema(schema: Record<string, unknown>): OutputValidator {
  let validator: z.ZodType;
  try {
    validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    throw new DraftError(
      'INVALID_INPUT',
      `The output schema cannot be used: ${error instanceof Error ? error.message : String(error)}. Give a self-contained JSON Schema (no external $ref).`,
      {
        fault: 'model',
        data: { schema },
      },
    );
  }
  return {
    schema,
    validate(text) {
      const candidates = jsonCandidates(text);
      if (candidates.length === 0) return { ok: false, problem: 'the answer contains no JSON value' };
      let problem = '';
      for (const candidate of candidates) {
        const parsed = validator.safeParse(candidate);
        if (parsed.success) return { ok: true, value: parsed.data };
        problem ||= describeIssues(parsed.error.issues);
      }
      return { ok: false, problem };
    },
  };
}

/** JSON values found in a model's answer: the whole text, fenced blocks, then the outermost `{…}` or `[…]`. */
export function jsonCandidates(text: string): unknown[] {
  const found: unknown[] = [];
  const tried = new Set<string>();
  const tryParse = (candidate: string): void => {
    if (tried.has(candidate)) return;
    tried.add(candidate);
    try {
      found.push(JSON.parse(candidate));
    } catch {
      // not JSON; try the next candidate
    }
  };
  tryParse(text.trim());
  for (const match of text.matchAll(/```(?:json|JSON)?\s*\n([\s\S]*?)```/g)) tryParse(match[1]!.trim());
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = text.indexOf(open);
    const end = text.lastIndexOf(close);
    if (start !== -1 && end > start) tryParse(text.slice(start, end + 1));
  }
  return found;
}

/** What a worker is told about the answer format (its system prompt or instructions). */
export function outputInstructions(schema: Record<string, unknown>): string {
  return [
    'When you have finished, answer with one JSON value and nothing else, matching this JSON Schema:',
    '```json',
    JSON.stringify(schema, null, 2),
    '```',
  ].join('\n');
}

/** The one repair attempt: self-contained, so it works on a fresh session of any back end. */
export function repairPrompt(options: {
  task: string;
  answer: string;
  problem: string;
  schema: Record<string, unknown>;
}): string {
  return [
    'Your previous answer to the task below did not match the required output format.',
    `Problem: ${options.problem}.`,
    '',
    'Task:',
    options.task,
    '',
    'Your previous answer:',
    options.answer.length > 20_000 ? `${options.answer.slice(0, 20_000)}…` : options.answer,
    '',
    outputInstructions(options.schema),
  ].join('\n');
}
