/** The draft layer's public face: draft sessions, projects, tasks, roles, worker agents, MCP tools. */
export * from './types.js';
export * from './errors.js';
export * from './contract.js';
export { createDraftService } from './draft-service.js';
