import * as z from 'zod';
import { describeIssues } from '../conversation/index.js';
import type { AgentDescription, SessionRecord, SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';

/**
 * What an agent is told about itself (its agent description): role text, instructions,
 * allowed tools, and how to use them, per agent type. A role file can override any of it; the server
 * layer parses role files and passes the result here as an override.
 */

export interface AgentDescriptionText {
  agentType: string;
  role: string;
  instructions: string[];
  allowedTools: string[];
  toolInstructions?: string;
}

const READ_TOOLS = ['Read', 'Glob', 'Grep'];
const WRITE_TOOLS = ['Edit', 'Write'];

const BUILT_IN: Record<string, Omit<AgentDescriptionText, 'agentType'>> = {
  pm: {
    role: 'You are the Project Manager agent for this feature. You turn what the user wants into a clear specification and a set of small, well-ordered tasks with explicit dependencies, and you keep that plan current as work proceeds.',
    instructions: [
      "Clarify the user's goal and constraints before planning; ask when something essential is ambiguous.",
      'Break the feature into tasks that can each be implemented and verified on their own; state each dependency.',
      'Keep task titles short and descriptions concrete: what changes, where, and how it is checked.',
      'Record decisions and their reasons; never silently drop a requirement the user stated.',
      'Do not write code yourself; delegate implementation to Dev and verification to QA through tasks.',
    ],
    allowedTools: [...READ_TOOLS, 'CreateTask', 'UpdateTask', 'ListTasks', 'DeleteTask'],
    toolInstructions:
      'Read the code to ground the plan. CreateTask takes a title, a description and the ids of the tasks it depends on; UpdateTask changes them; ListTasks shows the current plan.',
  },
  dev: {
    role: 'You are the Developer agent for one task. You implement the task in the repository, following the project conventions, and you iterate until the build, the linter and the tests pass.',
    instructions: [
      'Read the task, its dependencies and the relevant code before changing anything.',
      'Make the smallest change that fully does the task; follow the conventions in CLAUDE.md / AGENTS.md.',
      'After each change run the checks (build, lint, test); fix what fails before moving on.',
      'Add or update tests for the behaviour you change.',
      'When blocked, say exactly what blocks you and what you tried; do not guess at requirements.',
    ],
    allowedTools: [...READ_TOOLS, ...WRITE_TOOLS, 'Bash'],
    toolInstructions:
      'Use Read, Glob and Grep to explore; Edit for targeted changes and Write for new files; Bash to run the build, the linter and the tests.',
  },
  qa: {
    role: "You are the QA agent for one task. You verify the Developer's work against the task: you review the change, run the checks, and report precisely what passes and what does not.",
    instructions: [
      'Compare the change with the task description and the acceptance criteria, point by point.',
      'Run the build, the linter and the tests; report each result.',
      'For each problem give the file, the line, what is wrong and what would fix it.',
      'Do not fix the code yourself; report back so the Developer can.',
      'Approve only when every criterion is met and every check passes.',
    ],
    allowedTools: [...READ_TOOLS, 'Bash'],
    toolInstructions: 'Use Read, Glob and Grep to review the change and Bash to run the checks; you do not edit files.',
  },
  harness: {
    role: 'You are the Harness agent: you orchestrate the workflow of this feature, decide which agent works next, and ask the user for approval at the points that need a human.',
    instructions: [
      'Keep track of every task and its state; move a task forward only when its checks passed.',
      'Ask the user before anything irreversible (merging, deleting, publishing) and wait for the answer.',
      'When an agent is stuck or fails repeatedly, stop and report to the user instead of looping.',
      'Summarise progress in terms of tasks done, in progress and blocked.',
    ],
    allowedTools: [...READ_TOOLS, 'ListTasks', 'UpdateTask', 'DraftAgent', 'AwaitAgent', 'KillAgent'],
    toolInstructions:
      'DraftAgent starts a worker agent for a task and returns its id at once; AwaitAgent waits for its result; KillAgent stops it. Keep the ids of the workers you started.',
  },
  merge: {
    role: "You are the Merge agent: you bring a finished task's branch into the feature branch cleanly, resolving conflicts without losing anyone's work.",
    instructions: [
      'Check that the task passed QA before merging.',
      'Resolve conflicts by understanding both sides; never discard a change you do not understand.',
      'Run the build and the tests after the merge; report the result.',
      'If a conflict needs a decision, stop and ask instead of guessing.',
    ],
    allowedTools: [...READ_TOOLS, ...WRITE_TOOLS, 'Bash'],
    toolInstructions: 'Use Bash for git (status, diff, merge) and to run the checks; Edit to resolve conflicts.',
  },
};

/** The agent types with a built-in description. */
export const BUILT_IN_AGENT_TYPES = Object.keys(BUILT_IN);

/** What a role file may change. `instructions` and `allowedTools` replace the defaults; `extraInstructions` appends to them. */
export const AgentDescriptionOverrideSchema = z
  .object({
    role: z.string().min(1).optional(),
    instructions: z.array(z.string().min(1)).optional(),
    extraInstructions: z.array(z.string().min(1)).optional(),
    allowedTools: z.array(z.string().min(1)).optional(),
    toolInstructions: z.string().optional(),
  })
  .strict();
/** A change to a session's agent description: role, instructions or tools. */
export type AgentDescriptionOverride = z.infer<typeof AgentDescriptionOverrideSchema>;

/**
 * The description for an agent type, with an optional override applied. Agent types without a
 * built-in description (a drafted role) get a generic one naming the role; a role file normally
 * supplies the rest.
 */
export function describeAgent(agentType: string, override?: AgentDescriptionOverride): AgentDescriptionText {
  let checked: AgentDescriptionOverride = {};
  if (override !== undefined) {
    const parsed = AgentDescriptionOverrideSchema.safeParse(override);
    if (!parsed.success) {
      throw new SessionError(
        'INVALID_INPUT',
        `Agent description override for "${agentType}": ${describeIssues(parsed.error.issues)}.`,
        {
          fault: 'user',
          data: { agentType },
        },
      );
    }
    checked = parsed.data;
  }
  const base = BUILT_IN[agentType] ?? {
    role: `You are the ${agentType} agent.`,
    instructions: [
      'Work on the task you are given; ask when something essential is unclear.',
      'Report what you did and what remains.',
    ],
    allowedTools: [...READ_TOOLS],
  };
  const instructions = [...(checked.instructions ?? base.instructions), ...(checked.extraInstructions ?? [])];
  const toolInstructions = checked.toolInstructions ?? base.toolInstructions;
  return {
    agentType,
    role: checked.role ?? base.role,
    instructions,
    allowedTools: [...(checked.allowedTools ?? base.allowedTools)],
    ...(toolInstructions !== undefined && toolInstructions !== '' ? { toolInstructions } : {}),
  };
}

/**
 * "# Your Role" and "## Instructions" (and the tools) as the request shows them.
 * `tools` names the tools the request carries: the Tools section lists exactly those (and says
 * there are none when it is empty), and keeps the tool instructions only when every tool the
 * description speaks of is among them. Without `tools`, the description's own list.
 */
export function renderAgentDescription(
  description: Pick<AgentDescriptionText, 'role' | 'instructions' | 'allowedTools' | 'toolInstructions'>,
  tools?: readonly string[],
): string {
  const parts = ['# Your Role', '', description.role.trim()];
  if (description.instructions.length > 0) {
    parts.push('', '## Instructions', '', ...description.instructions.map((line) => `- ${line}`));
  }
  const allowed = tools ?? description.allowedTools;
  const toolInstructions =
    tools === undefined || (tools.length > 0 && description.allowedTools.every((name) => tools.includes(name)))
      ? description.toolInstructions?.trim()
      : undefined;
  if (allowed.length > 0 || toolInstructions) {
    parts.push('', '## Tools', '');
    if (allowed.length > 0) parts.push(`Allowed tools: ${allowed.join(', ')}.`);
    if (toolInstructions) parts.push(toolInstructions);
  } else if (tools !== undefined) {
    parts.push('', '## Tools', '', 'No tools are available in this conversation.');
  }
  return parts.join('\n');
}

/**
 * The session's stored agent description, else its fork source's (and so on up the lineage): a fork
 * copies its source's description just after its record is written, and a crash between the two
 * must not leave the fork running as another agent. Its first request then stores the one found.
 */
export async function storedDescriptionOf(
  store: SessionStore,
  record: SessionRecord,
): Promise<AgentDescription | undefined> {
  const own = await store.readAgentDescription(record.sessionId);
  if (own || !record.forkedFrom) return own;
  let source = record.forkedFrom.sessionId;
  for (let hops = 0; hops < MAX_LINEAGE; hops++) {
    const description = await store.readAgentDescription(source).catch(() => undefined);
    if (description) return description;
    const parent = (await store.getSession(source))?.forkedFrom;
    if (!parent) return undefined;
    source = parent.sessionId;
  }
  return undefined;
}

/** Forks of forks deeper than this read no description from their lineage (a guard against a loop). */
const MAX_LINEAGE = 256;
