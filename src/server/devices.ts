import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { ParleyError } from '../conversation/index.js';
import { writePrivateFile } from './auth.js';

/**
 * Paired devices (a phone that opened a `parley pair` link) and the pairing codes that make them.
 *
 * A device has a token of its own, shown once to the device and kept here only as its SHA-256, in
 * `<dataDir>/devices.json` (mode 0600) beside the server's own token: the server's auth lives in
 * its data folder whatever store holds the sessions, so a device pairs with each server it uses.
 * Pairing codes live in memory only, as an HMAC under a key made at start-up, for minutes, and are
 * spent by their first use.
 */

/** A paired device as `list_devices` shows it (never its token). */
export interface DeviceInfo {
  deviceId: string;
  name: string;
  /** ISO 8601. */
  pairedAt: string;
  /** ISO 8601: when it last connected or disconnected; absent until it first connects. */
  lastSeenAt?: string;
}

const DeviceRecordSchema = z.object({
  deviceId: z.string().regex(/^dev-[0-9a-f]{12}$/),
  name: z.string().min(1).max(100),
  pairedAt: z.string(),
  lastSeenAt: z.string().optional(),
  /** SHA-256 of the token, hex: a 256-bit random token needs no slower hash. */
  tokenHash: z.string().regex(/^[0-9a-f]{64}$/),
});
type DeviceRecord = z.infer<typeof DeviceRecordSchema>;

const DevicesFileSchema = z.object({ version: z.literal(1), devices: z.array(DeviceRecordSchema) });

/** The file beside the server's token that holds the paired devices. */
export const DEVICES_FILE = 'devices.json';

/** The devices of one data folder, read once and written through on every change. */
export class DeviceRegistry {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly path: string,
    private devices: DeviceRecord[],
    private readonly now: () => number,
  ) {}

  /** Reads `<dataDir>/devices.json` (none yet: no devices). A file that does not parse stops here, naming it. */
  static async open(dataDir: string, now: () => number = Date.now): Promise<DeviceRegistry> {
    const path = join(dataDir, DEVICES_FILE);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text === undefined) return new DeviceRegistry(path, [], now);
    let parsed: z.infer<typeof DevicesFileSchema>;
    try {
      parsed = DevicesFileSchema.parse(JSON.parse(text));
    } catch (error) {
      throw new ParleyError(
        'INVALID_DEVICES_FILE',
        `${path} is not a devices file Parley can read (${error instanceof Error ? error.message.split('\n')[0] : String(error)}). Move it aside to forget every paired device, then pair again with \`parley pair\`.`,
        { fault: 'user' },
      );
    }
    return new DeviceRegistry(path, parsed.devices, now);
  }

  list(): DeviceInfo[] {
    return this.devices.map(({ tokenHash: _hash, ...info }) => ({ ...info }));
  }

  /** A new device with a new token; the token is returned once and kept only hashed. */
  async add(name: string): Promise<{ device: DeviceInfo; token: string }> {
    const token = randomBytes(32).toString('hex');
    const record: DeviceRecord = {
      deviceId: `dev-${randomBytes(6).toString('hex')}`,
      name,
      pairedAt: new Date(this.now()).toISOString(),
      tokenHash: sha256(token),
    };
    this.devices = [...this.devices, record];
    await this.save();
    const { tokenHash: _hash, ...device } = record;
    return { device, token };
  }

  /**
   * The device whose token this is, or undefined. Every device's hash is compared, in constant
   * time, so the answer takes as long whichever device (or none) matches.
   */
  match(token: string | undefined): DeviceInfo | undefined {
    if (token === undefined) return undefined;
    const presented = Buffer.from(sha256(token), 'hex');
    let found: DeviceRecord | undefined;
    for (const record of this.devices)
      if (timingSafeEqual(presented, Buffer.from(record.tokenHash, 'hex')) && !found) found = record;
    if (!found) return undefined;
    const { tokenHash: _hash, ...device } = found;
    return device;
  }

  /** Records that the device connected or disconnected now. */
  async seen(deviceId: string): Promise<void> {
    const at = new Date(this.now()).toISOString();
    this.devices = this.devices.map((record) =>
      record.deviceId === deviceId ? { ...record, lastSeenAt: at } : record,
    );
    await this.save();
  }

  /** Forgets a device: its token matches nothing from now on. NOT_FOUND for an id that is not paired. */
  async revoke(deviceId: string): Promise<DeviceInfo> {
    const record = this.devices.find((entry) => entry.deviceId === deviceId);
    if (!record) {
      throw new ParleyError(
        'DEVICE_NOT_FOUND',
        `No paired device has the id "${deviceId}". List them with \`parley devices\`.`,
        { fault: 'user', data: { deviceId } },
      );
    }
    this.devices = this.devices.filter((entry) => entry !== record);
    await this.save();
    const { tokenHash: _hash, ...device } = record;
    return device;
  }

  /** Resolves once every write asked for so far is done (a closing server waits for them). */
  settled(): Promise<void> {
    return this.writing;
  }

  /** Writes one at a time (they share a temp file), each the list as it is when its turn comes. */
  private save(): Promise<void> {
    const write = this.writing.then(() =>
      writePrivateFile(this.path, `${JSON.stringify({ version: 1, devices: this.devices }, null, 2)}\n`),
    );
    this.writing = write.catch(() => undefined);
    return write;
  }
}

/** A pairing code as `create_pairing` hands it out. */
export interface PairingCode {
  code: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * One-time pairing codes: 128 random bits each, kept as an HMAC under a key that never leaves this
 * process, valid for `ttlMs`, spent by their first use, right or wrong device name alike.
 */
export class PairingCodes {
  private readonly key = randomBytes(32);
  private pending: Array<{ hash: Buffer; expiresAt: number }> = [];

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  create(): PairingCode {
    this.prune();
    const code = randomBytes(16).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.pending.push({ hash: this.hash(code), expiresAt });
    return { code, expiresAt };
  }

  /**
   * True, once, for a code that was made here and has not expired. Every pending code is compared
   * in constant time; a wrong, spent or expired code gets the same false.
   */
  redeem(code: string): boolean {
    this.prune();
    const presented = this.hash(code);
    let found: (typeof this.pending)[number] | undefined;
    for (const entry of this.pending) if (timingSafeEqual(presented, entry.hash) && !found) found = entry;
    if (!found) return false;
    this.pending = this.pending.filter((entry) => entry !== found);
    return true;
  }

  private prune(): void {
    const now = this.now();
    this.pending = this.pending.filter((entry) => entry.expiresAt > now);
  }

  private hash(code: string): Buffer {
    return createHmac('sha256', this.key).update(code).digest();
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
