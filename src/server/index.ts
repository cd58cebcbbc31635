/** `parley serve`: JSON-RPC 2.0 over WebSocket, with auth, limits, fan-out and graceful shutdown. */
export {
  startServer,
  SERVER_VERSION,
  type ServerOptions,
  type RunningServer,
  type RunServiceContext,
} from './server.js';
export { Dispatcher, type Handlers, type Logger, type LogLevel, type RequestContext } from './dispatcher.js';
export { loadOrCreateToken, isLoopback, reachableNames } from './auth.js';
export { DeviceRegistry, type DeviceInfo } from './devices.js';
export { certificateFingerprint, selfSignedCertificate, type TlsCredentials } from './tls.js';
