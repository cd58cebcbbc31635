import * as z from 'zod';

/** Where a running server says how to reach it: `server.json` in its data folder (mode 0600). */
export const ServerFileSchema = z.object({
  /** The web UI's URL, with the token (open it in a browser). */
  url: z.string(),
  /** The JSON-RPC WebSocket endpoint, without the token. */
  wsUrl: z.string(),
  host: z.string(),
  port: z.number().int().positive(),
  token: z.string().min(16),
  pid: z.number().int().positive(),
  protocolVersion: z.number().int().positive(),
  projectRoot: z.string(),
  /** ISO 8601. */
  startedAt: z.string(),
  /** Served over TLS (https, wss): the SHA-256 fingerprint of its certificate, which a command here pins. */
  tlsFingerprint: z.string().optional(),
});
/** `server.json`: how to reach a running server (URLs, host, port, token), its pid and protocol version. */
export type ServerFile = z.infer<typeof ServerFileSchema>;

/** Bumped when a method or notification changes incompatibly. */
export const PROTOCOL_VERSION = 1;

/** The WebSocket path the server serves JSON-RPC on. */
export const RPC_PATH = '/rpc';

/** Where a phone trades a pairing code for a device token (`POST`, `{ code, name? }`). */
export const PAIR_PATH = '/pair';
