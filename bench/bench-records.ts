import { FORMAT_VERSION, type SessionRecord } from '../src/store/index.js';

/** A realistic session record for the store benches: types, statuses, scopes and agent types vary with `index`. */
export function benchRecord(sessionId: string, index = 0): SessionRecord {
  return {
    formatVersion: FORMAT_VERSION,
    sessionId,
    type: index % 3 === 0 ? 'claude-sdk' : 'anthropic-api',
    agentProfileReference: 'profiles/dev.json',
    status: index % 10 === 0 ? 'archived' : 'active',
    agentType: ['pm', 'dev', 'qa'][index % 3]!,
    scope: { kind: 'task', featureId: `feature-${index % 50}`, taskId: `task-${index % 500}`, taskState: 'dev' },
    title: `Session ${index}`,
    createdAt: 1_700_000_000_000 + index,
    updatedAt: 1_700_000_000_000 + index,
    settings: { tokenBudget: 100_000 },
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
  };
}
