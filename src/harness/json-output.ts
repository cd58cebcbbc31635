import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';

/**
 * JSON values found in a model's text, most likely first: the whole text, then fenced code blocks
 * (last first: models put the answer after their reasoning), then balanced `{…}` / `[…]` spans
 * (last first). Only candidates that parse are returned.
 */
export function extractJsonCandidates(text: string): unknown[] {
  const found: unknown[] = [];
  const seen = new Set<string>();
  const tryParse = (candidate: string): void => {
    const trimmed = candidate.trim();
    if (trimmed === '' || seen.has(trimmed)) return;
    seen.add(trimmed);
    try {
      found.push(JSON.parse(trimmed) as unknown);
    } catch {
      // not JSON: the next candidate may be
    }
  };
  tryParse(text);
  const fences = [...text.matchAll(/```(?:json|JSON)?[^\S\n]*\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  for (const fence of fences.reverse()) tryParse(fence);
  for (const span of balancedSpans(text).reverse()) tryParse(span);
  return found;
}

/** Top-level `{…}` and `[…]` spans, respecting strings and escapes. */
function balancedSpans(text: string): string[] {
  const spans: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"' && depth > 0) inString = true;
    else if (char === '{' || char === '[') {
      if (depth === 0) start = index;
      depth += 1;
    } else if ((char === '}' || char === ']') && depth > 0) {
      depth -= 1;
      if (depth === 0 && start >= 0) spans.push(text.slice(start, index + 1));
    }
  }
  return spans;
}

export type ParsedOutput<T> = { ok: true; value: T } | { ok: false; issues: string };

/** The first JSON candidate in `text` that the schema accepts, or why none did. */
export function parseOutput<T>(text: string, schema: z.ZodType<T>): ParsedOutput<T> {
  const candidates = extractJsonCandidates(text);
  if (candidates.length === 0) return { ok: false, issues: 'the output contains no JSON value' };
  let firstIssues: string | undefined;
  for (const candidate of candidates) {
    const parsed = schema.safeParse(candidate);
    if (parsed.success) return { ok: true, value: parsed.data };
    firstIssues ??= describeIssues(parsed.error.issues);
  }
  return { ok: false, issues: firstIssues ?? 'no JSON value matched' };
}

/** JSON Schema of a zod schema, for back ends that constrain output; undefined when zod cannot express it. */
export function toJsonSchema(schema: z.ZodType): Record<string, unknown> | undefined {
  try {
    return z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
