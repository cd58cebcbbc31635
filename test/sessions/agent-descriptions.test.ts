import { describe, expect, it } from 'vitest';
import { isParleyError } from '../../src/conversation/index.js';
import {
  BUILT_IN_AGENT_TYPES,
  describeAgent,
  renderAgentDescription,
  type AgentDescriptionOverride,
} from '../../src/sessions/index.js';

describe('agent descriptions', () => {
  it('every built-in agent type has role text, instructions and allowed tools', () => {
    expect(BUILT_IN_AGENT_TYPES).toEqual(['pm', 'dev', 'qa', 'harness', 'merge']);
    for (const type of BUILT_IN_AGENT_TYPES) {
      const description = describeAgent(type);
      expect(description.agentType).toBe(type);
      expect(description.role.length).toBeGreaterThan(50);
      expect(description.instructions.length).toBeGreaterThanOrEqual(4);
      expect(description.allowedTools.length).toBeGreaterThan(0);
    }
    // Only the agents that change code may edit files.
    expect(describeAgent('dev').allowedTools).toContain('Edit');
    expect(describeAgent('qa').allowedTools).not.toContain('Edit');
    expect(describeAgent('pm').allowedTools).toContain('CreateTask');
  });

  it('a role file overrides the role and tools, replaces or extends the instructions', () => {
    const replaced = describeAgent('qa', {
      role: 'You review Rust code.',
      instructions: ['Run cargo test.'],
      allowedTools: ['Read', 'Bash'],
    });
    expect(replaced).toMatchObject({
      role: 'You review Rust code.',
      instructions: ['Run cargo test.'],
      allowedTools: ['Read', 'Bash'],
    });
    const extended = describeAgent('dev', { extraInstructions: ['Never touch generated files.'] });
    expect(extended.instructions.slice(0, -1)).toEqual(describeAgent('dev').instructions);
    expect(extended.instructions.at(-1)).toBe('Never touch generated files.');
  });

  it('a drafted role without a built-in description gets a generic one naming it', () => {
    const description = describeAgent('dotnet-dev', { role: 'You are a .NET developer.' });
    expect(description.role).toBe('You are a .NET developer.');
    expect(describeAgent('product-analyst').role).toBe('You are the product-analyst agent.');
  });

  it('refuses an override with unknown or malformed fields, naming them', () => {
    let error: unknown;
    try {
      describeAgent('dev', { role: '', tools: ['x'] } as unknown as AgentDescriptionOverride);
    } catch (caught) {
      error = caught;
    }
    expect(isParleyError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(/role/);
    expect((error as Error).message).toMatch(/tools/);
  });

  it('renders the # Your Role and ## Instructions, then the tools', () => {
    const text = renderAgentDescription({
      role: 'You are QA.',
      instructions: ['Check everything.', 'Report precisely.'],
      allowedTools: ['Read', 'Bash'],
      toolInstructions: 'Bash runs the checks.',
    });
    expect(text).toBe(
      [
        '# Your Role',
        '',
        'You are QA.',
        '',
        '## Instructions',
        '',
        '- Check everything.',
        '- Report precisely.',
        '',
        '## Tools',
        '',
        'Allowed tools: Read, Bash.',
        'Bash runs the checks.',
      ].join('\n'),
    );
  });

  it('names the tools a request carries instead of its own, and says so when there are none', () => {
    const qa = {
      role: 'You are QA.',
      instructions: [],
      allowedTools: ['Read', 'Bash'],
      toolInstructions: 'Bash runs the checks.',
    };
    const section = (text: string) => text.slice(text.indexOf('## Tools'));
    expect(section(renderAgentDescription(qa, ['Read', 'Bash', 'Write']))).toBe(
      ['## Tools', '', 'Allowed tools: Read, Bash, Write.', 'Bash runs the checks.'].join('\n'),
    );
    // Instructions about a tool the request lacks would send the model after it.
    expect(section(renderAgentDescription(qa, ['read_file']))).toBe(
      ['## Tools', '', 'Allowed tools: read_file.'].join('\n'),
    );
    expect(section(renderAgentDescription(qa, []))).toBe(
      ['## Tools', '', 'No tools are available in this conversation.'].join('\n'),
    );
  });
});
