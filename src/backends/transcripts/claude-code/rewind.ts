import type { SystemBlock } from '../../../conversation/index.js';
import { systemBlock } from './blocks.js';
import type { AbandonedBranch } from './thread.js';

/**
 * The `system` block a rewind leaves at its fork: the abandoned branch's blocks are kept in its data,
 * and a branch that had partly left the window names the record where the emitted part starts.
 */
export function rewindBlock(branch: AbandonedBranch, forkUuid: string, id: string, at: number): SystemBlock {
  const abandonedBlocks = branch.blocks.map((event) => event.block);
  const { emittedFrom } = branch;
  const block = systemBlock(
    'info',
    `Rewound: the conversation continues from an earlier point; ${abandonedBlocks.length} block(s) of the abandoned branch are kept in this block's data${
      emittedFrom !== undefined ? `, and the blocks from record ${emittedFrom} up to here belong to it too` : ''
    }.`,
    at,
    {
      kind: 'rewind',
      forkUuid,
      abandonedBlocks,
      ...(emittedFrom !== undefined ? { abandonedEmittedFromRecord: emittedFrom } : {}),
    },
  );
  block.id = id;
  return block;
}
