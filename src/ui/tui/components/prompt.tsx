import { Box, Text, useInput, useStdin } from 'ink';
import { useEffect, useRef, useState } from 'react';
import { complete, type CompletionSources } from '../commands.js';

export interface PromptProps {
  /** A line was entered. */
  onSubmit: (line: string) => void;
  /** Esc: interrupt the running turn (the line is cleared when nothing runs). */
  onInterrupt: () => boolean;
  /** Ctrl+C on an empty line. */
  onExit: () => void;
  /** Ctrl+O. */
  onToggleDetails: () => void;
  sources: CompletionSources;
  width: number;
  /** False while another part of the screen takes the keys (an approval request); default true. */
  active?: boolean;
  /** Esc twice on an empty line, with no turn to interrupt: the rewind picker. */
  onRewind?: () => void;
  /** Text the line takes, to edit (a rewound message); a new `serial` replaces what is typed. */
  prefill?: { text: string; serial: number };
}

/** Two Esc presses this close together on an empty line are Esc Esc. */
const DOUBLE_ESCAPE_MS = 800;

interface Line {
  value: string;
  cursor: number;
}

const EMPTY: Line = { value: '', cursor: 0 };

/**
 * The input line: editing keys (←/→, Home/End, Ctrl+A/E/U/K/W, Backspace), ↑/↓ through earlier
 * lines, Tab completion of commands and names (candidates listed below when several fit).
 */
