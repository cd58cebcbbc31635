// Imported first by every TUI test, before Ink loads: Ink reads CI when it loads (in CI it writes
// no live frames) and chalk reads FORCE_COLOR (the fake stdout is not a TTY; colours are asserted).
delete process.env['CI'];
delete process.env['CONTINUOUS_INTEGRATION'];
process.env['FORCE_COLOR'] = '1';
