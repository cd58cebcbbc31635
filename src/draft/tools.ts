import type { Context } from '@opentelemetry/api';
import * as z from 'zod';
import { describeIssues, isParleyError } from '../conversation/index.js';
import type { ToolDefinition, ToolOutput } from '../backends/index.js';
import {
  AgentIdInputSchema,
  AwaitAgentInputSchema,
  ConversationIdInputSchema,
  CreateProjectInputSchema,
  CreateTaskInputSchema,
  DraftAgentInputSchema,
  EmptyInputSchema,
  ListTasksInputSchema,
  OpenConversationInputSchema,
  SayInputSchema,
  type AgentInfo,
  type AwaitAgentInput,
  type ConversationReply,
  type ConversationSummary,
  type CreateProjectInput,
  type CreateTaskInput,
  type DispatchResult,
  type DraftAgentInput,
  type OpenConversationInput,
  type SayInput,
  type Permission,
  type ProjectInfo,
  type RoleFileError,
  type RoleInfo,
  type TaskInfo,
} from './types.js';

/**
 * The tools Parley gives a drafted agent (and, without the agent tools, its workers), gated by
 * the role's permissions (seed 000, "MCP gating"):
 *
 * | permission        | tools                                             |
 * |-------------------|---------------------------------------------------|
 * | (none)            | list_tasks, list_roles (read only)                |
 * | `projects-list`   | + list_projects                                   |
 * | `projects-create` | + create_project, create_task                     |
 * | `agent-draft`     | + draft_agent, await_agent, kill_agent, list_agents |
 * | `agent-converse`  | + open_conversation, say, close_conversation      |
 *
 * Each is a ToolDefinition (the claude-sdk back end serves them as in-process MCP tools, the API
 * back ends as function tools) and keeps its zod input schema for the stand-alone MCP server.
 */
export interface ParleyTool extends ToolDefinition {
  /** The input schema as zod (the JSON Schema in `inputSchema` is generated from it). */
  schema: z.ZodObject;
  /** The permission that grants it; undefined for read-only tools. */
  permission?: Permission;
}

/** What the tools do, supplied by the DraftService for one drafting context. */
export interface ToolHandlers {
  listTasks(project: string | undefined): Promise<TaskInfo[]>;
  listRoles(): Promise<{ roles: RoleInfo[]; errors: RoleFileError[] }>;
  listProjects(): Promise<ProjectInfo[]>;
  createProject(input: CreateProjectInput): Promise<ProjectInfo>;
  createTask(input: CreateTaskInput): Promise<TaskInfo>;
  /** `traceContext`: the `draft_agent` call's span, the parent of the worker's `invoke_agent` span. */
  draftAgent(
    input: DraftAgentInput,
    signal: AbortSignal | undefined,
    traceContext?: Context,
  ): Promise<{ agentId: string; status: string }>;
  awaitAgent(input: AwaitAgentInput, signal: AbortSignal | undefined): Promise<DispatchResult>;
  killAgent(agentId: string): Promise<{ killed: boolean }>;
  listAgents(): Promise<AgentInfo[]>;
  /** Conversations between agents: where a caller has none (the ACP agent), the tools are left out. */
  openConversation?(input: OpenConversationInput): Promise<{ conversationId: string; role: string; maxTurns: number }>;
  say?(input: SayInput, signal: AbortSignal | undefined, traceContext?: Context): Promise<ConversationReply>;
  closeConversation?(conversationId: string): Promise<ConversationSummary>;
}

export const AGENT_TOOL_NAMES = ['draft_agent', 'await_agent', 'kill_agent', 'list_agents'] as const;

