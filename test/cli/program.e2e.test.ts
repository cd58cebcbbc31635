/**
 * `parley --version` and `parley --help` as processes: the version needs no command module (it is
 * printed before any loads), and help still lists every command.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parleyNodeArguments } from '../helpers/parley-cli.js';

function parley(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [...parleyNodeArguments(), ...args], (error, stdout) =>
      done({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    );
  });
}

describe('parley --version and --help', () => {
  it('prints the version with either flag, and help lists every command', async () => {
    const [long, short, help] = await Promise.all([parley(['--version']), parley(['-V']), parley(['--help'])]);
    expect(long).toEqual({ code: 0, stdout: '0.1.0\n' });
    expect(short).toEqual({ code: 0, stdout: '0.1.0\n' });
    expect(help.code).toBe(0);
    for (const name of ['sessions', 'search', 'serve', 'chat', 'schedule', 'import'])
      expect(help.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });
});
