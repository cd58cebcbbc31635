import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { PAIR_PATH } from '../protocol/index.js';
import { originAllowed } from './auth.js';
import type { DeviceRegistry, PairingCodes } from './devices.js';
import type { Logger } from './dispatcher.js';
import type { TokenBucket } from './rate-limit.js';

export { PAIR_PATH };

const PairRequestSchema = z.strictObject({
  code: z.string().min(1).max(100),
  name: z.string().trim().min(1).max(100).optional(),
});

/** Largest body a pairing request may have: a code and a device name. */
const MAX_BODY_BYTES = 4096;

/** The one reply for a wrong, spent or expired code: nothing in it tells them apart. */
const REFUSED =
  'This pairing link is not valid: it is wrong, was used already, or expired. Run `parley pair` for a new one.';

export interface PairingEndpoint {
  codes: PairingCodes;
  devices: DeviceRegistry;
  /** Attempts, whoever makes them: a flood of guesses is refused before a code is looked at. */
  attempts: TokenBucket;
  origins(): ReadonlySet<string>;
  log: Logger;
}

/**
 * `POST /pair` with `{ code, name? }`: a phone that opened a `parley pair` link trades the code for
 * a device token of its own (`{ deviceId, name, token }`), used from then on as the server's token
 * is. The server's token is not needed here: the code is the proof, and it works once.
 */
export async function handlePairing(
  request: IncomingMessage,
  response: ServerResponse,
  endpoint: PairingEndpoint,
): Promise<void> {
  if (request.method !== 'POST')
    return reply(response, 405, { error: `Pair with POST ${PAIR_PATH} { code, name }.` }, { Allow: 'POST' });
  if (!originAllowed(request.headers.origin, endpoint.origins()))
    return reply(response, 403, { error: 'This origin may not pair with Parley.' });
  if (!endpoint.attempts.take()) {
    const seconds = Math.max(1, Math.ceil(endpoint.attempts.retryAfterMs() / 1000));
    endpoint.log('warn', 'Pairing attempts are coming too fast; refusing them for now.');
    return reply(
      response,
      429,
      { error: `Too many pairing attempts. Try again in ${seconds} s.` },
      {
        'Retry-After': String(seconds),
      },
    );
  }
  if (!/^application\/json\b/i.test(request.headers['content-type'] ?? ''))
    return reply(response, 415, { error: 'Send the pairing request as application/json: { "code": "…" }.' });
  const body = await readBody(request);
  if (body === undefined)
    return reply(response, 413, { error: `A pairing request is at most ${MAX_BODY_BYTES} bytes.` });
  let parsed: z.infer<typeof PairRequestSchema>;
  try {
    parsed = PairRequestSchema.parse(JSON.parse(body));
  } catch {
    return reply(response, 400, { error: 'The body must be JSON { "code": string, "name"?: string }.' });
  }
  if (!endpoint.codes.redeem(parsed.code)) {
    endpoint.log('warn', 'A pairing attempt was refused (wrong, used or expired code).');
    return reply(response, 401, { error: REFUSED });
  }
  const { device, token } = await endpoint.devices.add(parsed.name ?? 'Phone');
  endpoint.log('info', 'A device was paired', { deviceId: device.deviceId, name: device.name });
  reply(response, 200, { deviceId: device.deviceId, name: device.name, token });
}

function readBody(request: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function reply(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (response.headersSent) return;
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    ...headers,
  });
  response.end(JSON.stringify(body));
}
