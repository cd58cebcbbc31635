import { PAIR_PATH } from '../../protocol/index.js';

/** A device token, given once in exchange for a pairing code. */
export interface PairedDevice {
  deviceId: string;
  name: string;
  token: string;
}

/**
 * Trades a `parley pair` code for a device token at this server's `POST /pair`. A refusal throws
 * with the server's own words (a wrong, used or expired code all read the same; too many attempts
 * say when to retry).
 */
export async function redeemPairing(code: string, name: string, fetcher: typeof fetch = fetch): Promise<PairedDevice> {
  let response: Response;
  try {
    response = await fetcher(PAIR_PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code, name }),
      credentials: 'omit',
    });
  } catch (error) {
    throw new Error(`Could not reach the server to pair: ${error instanceof Error ? error.message : String(error)}`);
  }
  const body = (await response.json().catch(() => ({}))) as Partial<PairedDevice> & { error?: string };
  if (!response.ok || typeof body.token !== 'string')
    throw new Error(body.error ?? `Pairing was refused (HTTP ${response.status}). Run \`parley pair\` for a new link.`);
  return { deviceId: String(body.deviceId), name: String(body.name), token: body.token };
}

/** A name for this device in `parley devices`, from what the browser says it runs on. */
export function deviceName(userAgent: string): string {
  if (/iPhone/.test(userAgent)) return 'iPhone';
  if (/iPad/.test(userAgent)) return 'iPad';
  if (/Android/.test(userAgent)) return /Mobile/.test(userAgent) ? 'Android phone' : 'Android tablet';
  if (/Mobile/.test(userAgent)) return 'Phone';
  return 'Browser';
}
