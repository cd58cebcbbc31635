/**
 * The wire contract between the server and every client (TUI, web UI, users' code): method and
 * notification schemas, error codes, a typed client over a small transport interface. Depends
 * only on `conversation/` and imports nothing Node-only, so a browser bundle can take it whole.
 */
export * from './json-rpc.js';
export * from './errors.js';
export * from './schemas.js';
export * from './run-schemas.js';
export * from './schedule-schemas.js';
export * from './attention-schemas.js';
export * from './history-schemas.js';
export * from './methods.js';
export * from './notifications.js';
export * from './server-file.js';
export * from './transport.js';
export * from './client.js';
export * from './pending-approvals.js';
export { renderProtocolReference } from './reference.js';
