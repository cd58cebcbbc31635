import { createTokenizer, TokenCounter } from '../conversation/index.js';
import type { SessionManagerOptions } from './session-manager-types.js';
import { RequestLayer, type RequestLayerOptions } from './session-requests.js';

/** What the manager gives its request layer: its store, clock and resolved budget, its sessions and events. */
export type RequestLayerWiring = Pick<
  RequestLayerOptions,
  | 'store'
  | 'clock'
  | 'tokenBudget'
  | 'compactionThreshold'
  | 'live'
  | 'activeCheckpoint'
  | 'appendEvents'
  | 'updateRecord'
  | 'emit'
>;

/** The request layer (request building, compaction, calibration) a SessionManager's options describe. */
export function createRequestLayer(options: SessionManagerOptions, wiring: RequestLayerWiring): RequestLayer {
  const countTokens = options.countTokens;
  return new RequestLayer({
    ...wiring,
    // A caller's own counter (their model's tokenizer) is used for requests too; the BPE one otherwise.
    counter: new TokenCounter(
      countTokens ? { tokenizer: createTokenizer({ load: async () => countTokens, encoding: 'custom' }) } : {},
    ),
    ...(options.tailTokens !== undefined ? { tailTokens: options.tailTokens } : {}),
    ...(options.projectRoot !== undefined ? { projectRoot: options.projectRoot } : {}),
    ...(options.summarize ? { summarize: options.summarize } : {}),
    ...(options.autoCompact !== undefined ? { autoCompact: options.autoCompact } : {}),
    ...(options.compactInBackground !== undefined ? { compactInBackground: options.compactInBackground } : {}),
    ...(options.agentTypes ? { agentTypes: options.agentTypes } : {}),
    ...(options.agentDescriptions ? { agentDescriptions: options.agentDescriptions } : {}),
    ...(options.context ? { context: options.context } : {}),
    ...(options.compaction ? { compaction: options.compaction } : {}),
  });
}
