import { useEffect, useState, useSyncExternalStore } from 'react';
import { PendingApprovals, type ApprovalClient, type PendingApprovalsState } from '../../protocol/index.js';

/** The approval requests waiting in the client's channel (followed from mount to unmount), and how to answer them. */
export function useApprovals(client: ApprovalClient): { approvals: PendingApprovalsState; pending: PendingApprovals } {
  const [pending] = useState(() => new PendingApprovals(client));
  const approvals = useSyncExternalStore(pending.subscribe, pending.getState);
  useEffect(() => {
    pending.start();
    return () => pending.stop();
  }, [pending]);
  return { approvals, pending };
}
