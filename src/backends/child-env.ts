/**
 * The variables a native CLI's child process inherits from Parley's environment: what a program needs
 * to find itself, its user and its locale. Everything else (the user's own keys, endpoints and proxy
 * settings of that CLI) is left out, so a back end runs only with what its configuration gives it.
 */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TERM',
  'SYSTEMROOT',
  'COMSPEC',
  'PATHEXT',
  'USERPROFILE',
  'APPDATA',
] as const;

/** The inherited part of a child process's environment, read from this process's now. */
export function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}
