import { ParleyError } from '../conversation/index.js';
import type { DeviceInfoWire } from '../protocol/index.js';
import type { DeviceInfo, DeviceRegistry, PairingCodes } from './devices.js';
import type { Handlers } from './dispatcher.js';
import type { Connection, Hub } from './hub.js';

export type DeviceMethodName = 'create_pairing' | 'list_devices' | 'revoke_device';

export interface DeviceHandlerDependencies {
  devices: DeviceRegistry;
  codes: PairingCodes;
  hub: Hub;
  connection(connectionId: string): Connection;
  /** The links a code goes into, and what the phone should compare: known once the server listens. */
  pairingLinks(code: string): { links: string[]; reachable: boolean; tlsFingerprint?: string };
}

/** WebSocket close code for a revoked device's connections: policy violation, it may not come back. */
export const REVOKED_CLOSE_CODE = 1008;

/**
 * Pairing and the paired devices. Only the server's own token manages them: a phone that could
 * pair more devices or revoke the others would be a way to keep access after its own revocation.
 */
export function createDeviceHandlers(dependencies: DeviceHandlerDependencies): Pick<Handlers, DeviceMethodName> {
  const { devices, codes, hub } = dependencies;
  const ownerOnly = (connectionId: string, method: DeviceMethodName) => {
    if (dependencies.connection(connectionId).deviceId === undefined) return;
    throw new ParleyError(
      'NOT_ALLOWED',
      `A paired device may not call ${method}: pairing and managing devices need the server's own token (run \`parley pair\` or \`parley devices\` on the machine that serves).`,
      { fault: 'user', data: { method } },
    );
  };
  const wire = (device: DeviceInfo): DeviceInfoWire => ({
    ...device,
    connections: hub.ofDevice(device.deviceId).length,
  });
  return {
    create_pairing: (_params, context) => {
      ownerOnly(context.connectionId, 'create_pairing');
      const { code, expiresAt } = codes.create();
      return Promise.resolve({
        code,
        expiresAt: new Date(expiresAt).toISOString(),
        ...dependencies.pairingLinks(code),
      });
    },
    list_devices: (_params, context) => {
      ownerOnly(context.connectionId, 'list_devices');
      return Promise.resolve({ devices: devices.list().map(wire) });
    },
    revoke_device: async (params, context) => {
      ownerOnly(context.connectionId, 'revoke_device');
      const open = hub.ofDevice(params.deviceId);
      const device = await devices.revoke(params.deviceId);
      // At once: no frame already on its way from the device is answered, and the socket goes
      // even if the device never acknowledges the close.
      for (const connection of open) {
        hub.remove(connection);
        connection.socket.close(REVOKED_CLOSE_CODE, 'this device was revoked');
        setTimeout(() => connection.socket.terminate(), 1_000).unref();
      }
      return { device: { ...device, connections: 0 }, closedConnections: open.length };
    },
  };
}
