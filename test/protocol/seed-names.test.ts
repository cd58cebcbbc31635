import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { DraftStatusSchema, methods, notifications, RpcErrorCode } from '../../src/protocol/index.js';

/**
 * Seed 000's tables (copied verbatim into the fixture) against Parley's wire schemas: a client
 * written against the seed must find every field it reads under the seed's name, optional where
 * the seed marks it `?` and present otherwise. Parley may send more fields beside them.
 */
const tables = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'seeds', '000-wire-tables.md'), 'utf8');

interface Field {
  name: string;
  optional: boolean;
}

/** `{ sessionId, session? }` → fields. */
function fields(cell: string): Field[] {
  const inner = cell.trim().replace(/^`\{/, '').replace(/\}`$/, '').trim();
  if (inner === '') return [];
  return inner.split(',').map((part) => {
    const name = part.trim();
    return name.endsWith('?') ? { name: name.slice(0, -1), optional: true } : { name, optional: false };
  });
}

/** Rows of the tables whose first cell is a method or notification name in backticks. */
function rows(): Array<{ name: string; cells: string[] }> {
  return tables
    .split('\n')
    .filter((line) => /^\| `[a-z_]+` \|/.test(line))
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return { name: cells[0]!.replaceAll('`', ''), cells: cells.slice(1) };
    });
}

function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  if (!shape) throw new Error('expected an object schema');
  return shape;
}

function expectFields(schema: z.ZodType, expected: Field[], where: string): void {
  const shape = shapeOf(schema);
  for (const field of expected) {
    const property = shape[field.name];
    expect(property, `${where} has no field "${field.name}"`).toBeDefined();
    expect(property!.safeParse(undefined).success, `${where}.${field.name} optional`).toBe(field.optional);
  }
}

const methodRows = rows().filter((row) => row.name in methods);
const notificationRows = rows().filter((row) => row.name in notifications);

describe("seed 000's names on the wire", () => {
  it('reads every method and notification of the seed from its tables', () => {
    expect(methodRows.map((row) => row.name).sort()).toEqual(['draft', 'get_draft_status', 'submit_prompt', 'undraft']);
    expect(notificationRows.map((row) => row.name).sort()).toEqual(['context_compacted', 'draft_status']);
  });

  it.each(methodRows)('method $name takes and answers with the seed’s field names', ({ name, cells }) => {
    const spec = methods[name as keyof typeof methods];
    const params = fields(cells[0]!);
    if (params.length === 0) expect(spec.params.safeParse({}).success, `${name} takes {}`).toBe(true);
    else expectFields(spec.params, params, `${name} params`);
    if (cells[1]) expectFields(spec.result, fields(cells[1]), `${name} result`);
  });

  it.each(notificationRows)('notification $name carries the seed’s field names', ({ name, cells }) => {
    expectFields(notifications[name as keyof typeof notifications].params, fields(cells[0]!), name);
  });

  it("get_draft_status's session is seed 000's DraftSession under its own names", () => {
    const block = /type DraftSession = \{([\s\S]*?)\n\};/.exec(tables)?.[1];
    expect(block).toBeDefined();
    const names = [...block!.matchAll(/^\s+(\w+): /gm)].map((match) => match[1]!);
    expect(names).toEqual([
      'sessionId',
      'role',
      'taskSlug',
      'taskDir',
      'channelId',
      'startedAt',
      'lastActivityAt',
      'turnCount',
      'status',
      'cumulativeCostUsd',
      'lastInputTokens',
      'lastOutputTokens',
      'contextWindow',
      'maxOutputTokens',
    ]);
    expectFields(
      DraftStatusSchema,
      names.map((name) => ({ name, optional: false })),
      'get_draft_status session',
    );
    const session = shapeOf(methods.get_draft_status.result)['session']!;
    expect(session.safeParse(undefined).success).toBe(true);
  });

  it('keeps the seed’s error codes', () => {
    const codes = [...tables.matchAll(/^\| `(-\d+)` \| (.+) \|$/gm)].map((match) => Number(match[1]));
    expect(codes).toEqual([-32004, -32005]);
    expect(RpcErrorCode.DRAFT_ALREADY_ACTIVE).toBe(-32004);
    expect(RpcErrorCode.NO_ACTIVE_DRAFT).toBe(-32005);
  });
});
