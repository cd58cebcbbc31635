/**
 * Writes docs/protocol.md from the protocol schemas: `npx tsx scripts/generate-protocol-docs.ts`.
 * test/protocol/reference.test.ts fails when the committed file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderProtocolReference } from '../src/protocol/index.js';

const target = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'protocol.md');
writeFileSync(target, renderProtocolReference());
console.log(`wrote ${target}`);
