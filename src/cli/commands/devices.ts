import type { Command } from 'commander';
import { isParleyError } from '../../conversation/index.js';
import type { DeviceInfoWire } from '../../protocol/index.js';
import type { DeviceRegistry } from '../../server/index.js';
import { resolveDataDir } from '../options.js';
import { withServerOf } from './pair.js';

/**
 * `parley devices` and `parley devices revoke <id>`: the paired devices, through the running
 * server (whose revocation closes the device's open connections at once), or, when no server
 * runs, straight from the data folder's devices.json (nothing is connected then).
 */
export function register(program: Command): void {
  const devices = program
    .command('devices')
    .description('List the paired devices (phones) with when each was last seen; `devices revoke <id>` revokes one')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const listed = await onServerOrFolder(
        command,
        async (client) => (await client.request('list_devices')).devices,
        async (registry) => registry.list().map((device) => ({ ...device, connections: 0 })),
      );
      if (options.json) process.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
      else process.stdout.write(formatDevices(listed, new Date()));
    });
  devices
    .command('revoke')
    .description('Revoke a paired device: its token is refused from now on and its open connections close at once')
    .argument('<id>', 'the device (see `parley devices`)')
    .action(async (deviceId: string, _options: unknown, command: Command) => {
      const revoked = await onServerOrFolder(
        command,
        async (client) => client.request('revoke_device', { deviceId }),
        async (registry) => ({
          device: { ...(await registry.revoke(deviceId)), connections: 0 },
          closedConnections: 0,
        }),
      );
      process.stdout.write(
        `Revoked ${revoked.device.deviceId} (${revoked.device.name}); ${revoked.closedConnections} open connection(s) closed.\n`,
      );
    });
}

async function onServerOrFolder<T>(
  command: Command,
  onServer: (client: Parameters<Parameters<typeof withServerOf>[1]>[0]) => Promise<T>,
  inFolder: (registry: DeviceRegistry) => Promise<T>,
): Promise<T> {
  let result: { value: T } | undefined;
  try {
    await withServerOf(command, async (client) => {
      result = { value: await onServer(client) };
    });
  } catch (error) {
    if (!isParleyError(error) || error.code !== 'NO_SERVER') throw error;
  }
  if (result) return result.value;
  const { DeviceRegistry } = await import('../../server/index.js');
  return inFolder(await DeviceRegistry.open(resolveDataDir(command)));
}

/** The table `parley devices` prints. */
export function formatDevices(devices: readonly DeviceInfoWire[], now: Date): string {
  if (devices.length === 0) return 'No paired devices. Pair a phone with `parley pair`.\n';
  const rows = devices.map((device) => [
    device.deviceId,
    device.name,
    age(device.pairedAt, now),
    device.connections > 0
      ? `now (${device.connections} connection(s))`
      : device.lastSeenAt
        ? age(device.lastSeenAt, now)
        : 'never',
  ]);
  const table = [['ID', 'NAME', 'PAIRED', 'LAST SEEN'], ...rows];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  return `${table
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

function age(iso: string, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}
