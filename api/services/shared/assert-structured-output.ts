import { validateStructuredOutputSpec } from '../../../lib/llm/structured-output';
import { badRequest } from '../../errors';

/** The semantic checks of `structured_output` beyond its JSON Schema shape: field types, ids, schema compilation. */
export function assertStructuredOutput(spec: unknown): void {
  if (spec === undefined) return;
  const problems = validateStructuredOutputSpec(spec);
  if (problems.length)
    throw badRequest(
      'structured_output is invalid',
      problems.map((message) => ({ path: 'body/structured_output', message })),
    );
}
