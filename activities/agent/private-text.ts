/**
 * An agent-market provider's private texts (its system prompt and prompt template) kept out of what
 * a consumer reads. Whatever the model writes — answers, structured data, stated goals, tool-call
 * arguments, extract answers — is masked before it is stored, logged, sent anywhere or handed to the
 * workflow: every stretch that repeats a private text is replaced with PRIVATE_TEXT_PLACEHOLDER.
 *
 * What counts as repeating (docs/agent-market.md "How private the prompts are"):
 * - a run of PRIVATE_RUN_WORDS consecutive words of a private text, compared word by word: case,
 *   punctuation, spacing and line breaks between the words do not matter, nor URL (%20, +), HTML
 *   (&amp;) or JSON (\n) escapes between them. A word is a run of letters, digits and combining
 *   marks; a Chinese or Japanese character counts as a word of its own;
 * - a part of a private text shorter than that (between two `{{placeholders}}`, say) but of at least
 *   PRIVATE_MIN_WORDS words, repeated whole;
 * - a run of PRIVATE_RUN_CHARS consecutive characters of a private text, exactly as written (long
 *   codes or identifiers without word breaks).
 * Not private: web addresses in the texts (the run's steps show the pages the agent opens anyway)
 * and the values a run fills into `{{placeholders}}` (the consumer's own inputs). A paraphrase, a
 * translation, a summary or an encoding other than those above is not recognised: the model is told
 * to keep its instructions confidential, but no filter can catch what it rewords.
 */
export const PRIVATE_TEXT_PLACEHOLDER = '[private instructions]';
export const PRIVATE_RUN_WORDS = 8;
export const PRIVATE_MIN_WORDS = 4;
export const PRIVATE_RUN_CHARS = 40;

export interface PrivateTextGuard {
  /** Whether there is anything to protect (false: mask and maskIn return their input). */
  readonly active: boolean;
  mask(text: string): string;
  /** mask over every string of a JSON value (object keys stay); the value keeps its shape. */
  maskIn<T>(value: T): T;
}

const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}`;
/**
 * Escapes are skipped as separators (group-less alternatives); group 1 is one CJK character, group 2
 * a word. Linear: every alternative consumes what it matches and none can backtrack into another.
 */
const TOKEN = new RegExp(
  String.raw`%[0-9A-Fa-f]{2}|&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z]+);|\\(?:u[0-9A-Fa-f]{4}|[nrtbf])|([${CJK}])|((?:(?![${CJK}])[\p{L}\p{N}\p{M}])+)`,
  'gu',
);
const WORDISH = /[\p{L}\p{N}]/u;
const PLACEHOLDER = /\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}/g;
const WEB_ADDRESS = /\b(?:https?|wss?):\/\/[^\s"'<>()[\]{}]+/gi;

interface Token {
  word: string;
  start: number;
  end: number;
}

function tokens(text: string): Token[] {
  const found: Token[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const word = match[1] ?? match[2];
    if (word !== undefined)
      found.push({
        word: word.normalize('NFKC').toLowerCase(),
        start: match.index!,
        end: match.index! + match[0].length,
      });
  }
  return found;
}

/** The parts of a private text that are protected: split at placeholders and web addresses. */
function protectedParts(text: string): string[] {
  return text
    .replace(PLACEHOLDER, '\u0000')
    .replace(WEB_ADDRESS, '\u0000')
    .split('\u0000')
    .filter((part) => part.trim() !== '');
}

const NO_GUARD: PrivateTextGuard = { active: false, mask: (text) => text, maskIn: (value) => value };

/** The guard of a run whose private texts are `texts` (empty and absent ones ignored). */
export function privateTextGuard(texts: readonly (string | null | undefined)[]): PrivateTextGuard {
  /** Word sequences to find, by their length in words. */
  const phrases = new Map<number, Set<string>>();
  const vocabulary = new Set<string>();
  const charRuns = new Set<string>();
  for (const part of texts.flatMap((text) => (text ? protectedParts(text) : []))) {
    const words = tokens(part).map((t) => t.word);
    const length = Math.min(words.length, PRIVATE_RUN_WORDS);
    if (length >= PRIVATE_MIN_WORDS) {
      const set = phrases.get(length) ?? new Set<string>();
      phrases.set(length, set);
      for (let i = 0; i + length <= words.length; i++) set.add(words.slice(i, i + length).join(' '));
      for (const word of words) vocabulary.add(word);
    }
    const trimmed = part.trim();
    for (let i = 0; i + PRIVATE_RUN_CHARS <= trimmed.length; i++) charRuns.add(trimmed.slice(i, i + PRIVATE_RUN_CHARS));
  }
  if (phrases.size === 0 && charRuns.size === 0) return NO_GUARD;

  const mask = (text: string): string => {
    if (!text) return text;
    const spans: [number, number][] = [];
    const found = tokens(text);
    for (const [length, set] of phrases) {
      for (let i = 0; i + length <= found.length; i++) {
        if (!vocabulary.has(found[i].word)) continue;
        const run = found.slice(i, i + length);
        if (set.has(run.map((t) => t.word).join(' '))) spans.push([run[0].start, run[length - 1].end]);
      }
    }
    if (charRuns.size > 0) {
      for (let i = 0; i + PRIVATE_RUN_CHARS <= text.length; i++) {
        if (charRuns.has(text.slice(i, i + PRIVATE_RUN_CHARS))) spans.push([i, i + PRIVATE_RUN_CHARS]);
      }
    }
    if (spans.length === 0) return text;
    spans.sort((a, b) => a[0] - b[0]);
    let masked = '';
    let at = 0;
    let current: [number, number] | null = null;
    for (const span of spans) {
      // Overlapping spans, or spans with nothing but spacing and punctuation between them, become one.
      if (current && (span[0] <= current[1] || !WORDISH.test(text.slice(current[1], span[0])))) {
        current[1] = Math.max(current[1], span[1]);
        continue;
      }
      if (current) {
        masked += text.slice(at, current[0]) + PRIVATE_TEXT_PLACEHOLDER;
        at = current[1];
      }
      current = [span[0], span[1]];
    }
    masked += text.slice(at, current![0]) + PRIVATE_TEXT_PLACEHOLDER + text.slice(current![1]);
    return masked;
  };

  const maskValue = (value: unknown): unknown => {
    if (typeof value === 'string') return mask(value);
    if (Array.isArray(value)) return value.map(maskValue);
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, maskValue(inner)]));
    return value;
  };

  return { active: true, mask, maskIn: <T>(value: T) => maskValue(value) as T };
}
