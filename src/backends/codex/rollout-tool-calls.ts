import type { ToolUseBlock, UnsequencedEvent } from '../../conversation/index.js';
import { objectOf, stringOf } from '../transcripts/json.js';
import { deletionDiff, editsOfPatch, patchOfCommand } from './codex-patch.js';
import {
  blockEvent,
  commandText,
  exitCodeOf,
  legacyShellOutput,
  mergeEdits,
  outputText,
  SHELL_TOOLS,
  toolResult,
  type CommandEnd,
  type OpenCall,
  type QueueEntry,
} from './rollout-format.js';
import { RolloutOutput } from './rollout-output.js';

/**
 * The reader's tool-call family: a call (`function_call`, `custom_tool_call`, `local_shell_call`)
 * waits for its output (`*_output`, joined on `call_id`); a shell call becomes `shell` with its
 * exit code (`exec_command_end`), an `apply_patch` one call per file it touched with its diff.
 */
export abstract class RolloutToolCalls extends RolloutOutput {
  // ---------------------------------------------------------------------------------------------
  // Tool calls

  protected openCall(callId: string, name: string, input: unknown, id: string, at: number): void {
    const fields = objectOf(input) ?? {};
    const call: Omit<OpenCall, 'entry'> = { block: this.toolUse(id, callId, name, input, at) };
    if (SHELL_TOOLS.has(name)) {
      const command =
        commandText(fields['cmd']) ?? commandText(fields['command']) ?? commandText(fields['script']) ?? '';
      const cwd = stringOf(fields['workdir']) ?? stringOf(fields['working_directory']);
      const patch = patchOfCommand(command);
      if (patch !== undefined) call.patch = patch;
      else call.shell = { command, ...(cwd !== undefined ? { cwd } : {}) };
    } else if (name === 'apply_patch') {
      call.patch = stringOf(fields['input']) ?? stringOf(fields['patch']) ?? '';
    }
    const entry: QueueEntry = { event: undefined, waiting: true };
    this.queue.push(entry);
    this.calls.set(callId, { ...call, entry });
  }

  protected toolUse(id: string, toolUseId: string, name: string, input: unknown, at: number): ToolUseBlock {
    return { type: 'tool_use', id, createdAt: at, completedAt: at, toolUseId, name, input, status: 'running' };
  }

  protected callOutput(callId: string, output: unknown, id: string, at: number): void {
    const call = this.calls.get(callId);
    const { text, failed } = outputText(output);
    if (call === undefined) {
      // An output whose call this file does not hold (a fork's copied tail): shown on its own.
      const block = this.toolUse(`${id}:call`, callId || id, 'unknown', {}, at);
      block.status = failed ? 'error' : 'success';
      this.push(block);
      this.push(toolResult(id, block.toolUseId, text, at, failed, output));
      return;
    }
    this.calls.delete(callId);
    this.answered.add(callId);
    const events = call.patch !== undefined ? this.patchEvents(call, callId, text, failed, id, at) : undefined;
    if (events !== undefined) {
      call.entry.events = events;
      call.entry.waiting = false;
      this.release();
      return;
    }
    const block = call.block;
    const end = this.commandEnds.get(callId);
    this.commandEnds.delete(callId);
    if (call.shell !== undefined) {
      const exitCode = end?.exitCode ?? exitCodeOf(text);
      const isError = failed || end?.failed === true || (exitCode !== undefined && exitCode !== 0);
      block.name = 'shell';
      block.input = {
        ...(call.shell.cwd !== undefined ? { cwd: call.shell.cwd } : {}),
        command: call.shell.command,
        arguments: block.input,
      };
      block.status = isError ? 'error' : 'success';
      if (isError) block.error = exitCode !== undefined ? `exit code ${exitCode}` : text.slice(0, 500);
      block.completedAt = at;
      call.entry.event = blockEvent(block);
      call.entry.waiting = false;
      this.push(
        toolResult(id, callId, legacyShellOutput(text) ?? text, at, isError, {
          command: call.shell.command,
          ...(exitCode !== undefined ? { exitCode } : {}),
          ...(end?.durationMs !== undefined ? { durationMs: end.durationMs } : {}),
        }),
      );
      this.release();
      return;
    }
    block.status = failed ? 'error' : 'success';
    if (failed) block.error = text.slice(0, 500);
    block.completedAt = at;
    call.entry.event = blockEvent(block);
    call.entry.waiting = false;
    this.push(toolResult(id, callId, text, at, failed, output));
    this.release();
  }

  /** A command Codex reports the end of: its call's exit code, or a command of its own (a `!` command typed in the TUI). */
  protected commandEnd(callId: string | undefined, end: CommandEnd, id: string, at: number): void {
    if (callId !== undefined && this.calls.has(callId)) {
      this.commandEnds.set(callId, end);
      return;
    }
    if (callId !== undefined && this.answered.has(callId)) return;
    const command = end.command ?? '';
    const isError = end.failed === true || (end.exitCode !== undefined && end.exitCode !== 0);
    const block = this.toolUse(`${id}:call`, callId ?? id, 'shell', { command }, at);
    block.status = isError ? 'error' : 'success';
    this.push(block);
    this.push(
      toolResult(id, block.toolUseId, end.output ?? '', at, isError, {
        command,
        ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}),
      }),
    );
  }

  /** A patch as one tool call per file it touched: `write_file` for a new file, `edit_file` with the diff otherwise. */
  protected patchEvents(
    call: OpenCall,
    callId: string,
    text: string,
    outputFailed: boolean,
    id: string,
    at: number,
  ): UnsequencedEvent[] {
    const reported = this.patches.get(callId);
    this.patches.delete(callId);
    this.commandEnds.delete(callId);
    const parsed = editsOfPatch(call.patch ?? '');
    const edits = reported !== undefined && reported.edits.length > 0 ? mergeEdits(parsed, reported.edits) : parsed;
    const failed = reported?.failed ?? (outputFailed || /^(?:Exit code: [1-9]|Failed|error:)/im.test(text));
    const content = reported?.output ?? text;
    if (edits.length === 0) {
      const block = { ...call.block, name: 'apply_patch', input: { patch: call.patch }, completedAt: at };
      block.status = failed ? 'error' : 'success';
      return [blockEvent(block), blockEvent(toolResult(id, callId, content, at, failed))];
    }
    const events: UnsequencedEvent[] = [];
    edits.forEach((edit, index) => {
      const toolUseId = edits.length === 1 ? callId : `${callId}:${index}`;
      const write = edit.kind === 'add' && edit.content !== undefined;
      const input = write
        ? { path: edit.path, content: edit.content }
        : { path: edit.path, kind: edit.kind, ...(edit.movePath !== undefined ? { movePath: edit.movePath } : {}) };
      const block: ToolUseBlock = {
        ...call.block,
        id: edits.length === 1 ? call.block.id : `${call.block.id}:${index}`,
        toolUseId,
        name: write ? 'write_file' : 'edit_file',
        input,
        status: failed ? 'error' : 'success',
        completedAt: at,
      };
      const diff = edit.kind === 'delete' ? deletionDiff(edit.content ?? '') : edit.diff;
      events.push(blockEvent(block));
      events.push(
        blockEvent(
          toolResult(
            edits.length === 1 ? id : `${id}:${index}`,
            toolUseId,
            index === 0 ? content : `${edit.kind} ${edit.path}`,
            at,
            failed,
            diff !== undefined && !write ? { path: edit.movePath ?? edit.path, diff } : undefined,
          ),
        ),
      );
    });
    return events;
  }
}
