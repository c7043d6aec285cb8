/**
 * The step memory of browser and social agent runs: one agent_steps row per observed step (the
 * observation, then the decision's goal and actions, then the outcomes), and one agent_task_results
 * row per finished task.
 */
import type { Db } from '../connect';
import type { AgentTaskResult } from '../schema';

/** Which step: the job, the task (0-based) and the step within it. */
export interface StepKey {
  jobId: string;
  taskIndex: number;
  step: number;
}

/** What an observation writes into its step (JSON columns as JSON text). */
export interface ObservedStep {
  url: string;
  observation: string;
  screenshot: string | null;
  goal: string | null;
  actions: string;
  outcomes: string;
}

/** Writes a step's observation; a retried observation of the same step replaces the first. */
export async function saveObservedStep(db: Db, at: StepKey, values: ObservedStep): Promise<void> {
  await db
    .insertInto('agent_steps')
    .values({ job_id: at.jobId, task_index: at.taskIndex, step: at.step, ...values })
    .onConflict((oc) => oc.columns(['job_id', 'task_index', 'step']).doUpdateSet(values))
    .execute();
}

export function getStep(db: Db, at: StepKey) {
  return db
    .selectFrom('agent_steps')
    .selectAll()
    .where('job_id', '=', at.jobId)
    .where('task_index', '=', at.taskIndex)
    .where('step', '=', at.step)
    .executeTakeFirstOrThrow();
}

/** The task's steps up to and including `at.step`, in order. */
export function stepsThrough(db: Db, at: StepKey) {
  return db
    .selectFrom('agent_steps')
    .selectAll()
    .where('job_id', '=', at.jobId)
    .where('task_index', '=', at.taskIndex)
    .where('step', '<=', at.step)
    .orderBy('step')
    .execute();
}

/** A step's outcomes, when the step was observed. */
export function findStepOutcomes(db: Db, at: StepKey) {
  return db
    .selectFrom('agent_steps')
    .select('outcomes')
    .where('job_id', '=', at.jobId)
    .where('task_index', '=', at.taskIndex)
    .where('step', '=', at.step)
    .executeTakeFirst();
}

/** The run's latest observed step (by insertion). */
export function findLatestStep(db: Db, jobId: string) {
  return db
    .selectFrom('agent_steps')
    .select(['task_index', 'step'])
    .where('job_id', '=', jobId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The decision of a step (by row id): its stated goal and the actions kept (JSON text). */
export async function setStepDecision(
  db: Db,
  stepId: number,
  decision: { goal: string | null; actions: string },
): Promise<void> {
  await db.updateTable('agent_steps').set(decision).where('id', '=', stepId).execute();
}

/** The outcomes of a step's actions (JSON text). */
export async function setStepOutcomes(db: Db, at: StepKey, outcomes: string): Promise<void> {
  await db
    .updateTable('agent_steps')
    .set({ outcomes })
    .where('job_id', '=', at.jobId)
    .where('task_index', '=', at.taskIndex)
    .where('step', '=', at.step)
    .execute();
}

/** Every step of the run as its result lists them, in order. */
export function listStepSummaries(db: Db, jobId: string) {
  return db
    .selectFrom('agent_steps')
    .select(['task_index', 'step', 'url', 'goal', 'actions', 'outcomes'])
    .where('job_id', '=', jobId)
    .orderBy('id')
    .execute();
}

/** A finished task's result; a retried save replaces the first. */
export async function storeTaskResult(
  db: Db,
  jobId: string,
  taskIndex: number,
  result: AgentTaskResult,
): Promise<void> {
  await db
    .insertInto('agent_task_results')
    .values({ job_id: jobId, task_index: taskIndex, result: JSON.stringify(result) })
    .onConflict((oc) => oc.columns(['job_id', 'task_index']).doUpdateSet({ result: JSON.stringify(result) }))
    .execute();
}

/** The run's finished tasks, in task order. */
export function listTaskResults(db: Db, jobId: string) {
  return db.selectFrom('agent_task_results').selectAll().where('job_id', '=', jobId).orderBy('task_index').execute();
}
