/**
 * The terminal UI's first frame in plain ANSI, kept in step with TitleBar's text before the first
 * connection. `parley` paints it before loading the TUI's modules (most of its start-up), so the
 * user sees Parley at once; Ink's first frame replaces it. Nothing is imported here, on purpose.
 * Returns the eraser, which acts once however often it is called.
 */
export function paintSplash(): () => void {
  process.stdout.write('\u001b[1mParley\u001b[22m \u001b[33m●\u001b[39m Connecting | No draft | Agents: 0\n');
  let erased = false;
  return () => {
    if (erased) return;
    erased = true;
    process.stdout.write('\u001b[1A\r\u001b[2K');
  };
}