export function createParleyTools(options: {
  permissions: readonly Permission[];
  handlers: ToolHandlers;
  /** Workers get no agent tools: a worker does not draft workers (one level, as seed 000 scopes it). */
  allowAgentTools: boolean;
}): ParleyTool[] {
  const { handlers } = options;
  const granted = new Set(options.permissions);
  const all: ParleyTool[] = [
    tool(
      'list_tasks',
      'Lists the tasks of a project (default: the current one): slug, title, state and any active draft.',
      ListTasksInputSchema,
      undefined,
      (input) => handlers.listTasks(input.project),
    ),
    tool(
      'list_roles',
      'Lists the roles an agent can be drafted as, with their permissions; role files that failed to parse are listed under `errors`.',
      EmptyInputSchema,
      undefined,
      () => handlers.listRoles(),
    ),
    tool('list_projects', 'Lists the projects this server knows.', EmptyInputSchema, 'projects-list', () =>
      handlers.listProjects(),
    ),
    tool(
      'create_project',
      'Registers a project (a folder; created when missing).',
      CreateProjectInputSchema,
      'projects-create',
      (input) => handlers.createProject(input),
    ),
    tool(
      'create_task',
      'Creates a task in a project (default: the current one) and returns it with its slug.',
      CreateTaskInputSchema,
      'projects-create',
      (input) => handlers.createTask(input),
    ),
    tool(
      'draft_agent',
      'Starts a worker agent of the given role on a task prompt and returns its agent id at once. The worker runs on its own; get its result with await_agent.',
      DraftAgentInputSchema,
      'agent-draft',
      (input, signal, traceContext) => handlers.draftAgent(input, signal, traceContext),
    ),
    tool(
      'await_agent',
      'Waits for a worker to finish (up to timeoutSeconds) and returns its result: status, structured output, summary, usage, cost, duration. On timeout `timedOut` is true; call again.',
      AwaitAgentInputSchema,
      'agent-draft',
      (input, signal) => handlers.awaitAgent(input, signal),
    ),
    tool('kill_agent', 'Stops a worker; its partial output is kept.', AgentIdInputSchema, 'agent-draft', (input) =>
      handlers.killAgent(input.agentId),
    ),
    tool(
      'list_agents',
      'Lists the workers you started, with their status and cost.',
      EmptyInputSchema,
      'agent-draft',
      () => handlers.listAgents(),
    ),
    tool(
      'open_conversation',
      'Opens a conversation with an agent of another role (say, a dev to discuss an architecture before you commit to a plan) and returns its id. Talk with `say`; end it with `close_conversation`.',
      OpenConversationInputSchema,
      'agent-converse',
      (input) => handlers.openConversation!(input),
    ),
    tool(
      'say',
      'Says something in an open conversation and returns the other agent’s reply (and any note the user sent into the conversation).',
      SayInputSchema,
      'agent-converse',
      (input, signal, traceContext) => handlers.say!(input, signal, traceContext),
    ),
    tool(
      'close_conversation',
      'Closes a conversation and returns its summary: messages, cost, duration.',
      ConversationIdInputSchema,
      'agent-converse',
      (input) => handlers.closeConversation!(input.conversationId),
    ),
  ];
  return all.filter((entry) => {
    if (entry.permission === undefined) return true;
    if (!granted.has(entry.permission)) return false;
    if (entry.permission === 'agent-converse' && !handlers.openConversation) return false;
    return (entry.permission !== 'agent-draft' && entry.permission !== 'agent-converse') || options.allowAgentTools;
  });
}

/** JSON Schemas of the tool inputs, generated once per schema (tools are rebuilt every turn). */
const jsonSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>();

function jsonSchemaOf(schema: z.ZodObject): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    jsonSchemas.set(schema, json);
  }
  return structuredClone(json);
}

function tool<S extends z.ZodObject>(
  name: string,
  description: string,
  schema: S,
  permission: Permission | undefined,
  run: (input: z.infer<S>, signal: AbortSignal | undefined, traceContext: Context | undefined) => Promise<unknown>,
): ParleyTool {
  return {
    name,
    description,
    schema,
    ...(permission ? { permission } : {}),
    inputSchema: jsonSchemaOf(schema),
    async execute(input, options): Promise<ToolOutput> {
      const parsed = schema.safeParse(input ?? {});
      if (!parsed.success) {
        return { content: `Invalid input for ${name}: ${describeIssues(parsed.error.issues)}.`, isError: true };
      }
      try {
        const result = await run(parsed.data, options.signal, options.traceContext);
        return { content: JSON.stringify(result, null, 2), data: result };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return {
          content: isParleyError(error) ? `${error.code}: ${message}` : `${name} failed: ${message}`,
          isError: true,
          ...(isParleyError(error) ? { data: { code: error.code, ...error.data } } : {}),
        };
      }
    },
  };
}
