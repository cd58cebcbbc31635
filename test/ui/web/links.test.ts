import { describe, expect, it } from 'vitest';
import { linkOf, pageLink } from '../../../src/ui/web/links.js';
import { deviceName } from '../../../src/ui/web/pairing.js';

describe("the web UI's links", () => {
  it('reads what a fragment names, and ignores what it does not know', () => {
    expect(linkOf('#pair=abc_DEF-123')).toEqual({ kind: 'pair', code: 'abc_DEF-123' });
    expect(linkOf('#approval=req-1')).toEqual({ kind: 'approval', requestId: 'req-1' });
    expect(linkOf('#run=run-7')).toEqual({ kind: 'run', runId: 'run-7' });
    expect(linkOf('#session=s%2F1')).toEqual({ kind: 'session', sessionId: 's/1' });
    expect(linkOf('')).toBeUndefined();
    expect(linkOf('#section-2')).toBeUndefined();
    expect(linkOf('#run=')).toBeUndefined();
    expect(linkOf(`#run=${'x'.repeat(201)}`)).toBeUndefined();
  });

  it('makes a link that reads back as what it names, without the query (a token) of the base', () => {
    const base = 'https://192.168.1.20:7433/?token=secret';
    for (const link of [
      { kind: 'approval', requestId: 'req 1' },
      { kind: 'run', runId: 'run-7' },
      { kind: 'session', sessionId: 'a/b' },
    ] as const) {
      const address = pageLink(base, link);
      expect(address).not.toContain('secret');
      expect(linkOf(new URL(address).hash)).toEqual(link);
    }
  });

  it('names a device by what its browser runs on', () => {
    expect(deviceName('Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Mobile/15E148')).toBe('iPhone');
    expect(deviceName('Mozilla/5.0 (Linux; Android 14; Pixel 8) Chrome/130.0 Mobile Safari/537.36')).toBe(
      'Android phone',
    );
    expect(deviceName('Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0')).toBe('Browser');
  });
});
