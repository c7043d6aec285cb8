import { MarketRuleError } from './errors';

/**
 * The review state machine, shared by the tool market and the agent market:
 *
 *   draft ──submit──> pending_review ──approve──> approved ──disable──> disabled
 *     ^                     │
 *     └──update── rejected <┘ reject (with a reason)
 *
 * `update` (full replacement) is allowed in draft and rejected, and puts the entry back in draft;
 * `delete` (by the owner) too, and frees the slug when no other submission of the listing uses it.
 * An approved entry changes only through a revision: a new draft that copies it, with
 * parentEntryId; approving the revision makes it the live listing under the same public id.
 */
export type Market = 'mcp' | 'agent';
export const MARKETS: readonly Market[] = ['mcp', 'agent'];

export type SubmissionStatus = 'draft' | 'pending_review' | 'approved' | 'rejected' | 'disabled';
export const SUBMISSION_STATUSES: readonly SubmissionStatus[] = [
  'draft',
  'pending_review',
  'approved',
  'rejected',
  'disabled',
];

export type SubmissionAction = 'update' | 'submit' | 'approve' | 'reject' | 'disable' | 'revise' | 'delete';
export type ReviewAction = 'approve' | 'reject' | 'disable';

const TRANSITIONS: Record<
  SubmissionAction,
  { from: readonly SubmissionStatus[]; to: SubmissionStatus | null; refusal: string }
> = {
  update: {
    from: ['draft', 'rejected'],
    to: 'draft',
    refusal: 'only draft and rejected submissions can be updated; change an approved entry through a revision',
  },
  submit: { from: ['draft'], to: 'pending_review', refusal: 'only a draft can be submitted for review' },
  approve: { from: ['pending_review'], to: 'approved', refusal: 'only a submission pending review can be approved' },
  reject: { from: ['pending_review'], to: 'rejected', refusal: 'only a submission pending review can be rejected' },
  disable: { from: ['approved'], to: 'disabled', refusal: 'only an approved entry can be disabled' },
  revise: { from: ['approved'], to: null, refusal: 'only an approved entry can be revised' },
  delete: { from: ['draft', 'rejected'], to: null, refusal: 'only draft and rejected submissions can be deleted' },
};

/** The status after `action`, or 409 invalid_state naming the current status. `revise` leaves the source as it is; `delete` removes it. */
export function transition(action: SubmissionAction, from: SubmissionStatus): SubmissionStatus {
  const rule = TRANSITIONS[action];
  if (!rule.from.includes(from))
    throw new MarketRuleError(409, 'invalid_state', `The submission is ${from}: ${rule.refusal}`);
  return rule.to ?? from;
}
