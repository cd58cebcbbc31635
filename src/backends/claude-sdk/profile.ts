import { ValidationError } from '../../conversation/index.js';
import type { AgentProfile, Workspace } from '../agent-backend.js';

const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

/**
 * Writes an agent profile where Claude Code reads it (with `settingSources` including `project`):
 * `CLAUDE.md` holds the role's instructions for the main agent, and `.claude/agents/<name>.md` the
 * same agent as a subagent definition (frontmatter: name, description, tools, model), so other
 * agents in the workspace can delegate to it.
 */
export async function writeAgentProfile(profile: AgentProfile, workspace: Workspace): Promise<void> {
  if (!AGENT_NAME.test(profile.name)) {
    throw new ValidationError(
      `Agent name "${profile.name}" cannot name a Claude Code agent file: use letters, digits, "-" and "_" (at most 64).`,
      { data: { field: 'name', value: profile.name } },
    );
  }
  await workspace.writeFile('CLAUDE.md', claudeMd(profile));
  await workspace.writeFile(`.claude/agents/${profile.name}.md`, agentFile(profile));
}

export function claudeMd(profile: AgentProfile): string {
  const parts = [`# ${profile.name}`];
  if (profile.description) parts.push(profile.description.trim());
  parts.push(profile.instructions.trim());
  return `${parts.join('\n\n')}\n`;
}

export function agentFile(profile: AgentProfile): string {
  const description = profile.description?.trim() || firstLine(profile.instructions) || profile.name;
  const lines = ['---', `name: ${profile.name}`, `description: ${yamlString(description)}`];
  if (profile.allowedTools && profile.allowedTools.length > 0) lines.push(`tools: ${profile.allowedTools.join(', ')}`);
  if (profile.model) lines.push(`model: ${profile.model}`);
  lines.push('---', '', profile.instructions.trim(), '');
  return lines.join('\n');
}

function firstLine(text: string): string {
  return (text.trim().split('\n', 1)[0] ?? '').trim();
}

/** A YAML scalar that stays one string whatever it contains (colons, quotes, leading dashes). */
function yamlString(value: string): string {
  return JSON.stringify(value.replace(/\s+/g, ' '));
}
