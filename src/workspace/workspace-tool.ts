import * as z from 'zod';
import { describeIssues, isParleyError } from '../conversation/index.js';
import type { ToolDefinition, ToolOutput } from '../backends/index.js';
import type { ApprovalBroker } from './approvals.js';
import type { WorkspaceFiles } from './file-io.js';
import type { SandboxPlan } from './sandbox.js';
import type { PermissionMode } from './types.js';
import type { WorkspacePaths } from './workspace-paths.js';

/** What a workspace tool needs besides its input: where it works, who asks, under which mode. */
export interface WorkspaceToolContext {
  paths: WorkspacePaths;
  /** The session whose agent calls the tool (approvals and "allow always" are per session). */
  sessionId: string;
  /** `main`, or the worker's thread in its drafting session. */
  conversationId?: string;
  /** Read on every call, so a mode changed mid-draft applies to the next call. */
  mode: () => PermissionMode;
  broker: ApprovalBroker;
  /** Where the file tools read and write; default the disk. */
  files?: WorkspaceFiles;
  sandbox?: SandboxPlan;
  limits: WorkspaceLimits;
}

export interface WorkspaceLimits {
  /** Lines `read_file` returns when no `limit` is given (default 2,000). */
  readLines: number;
  /** Characters of a tool's text output before the middle is cut (default 30,000). */
  outputChars: number;
  /** Entries `list_files`, `glob` and `grep` return at most (default 1,000). */
  entries: number;
  /** `run_command`'s timeout when none is given (default 2 minutes) and its ceiling (default 10 minutes). */
  commandTimeoutMs: number;
  maxCommandTimeoutMs: number;
}

export const DEFAULT_LIMITS: WorkspaceLimits = {
  readLines: 2_000,
  outputChars: 30_000,
  entries: 1_000,
  commandTimeoutMs: 120_000,
  maxCommandTimeoutMs: 600_000,
};

/** Which role permission a tool needs. */
export type WorkspacePermission = 'files-read' | 'files-write' | 'shell';

export interface WorkspaceTool extends ToolDefinition {
  schema: z.ZodObject;
  permission: WorkspacePermission;
}

/** What a tool's handler returns: the text for the model, and structured output for the UIs. */
export interface WorkspaceToolResult {
  content: string;
  isError?: boolean;
  data?: unknown;
}

/** A tool from its schema and handler: input validated, typed errors turned into clear results. */
export function workspaceTool<S extends z.ZodObject>(
  spec: { name: string; description: string; schema: S; permission: WorkspacePermission },
  run: (
    input: z.infer<S>,
    signal: AbortSignal | undefined,
    toolUseId: string | undefined,
  ) => Promise<WorkspaceToolResult>,
): WorkspaceTool {
  const inputSchema = jsonSchemaOf(spec.schema);
  return {
    name: spec.name,
    description: spec.description,
    schema: spec.schema,
    permission: spec.permission,
    inputSchema,
    async execute(input, options): Promise<ToolOutput> {
      const parsed = spec.schema.safeParse(input ?? {});
      if (!parsed.success)
        return { content: `Invalid input for ${spec.name}: ${describeIssues(parsed.error.issues)}.`, isError: true };
      try {
        const result = await run(parsed.data, options.signal, options.toolUseId);
        return {
          content: result.content,
          ...(result.isError ? { isError: true } : {}),
          ...(result.data !== undefined ? { data: result.data } : {}),
        };
      } catch (error) {
        if (isParleyError(error))
          return {
            content: `${error.code}: ${error.message}`,
            isError: true,
            data: { code: error.code, ...error.data },
          };
        const code = (error as NodeJS.ErrnoException).code;
        return {
          content: `${spec.name} failed: ${error instanceof Error ? error.message : String(error)}`,
          isError: true,
          ...(code ? { data: { code } } : {}),
        };
      }
    },
  };
}

/**
 * A schema's JSON Schema, made once: toolsets are built per turn, and converting the seven schemas
 * each time would be paid on every turn. Back ends only read it.
 */
const jsonSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>();
function jsonSchemaOf(schema: z.ZodObject): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) jsonSchemas.set(schema, (json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>));
  return json;
}
