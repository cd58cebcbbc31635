import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderProtocolReference } from '../../src/protocol/index.js';

describe('docs/protocol.md', () => {
  it('is what the schemas generate (run `npx tsx scripts/generate-protocol-docs.ts` after changing them)', () => {
    const committed = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'protocol.md'), 'utf8');
    expect(committed === renderProtocolReference()).toBe(true);
  });
});
