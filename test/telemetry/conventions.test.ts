import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { ATTR, METRIC, OPERATION, startAgentTrace } from '../../src/telemetry/index.js';

describe('the GenAI conventions Parley pins', () => {
  it('uses the attribute, operation and metric names of @opentelemetry/semantic-conventions 1.45.0', () => {
    const published = new Set<unknown>(Object.values(incubating));
    for (const name of [...Object.values(ATTR), ...Object.values(METRIC)]) expect(published, name).toContain(name);
    expect(Object.values(OPERATION).sort()).toEqual(
      [
        incubating.GEN_AI_OPERATION_NAME_VALUE_CHAT,
        incubating.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
        incubating.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
        incubating.GEN_AI_OPERATION_NAME_VALUE_INVOKE_WORKFLOW,
      ].sort(),
    );
  });

  it('with no SDK registered, a turn starts no trace (the no-cost path)', () => {
    expect(startAgentTrace({ agentName: 'dev', sessionId: 's', backend: 'scripted' })).toBeUndefined();
  });
});
