import type { LlmReview, LlmVerdict } from '../../lib/market/llm-review';

const VERDICT_TEXT: Record<LlmVerdict, string> = {
  benign: 'Benign',
  suspicious: 'Suspicious',
  malicious: 'Malicious',
  unavailable: 'Unavailable (the review failed; the rules decided alone)',
};
const VERDICT_TONE: Record<LlmVerdict, string> = {
  benign: 'good',
  suspicious: 'warn',
  malicious: 'bad',
  unavailable: 'meta',
};

/**
 * The listing gate's LLM second opinion (report.llmReview: lib/market/llm-review.ts) as terms of a validation
 * report's `<dl>`: its verdict in words, its reason and the text it quoted, and the model. Nothing when the
 * operator configured no review (MARKET_SCAN_LLM_MODEL). Every value is the model's text, escaped as JSX does.
 */
export function LlmReviewFacts(props: { review: LlmReview | undefined; idPrefix?: string }) {
  const { review } = props;
  if (!review) return null;
  const id = (name: string) => (props.idPrefix ? `${props.idPrefix}-${name}` : name);
  return (
    <>
      <dt>LLM review</dt>
      <dd id={id('llm-review')}>
        <span class={`badge ${VERDICT_TONE[review.verdict]}`} id={id('llm-verdict')}>
          {VERDICT_TEXT[review.verdict]}
        </span>{' '}
        <span id={id('llm-reason')}>{review.reason}</span>
        {review.evidence && (
          <>
            {' Quoted: '}
            <q id={id('llm-evidence')}>{review.evidence}</q>
          </>
        )}
        <span class="meta">{` (${review.model}; a second opinion: the rules' findings stand whatever it says)`}</span>
      </dd>
    </>
  );
}
