import type { Discovery, MarketSourceType } from './discovery';
import type { ValidationReport, ValidationStatus } from './validation-report';

/** What the market's rules read about stored validations, verifications and icons (db/repos produce them). */
export interface ValidationRecord {
  id: string;
  ownerId: string;
  type: MarketSourceType;
  sourceFingerprint: string;
  status: ValidationStatus;
  report: ValidationReport;
  discovery: Discovery;
  createdAt: Date;
  expiresAt: Date;
}

export interface EventVerificationRecord {
  id: string;
  ownerId: string;
  runId: string;
  sourceFingerprint: string;
  eventNames: string[];
  verifiedEventNames: string[];
  createdAt: Date;
  expiresAt: Date;
}

export function verificationComplete(v: Pick<EventVerificationRecord, 'eventNames' | 'verifiedEventNames'>): boolean {
  return v.eventNames.every((name) => v.verifiedEventNames.includes(name));
}