export function Prompt({
  onSubmit,
  onInterrupt,
  onExit,
  onToggleDetails,
  sources,
  width,
  active = true,
  onRewind,
  prefill,
}: PromptProps) {
  const [line, setLine] = useState<Line>(EMPTY);
  const [candidates, setCandidates] = useState<string[]>([]);
  const history = useRef<string[]>([]);
  const position = useRef<number | undefined>(undefined);
  // Keys can arrive faster than renders (a paste, a test writing several keys): edit the latest line, not the rendered one.
  const current = useRef<Line>(EMPTY);
  const update = (next: Line) => {
    current.current = next;
    setLine(next);
  };
  /** When Esc was last pressed on an empty line with nothing to interrupt (for Esc Esc). */
  const lastEscape = useRef<number | undefined>(undefined);

  useEffect(() => {
    if (prefill === undefined) return;
    update({ value: prefill.text, cursor: prefill.text.length });
    setCandidates([]);
    position.current = undefined;
  }, [prefill?.serial]);

  // Two Esc sent in one read reach useInput as one key (Ink cannot tell them apart there): the
  // raw input shows them.
  const { internal_eventEmitter: input } = useStdin();
  useEffect(() => {
    if (!active || !onRewind) return;
    const onData = (data: string) => {
      if (data !== '\u001b\u001b' || current.current.value !== '') return;
      lastEscape.current = undefined;
      // useInput saw it as one Esc (which interrupts a running turn); the controller opens nothing while one runs.
      onRewind();
    };
    input.on('input', onData);
    return () => {
      input.off('input', onData);
    };
  }, [active, onRewind, input]);

  useInput(
    (input, key) => {
      const { value, cursor } = current.current;
      if (key.ctrl && input === 'c') {
        if (value !== '') update(EMPTY);
        else onExit();
        return;
      }
      if (key.ctrl && input === 'o') {
        onToggleDetails();
        return;
      }
      if (!key.escape) lastEscape.current = undefined;
      const submit = (text: string) => {
        update(EMPTY);
        setCandidates([]);
        position.current = undefined;
        if (text.trim() === '') return;
        if (history.current.at(-1) !== text) history.current.push(text);
        onSubmit(text);
      };
      if (key.return) return submit(value);
      if (key.escape) {
        const empty = value === '';
        setCandidates([]);
        if (onInterrupt()) {
          lastEscape.current = undefined;
          return;
        }
        update(EMPTY);
        if (!empty) {
          lastEscape.current = undefined;
          return;
        }
        const now = Date.now();
        if (lastEscape.current !== undefined && now - lastEscape.current <= DOUBLE_ESCAPE_MS) {
          lastEscape.current = undefined;
          onRewind?.();
        } else lastEscape.current = now;
        return;
      }
      if (key.tab) return completeLine(value);
      if (key.upArrow || key.downArrow) {
        const entries = history.current;
        if (entries.length === 0) return;
        let index = position.current ?? entries.length;
        index = key.upArrow ? Math.max(0, index - 1) : index + 1;
        if (index >= entries.length) {
          position.current = undefined;
          update(EMPTY);
          return;
        }
        position.current = index;
        const entry = entries[index]!;
        update({ value: entry, cursor: entry.length });
        return;
      }
      if (key.leftArrow) return update({ value, cursor: Math.max(0, cursor - 1) });
      if (key.rightArrow) return update({ value, cursor: Math.min(value.length, cursor + 1) });
      if (key.home || (key.ctrl && input === 'a')) return update({ value, cursor: 0 });
      if (key.end || (key.ctrl && input === 'e')) return update({ value, cursor: value.length });
      if (key.ctrl && input === 'u') return update({ value: value.slice(cursor), cursor: 0 });
      if (key.ctrl && input === 'k') return update({ value: value.slice(0, cursor), cursor });
      if (key.ctrl && input === 'w') {
        const start = value.slice(0, cursor).replace(/\S+\s*$/, '').length;
        return update({ value: value.slice(0, start) + value.slice(cursor), cursor: start });
      }
      // Most terminals send DEL for Backspace, which Ink reports as `delete`.
      if (key.backspace || key.delete) {
        if (cursor === 0) return;
        return update({ value: value.slice(0, cursor - 1) + value.slice(cursor), cursor: cursor - 1 });
      }
      if (key.ctrl || key.meta || input === '') return;
      // Several keys in one chunk (a paste, or keys sent faster than they are read): Tab completes
      // where it stands; a line break at the very end is Enter, one inside becomes a space, so a
      // paste never sends several messages.
      const tokens = input.match(/\r\n?|\n|\t|[^\r\n\t]+/g) ?? [];
      tokens.forEach((token, index) => {
        const line = current.current;
        if (token === '\t') return completeLine(line.value);
        if (/^[\r\n]/.test(token)) {
          if (index === tokens.length - 1) return submit(line.value);
          return insert(line, ' ');
        }
        insert(line, token.replace(/[\u0000-\u001f\u007f]/g, ''));
      });
    },
    { isActive: active },
  );

  function insert(line: Line, text: string): void {
    if (text === '') return;
    setCandidates([]);
    update({
      value: line.value.slice(0, line.cursor) + text + line.value.slice(line.cursor),
      cursor: line.cursor + text.length,
    });
  }

  function completeLine(value: string): void {
    const result = complete(value, sources);
    update({ value: result.value, cursor: result.value.length });
    setCandidates(result.candidates);
  }

  const before = line.value.slice(0, line.cursor);
  const at = line.value.slice(line.cursor, line.cursor + 1) || ' ';
  const after = line.value.slice(line.cursor + 1);
  return (
    <Box flexDirection="column" width={width}>
      <Text>
        <Text color="cyan" bold>
          ❯{' '}
        </Text>
        {before}
        <Text inverse>{at}</Text>
        {after}
        {line.value === '' ? <Text color="gray"> Type a message, or /help for commands</Text> : null}
      </Text>
      {candidates.length > 0 ? (
        <Text color="gray" wrap="truncate-end">
          {candidates.join('  ')}
        </Text>
      ) : null}
    </Box>
  );
}

/** Rows the prompt takes at `width` columns (for the live area's height budget). */
export function promptRows(valueLength: number, width: number): number {
  return Math.max(1, Math.ceil((valueLength + 3) / Math.max(1, width)));
}
