import { describe, expect, it } from 'vitest';
import {
  METHOD_NAMES,
  NOTIFICATION_NAMES,
  methods,
  notifications,
  RpcError,
  RpcErrorCode,
  rpcCodeForParleyCode,
  classifyInbound,
} from '../../src/protocol/index.js';

describe('the method table', () => {
  it("has seed 000's methods and every method the clients need, in snake_case", () => {
    const expected = [
      'draft',
      'undraft',
      'get_draft_status',
      'submit_prompt',
      'list_projects',
      'create_project',
      'list_tasks',
      'create_task',
      'list_roles',
      'list_sessions',
      'get_session',
      'get_messages',
      'get_checkpoint',
      'clear_messages',
      'get_events',
      'subscribe',
      'unsubscribe',
      'cancel',
      'force_compact',
      'get_compaction_status',
      'preview_request',
      'fork_session',
      // the history tree
      'rewind',
      'edit_message',
      'list_branches',
      'switch_branch',
      'restore_checkpoint',
      'archive_session',
      'list_agents',
      'kill_agent',
      'say_in_conversation',
      'search_sessions',
      'server_info',
      'answer_permission',
      'get_permissions',
      'set_permission_mode',
      'get_notification_settings',
      'send_test_notification',
      // goals on a draft
      'set_goal',
      'stop_goal',
      'get_goal',
      // moving a draft to another back end from any client
      'list_backends',
      // durable runs
      'list_runs',
      'get_run',
      'start_run',
      'answer_prompt',
      'send_to_run',
      'pause_run',
      'resume_run',
      'abort_run',
      'fork_run',
      'subscribe_runs',
      'unsubscribe_runs',
      'list_schedules',
      'get_schedule',
      'add_schedule',
      'pause_schedule',
      'resume_schedule',
      'remove_schedule',
      'create_pairing',
      'list_devices',
      'revoke_device',
      'update_session',
    ];
    expect([...METHOD_NAMES].sort()).toEqual([...expected].sort());
    for (const name of METHOD_NAMES) expect(name).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  it("has seed 000's notifications and the session events", () => {
    expect([...NOTIFICATION_NAMES].sort()).toEqual(
      [
        'channel_message',
        'draft_status',
        'context_compacted',
        'draft_closed',
        'agent_status',
        'goal_status',
        'session_updated',
        'session_event',
        'history_changed',
        'compaction_started',
        'compaction_completed',
        'compaction_failed',
        'permission_requested',
        'permission_resolved',
        'run_updated',
        'run_event',
        'run_prompt',
        'schedule_updated',
        'schedule_removed',
        'attention_needed',
      ].sort(),
    );
  });

  it("keeps seed 000's params and results", () => {
    expect(methods.draft.params.safeParse({ role: 'product-analyst', project: 'parley', task: 'auth' }).success).toBe(
      true,
    );
    expect(methods.undraft.params.safeParse({}).success).toBe(true);
    expect(methods.get_draft_status.params.safeParse({}).success).toBe(true);
    expect(methods.submit_prompt.params.safeParse({ content: 'hi', role: 'dev', taskSlug: 'auth' }).success).toBe(true);
    expect(methods.undraft.result.safeParse({ sessionId: 's', taskSlug: 't', turns: 2, cost: 0.5 }).success).toBe(true);
    expect(
      notifications.draft_status.params.safeParse({
        sessionId: 's',
        role: 'dev',
        turnCount: 1,
        costUsd: 0.1,
        contextPct: 34,
        lastActivity: 'x',
      }).success,
    ).toBe(true);
    expect(
      notifications.context_compacted.params.safeParse({ sessionId: 's', preTokens: 1000, trigger: 'auto' }).success,
    ).toBe(true);
  });

  it('maps the run errors as the other domain errors: not found, invalid state, unsupported', () => {
    expect(rpcCodeForParleyCode('RUN_NOT_FOUND')).toBe(RpcErrorCode.NOT_FOUND);
    expect(rpcCodeForParleyCode('UNKNOWN_PROMPT')).toBe(RpcErrorCode.NOT_FOUND);
    expect(rpcCodeForParleyCode('PROMPT_ALREADY_ANSWERED')).toBe(RpcErrorCode.INVALID_STATE);
    expect(rpcCodeForParleyCode('RUNS_NOT_ENABLED')).toBe(RpcErrorCode.UNSUPPORTED);
  });

  it('carries a run without input, and refuses an answer_prompt without a response', () => {
    const run = {
      id: 'run-1',
      harness: 'h',
      workflow: { ref: 'w.ts', path: '/p/w.ts' },
      status: 'waiting',
      phases: [],
      agents: [],
      journalLength: 0,
      pendingPrompts: [
        {
          promptId: 'p1',
          prompt: 'Go?',
          choices: ['yes', 'no'],
          askedAt: '2026-01-01T00:00:00.000Z',
          deadline: '2026-01-01T01:00:00.000Z',
        },
      ],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(methods.get_run.result.safeParse({ run }).success).toBe(true);
    expect(methods.answer_prompt.params.safeParse({ runId: 'run-1', promptId: 'p1' }).success).toBe(false);
    expect(methods.answer_prompt.result.safeParse({ accepted: false }).success).toBe(false);
    expect(
      notifications.run_event.params.safeParse({
        runId: 'run-1',
        event: { type: 'phase:start', name: 'review', timestamp: '2026-01-01T00:00:00.000Z' },
      }).success,
    ).toBe(true);
  });

  it('refuses unknown keys and ids that could leave the data folder', () => {
    expect(methods.undraft.params.safeParse({ force: true }).success).toBe(false);
    for (const bad of ['../etc', '..', '.hidden', 'a/b', 'a\\b', '', 'x'.repeat(201), 'a..b']) {
      expect(methods.get_session.params.safeParse({ sessionId: bad }).success, bad).toBe(false);
      expect(methods.draft.params.safeParse({ role: 'dev', project: 'p', task: bad }).success, bad).toBe(false);
    }
  });
});

describe('error codes', () => {
  it("are seed 000's and JSON-RPC's numbers", () => {
    expect(RpcErrorCode).toMatchObject({
      PARSE_ERROR: -32700,
      INVALID_REQUEST: -32600,
      METHOD_NOT_FOUND: -32601,
      INVALID_PARAMS: -32602,
      INTERNAL_ERROR: -32603,
      NOT_FOUND: -32001,
      DRAFT_ALREADY_ACTIVE: -32004,
      NO_ACTIVE_DRAFT: -32005,
      TURN_IN_PROGRESS: -32006,
      UNSUPPORTED: -32007,
    });
    expect(new Set(Object.values(RpcErrorCode)).size).toBe(Object.values(RpcErrorCode).length);
  });

  it("map the draft layer's string codes as the contract says; unknown typed codes keep their string", () => {
    expect(rpcCodeForParleyCode('DRAFT_ALREADY_ACTIVE')).toBe(-32004);
    expect(rpcCodeForParleyCode('NO_ACTIVE_DRAFT')).toBe(-32005);
    expect(rpcCodeForParleyCode('NOT_FOUND')).toBe(-32001);
    expect(rpcCodeForParleyCode('INVALID_INPUT')).toBe(-32602);
    expect(rpcCodeForParleyCode('TURN_IN_PROGRESS')).toBe(-32006);
    expect(rpcCodeForParleyCode('UNSUPPORTED')).toBe(-32007);
    expect(rpcCodeForParleyCode('SOMETHING_NEW')).toBe(RpcErrorCode.SERVER_ERROR);
  });

  it('round-trip through the wire factory', () => {
    const error = new RpcError(-32004, 'Draft already active', { code: 'DRAFT_ALREADY_ACTIVE', fault: 'user' });
    const rebuilt = RpcError.fromWire(JSON.parse(JSON.stringify(error.toWire())) as never, 'draft');
    expect(rebuilt.code).toBe(-32004);
    expect(rebuilt.codeName).toBe('DRAFT_ALREADY_ACTIVE');
    expect(rebuilt.fault).toBe('user');
    expect(rebuilt.message).toBe('Draft already active');
  });
});

describe('classifyInbound', () => {
  it('tells responses, notifications and junk apart', () => {
    expect(classifyInbound({ jsonrpc: '2.0', id: 1, result: null }).kind).toBe('response');
    expect(classifyInbound({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'x' } }).kind).toBe('response');
    expect(classifyInbound({ jsonrpc: '2.0', method: 'draft_status', params: {} }).kind).toBe('notification');
    expect(classifyInbound([1]).kind).toBe('invalid');
    expect(classifyInbound({ jsonrpc: '1.0', id: 1, result: 1 }).kind).toBe('invalid');
  });
});
