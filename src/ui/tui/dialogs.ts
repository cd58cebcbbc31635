import type { NoteLine } from './view-state.js';

/**
 * A question the TUI asks with a list to choose from (the rewind picker, "conversation, files or
 * both", a branch to switch to, a checkpoint to restore): the keys go to it until it is answered
 * or cancelled, then back to the prompt. One at a time; the controller opens it and awaits the
 * answer, so a command reads as a straight line of questions.
 */

export interface DialogChoice {
  label: string;
  /** Shown dim after the label. */
  detail?: string;
  /** Why it cannot be chosen now (shown instead of choosing it). */
  disabled?: string;
}

export interface Dialog {
  title: string;
  /** Lines above the choices (what the question is about). */
  lines?: NoteLine[];
  choices: DialogChoice[];
  /** The choice selected first (default 0). */
  initial?: number;
  /** The keys, shown under the choices. */
  hint?: string;
}

export interface DialogsState {
  open?: Dialog;
  /** Bumped per dialog, so the view starts each one at its own initial choice. */
  serial: number;
}

export class Dialogs {
  private current: DialogsState = { serial: 0 };
  private readonly listeners = new Set<() => void>();
  private answer: ((index: number | undefined) => void) | undefined;

  readonly getState = (): DialogsState => this.current;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Shows `dialog` and resolves with the index chosen, or undefined when it is cancelled (Esc). A dialog still open is cancelled first. */
  ask(dialog: Dialog): Promise<number | undefined> {
    this.settle(undefined);
    return new Promise((resolve) => {
      this.answer = resolve;
      this.set({ open: dialog, serial: this.current.serial + 1 });
    });
  }

  /** The view's answer: a choice's index, or undefined for Esc. A disabled choice is not an answer. */
  readonly choose = (index: number | undefined): void => {
    const open = this.current.open;
    if (!open) return;
    if (index !== undefined && (index < 0 || index >= open.choices.length || open.choices[index]!.disabled)) return;
    this.settle(index);
  };

  /** Cancels what is open (the draft closed, the TUI stops). */
  cancel(): void {
    this.settle(undefined);
  }

  private settle(index: number | undefined): void {
    const answer = this.answer;
    this.answer = undefined;
    if (this.current.open) this.set({ serial: this.current.serial });
    answer?.(index);
  }

  private set(next: DialogsState): void {
    this.current = next;
    for (const listener of [...this.listeners]) listener();
  }
}
