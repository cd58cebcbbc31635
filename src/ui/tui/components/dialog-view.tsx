import { Box, Text, useInput } from 'ink';
import { useRef, useState } from 'react';
import type { DialogsState } from '../dialogs.js';
import type { Tone } from '../view-state.js';
import { TONE_COLOR } from './block-view.js';

export interface DialogViewProps {
  dialogs: DialogsState;
  onChoose: (index: number | undefined) => void;
  /** Ctrl+C: the input line is not listening while a dialog is open. */
  onExit: () => void;
  width: number;
  /** Rows the choices may take; a longer list scrolls with the selection. */
  maxRows: number;
}

/**
 * The open dialog: its title and lines, then the choices, ↑/↓ (or 1–9) to select, Enter to choose,
 * Esc to cancel. A disabled choice shows why instead of being chosen.
 */
export function DialogView({ dialogs, onChoose, onExit, width, maxRows }: DialogViewProps) {
  const dialog = dialogs.open;
  const [selected, setSelected] = useState(0);
  // Keys can arrive faster than renders (↑ then Enter in one read): they act on the latest selection.
  const latest = useRef(0);
  const [refusal, setRefusal] = useState<string | undefined>(undefined);
  // A new dialog starts at its own initial choice from its first frame (set while rendering, so no
  // frame shows the last dialog's selection and no key lands on it).
  const [startedSerial, setStartedSerial] = useState(-1);
  if (startedSerial !== dialogs.serial) {
    const initial = Math.max(0, Math.min(dialog?.initial ?? 0, (dialog?.choices.length ?? 1) - 1));
    setStartedSerial(dialogs.serial);
    latest.current = initial;
    setSelected(initial);
    setRefusal(undefined);
  }

  useInput(
    (input, key) => {
      if (!dialog) return;
      if (key.ctrl && input === 'c') return onExit();
      const count = dialog.choices.length;
      const pick = (index: number) => {
        const reason = dialog.choices[index]?.disabled;
        if (reason !== undefined) return setRefusal(reason);
        onChoose(index);
      };
      const at = latest.current;
      if (key.escape) return onChoose(undefined);
      if (key.upArrow) return move((at - 1 + count) % count);
      if (key.downArrow) return move((at + 1) % count);
      if (key.return) return pick(at);
      const digit = /^[1-9]$/.test(input) ? Number(input) - 1 : -1;
      if (digit >= 0 && digit < count) {
        move(digit);
        pick(digit);
      }
    },
    { isActive: dialog !== undefined },
  );

  function move(index: number): void {
    latest.current = index;
    setSelected(index);
    setRefusal(undefined);
  }

  if (!dialog) return null;
  const rows = Math.max(1, maxRows);
  const first = Math.max(0, Math.min(selected - Math.floor(rows / 2), dialog.choices.length - rows));
  const shown = dialog.choices.slice(first, first + rows);
  return (
    <Box flexDirection="column" borderStyle="round" borderColor="cyan" paddingX={1} width={Math.max(20, width - 1)}>
      <Text color="cyan" bold>
        {dialog.title}
      </Text>
      {(dialog.lines ?? []).map((line, index) => (
        <Text key={`l${index}`} bold={line.bold ?? false} wrap="truncate-end" {...toneProps(line.tone)}>
          {line.text}
        </Text>
      ))}
      <Box flexDirection="column" marginTop={1}>
        {first > 0 ? <Text color="gray">{`  ↑ ${first} more`}</Text> : null}
        {shown.map((choice, offset) => {
          const index = first + offset;
          const isSelected = index === selected;
          return (
            <Text key={`c${index}`} wrap="truncate-end" {...(choice.disabled !== undefined ? { color: 'gray' } : {})}>
              <Text color="cyan" bold>
                {isSelected ? '❯ ' : '  '}
              </Text>
              <Text inverse={isSelected}>{`${index + 1}. ${choice.label}`}</Text>
              {choice.detail !== undefined ? <Text color="gray">{`  ${choice.detail}`}</Text> : null}
            </Text>
          );
        })}
        {first + rows < dialog.choices.length ? (
          <Text color="gray">{`  ↓ ${dialog.choices.length - first - rows} more`}</Text>
        ) : null}
      </Box>
      {refusal !== undefined ? <Text color="red">{`✗ ${refusal}`}</Text> : null}
      <Text color="gray">{dialog.hint ?? '↑/↓ choose · Enter confirms · Esc cancels'}</Text>
    </Box>
  );
}

function toneProps(tone: Tone | undefined): { color?: string } {
  const color = tone !== undefined ? TONE_COLOR[tone] : undefined;
  return color !== undefined ? { color } : {};
}
