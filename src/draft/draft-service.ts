import type { DraftService, DraftServiceOptions } from './contract.js';
import { DraftError } from './errors.js';

/** Opens the draft layer over a SessionManager and a project folder. */
export function createDraftService(options: DraftServiceOptions): Promise<DraftService> {
  void options;
  // Placeholder while the implementation lands; the signature is the contract.
  return Promise.reject(new DraftError('UNSUPPORTED', 'createDraftService is not implemented yet.', { fault: 'system' }));
}
