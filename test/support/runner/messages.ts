/** What the test runner (run.ts) and its lanes (lane.ts) say to each other over IPC. */

export type ToLane = { kind: 'file'; file: string } | { kind: 'finish' };

export interface FileResult {
  file: string;
  /** The spec reporter's lines for this file. */
  report: string;
  /** One text per failed test or hook, each as mocha lists it (numbered 1; the runner renumbers). */
  failures: string[];
  passes: number;
  /** Wall time of the file, loading and hooks included. */
  ms: number;
}

export type FromLane =
  | { kind: 'ready' }
  | ({ kind: 'file-done' } & FileResult)
  /** The lane's end: the ledger reconciliation of its database and the harness stopped; failures as above. */
  | { kind: 'finished'; failures: string[]; ms: number };
