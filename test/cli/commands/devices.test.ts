import { describe, expect, it } from 'vitest';
import { formatDevices } from '../../../src/cli/commands/devices.js';

describe('parley devices', () => {
  it('prints each device with when it was paired and last seen, or says how to pair one', () => {
    const now = new Date('2026-12-02T07:00:00Z');
    expect(formatDevices([], now)).toBe('No paired devices. Pair a phone with `parley pair`.\n');
    const table = formatDevices(
      [
        {
          deviceId: 'dev-0123456789ab',
          name: 'iPhone',
          pairedAt: '2026-11-30T07:00:00Z',
          lastSeenAt: '2026-12-02T06:55:00Z',
          connections: 0,
        },
        { deviceId: 'dev-ba9876543210', name: 'Android phone', pairedAt: '2026-12-02T06:59:30Z', connections: 2 },
        { deviceId: 'dev-aaaaaaaaaaaa', name: 'Browser', pairedAt: '2026-12-02T04:00:00Z', connections: 0 },
      ],
      now,
    );
    expect(table.split('\n')).toEqual([
      'ID                NAME           PAIRED   LAST SEEN',
      'dev-0123456789ab  iPhone         2 d ago  5 min ago',
      'dev-ba9876543210  Android phone  30s ago  now (2 connection(s))',
      'dev-aaaaaaaaaaaa  Browser        3 h ago  never',
      '',
    ]);
  });
});
