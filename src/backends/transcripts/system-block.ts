import type { SystemBlock, SystemBlockSubtype } from '../../conversation/index.js';

/** A completed system block of a parsed transcript, with `data` only when there is some. */
export function systemBlock(
  id: string,
  subtype: SystemBlockSubtype,
  content: string,
  at: number,
  data?: unknown,
): SystemBlock {
  return {
    type: 'system',
    id,
    createdAt: at,
    completedAt: at,
    subtype,
    content,
    ...(data !== undefined ? { data } : {}),
  };
}
