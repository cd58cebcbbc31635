/** The draft layer's public face: draft sessions, projects, tasks, roles, worker agents, MCP tools. */
export * from './types.js';
export * from './errors.js';
export * from './contract.js';
export { createDraftService } from './draft-service.js';
export { GOAL_STUCK_AFTER, GoalVerdictSchema, type SetGoalParams } from './goals.js';
export { DEFAULT_DISPATCH_OUTPUT_SCHEMA } from './draft-dispatch.js';
export { BUILTIN_ROLES, loadRoles, parseRoleFile, type LoadedRoles } from './roles.js';
export { ProjectCatalog, projectInfo, slugify, DEFAULT_ROLE, type ProjectLocation } from './projects.js';
export { AgentPool, WorkerSlots } from './pool.js';
export { Workers, type WorkersOptions } from './workers.js';
export {
  compileOutputSchema,
  jsonCandidates,
  outputInstructions,
  repairPrompt,
  type OutputValidator,
} from './structured-output.js';
export { createParleyTools, AGENT_TOOL_NAMES, type ParleyTool, type ToolHandlers } from './tools.js';
export { createDraftMcpServer } from './mcp-server.js';
