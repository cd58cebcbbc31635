import type { Command } from 'commander';
import type { MethodResult, ProtocolClient } from '../../protocol/index.js';
import { resolveDataDir } from '../options.js';
import { withProjectServer } from '../project-server.js';

/**
 * `parley pair`: a one-time link (and its QR code, drawn in the terminal) that a phone opens to
 * get a device token of its own from the project's running server. The code is the server's to
 * make and keep (in memory, hashed, minutes); this command only asks for one and shows it.
 */
export function register(program: Command): void {
  program
    .command('pair')
    .description('Pair a phone: print a one-time link and its QR code that give the phone a device token of its own')
    .option('--json', 'print JSON (the code, its links and when it expires) instead of the QR code')
    .action(async (options: { json?: boolean }, command: Command) => {
      await withServerOf(command, async (client) => {
        const pairing = await client.request('create_pairing');
        if (options.json) process.stdout.write(`${JSON.stringify(pairing, null, 2)}\n`);
        else process.stdout.write(await describePairing(pairing, new Date()));
      });
    });
}

/** What `parley pair` prints: the link, its QR code, the other links, when it expires, the certificate to expect. */
export async function describePairing(pairing: MethodResult<'create_pairing'>, now: Date): Promise<string> {
  const { toString } = await import('qrcode');
  const [link, ...others] = pairing.links;
  const minutes = Math.max(1, Math.round((Date.parse(pairing.expiresAt) - now.getTime()) / 60_000));
  const qr = await toString(link!, { type: 'terminal', small: true, errorCorrectionLevel: 'L' });
  const lines = [
    `Open this link on your phone within ${minutes} minute(s); it works once:`,
    '',
    `  ${link}`,
    '',
    qr.trimEnd(),
    '',
  ];
  if (others.length > 0)
    lines.push('Or, if the phone reaches this machine by another address:', ...others.map((each) => `  ${each}`), '');
  if (!pairing.reachable)
    lines.push(
      'The server listens on this machine only (loopback), so a phone cannot reach it. Serve it on the network with',
      '`parley serve --host 0.0.0.0` (TLS with a self-signed certificate unless you give one), then pair again.',
      '',
    );
  if (pairing.tlsFingerprint !== undefined)
    lines.push(
      "If the phone warns about the certificate, compare its SHA-256 fingerprint with the server's:",
      `  ${pairing.tlsFingerprint}`,
      '',
    );
  lines.push('List paired devices with `parley devices`; revoke one with `parley devices revoke <id>`.', '');
  return lines.join('\n');
}

/** Connects to the project's server, runs `work`, and turns errors the server answered into Parley errors. */
export function withServerOf(command: Command, work: (client: ProtocolClient) => Promise<void>): Promise<void> {
  return withProjectServer(resolveDataDir(command), {}, ({ client }) => work(client));
}
