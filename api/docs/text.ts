/**
 * How documentation text and questions are cut into search terms: lower case, split on anything
 * that is not a letter or digit (so `sensitive_data` and `X-API-Key` split into words), common
 * English words dropped, and each word reduced to its stem (Porter's algorithm), so "verifying
 * signatures" and "verify a signature" meet.
 */

const STOP_WORDS = new Set(
  (
    'a about above after again all also am an and any are as at be because been before being below between both but by can ' +
    'could did do does doing done down during each few for from further get gets got had has have having he her here hers how ' +
    'i if in into is it its itself just let lets me more most my myself no nor not now of off on once only or other our ours ' +
    'out over own same she should so some such than that the their theirs them then there these they this those through to ' +
    'too under until up very via want was we were what when where which while who whom why will with would you your yours ' +
    'yourself please tell way ways need'
  ).split(' '),
);

export function tokenize(text: string): string[] {
  return text.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/** One search term per meaningful word, or null for words that carry no meaning. */
export function searchTerm(word: string): string | null {
  const lower = word.toLowerCase();
  if (lower.length < 2 && !/\d/.test(lower)) return null;
  if (STOP_WORDS.has(lower)) return null;
  return /^[a-z]+$/.test(lower) ? stem(lower) : lower;
}

export function searchTerms(text: string): string[] {
  return tokenize(text)
    .map(searchTerm)
    .filter((t): t is string => t !== null);
}

// ---------------------------------------------------------------------------------------------
// Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980).

const isConsonant = (w: string, i: number): boolean => {
  const c = w[i];
  if ('aeiou'.includes(c)) return false;
  if (c === 'y') return i === 0 || !isConsonant(w, i - 1);
  return true;
};

/** m(): the number of vowel-consonant sequences in the stem. */
function measure(stemPart: string): number {
  let m = 0;
  let i = 0;
  const n = stemPart.length;
  while (i < n && isConsonant(stemPart, i)) i++;
  while (i < n) {
    while (i < n && !isConsonant(stemPart, i)) i++;
    if (i >= n) break;
    m++;
    while (i < n && isConsonant(stemPart, i)) i++;
  }
  return m;
}

const hasVowel = (s: string) => [...s].some((_, i) => !isConsonant(s, i));
const endsDoubleConsonant = (s: string) =>
  s.length >= 2 && s[s.length - 1] === s[s.length - 2] && isConsonant(s, s.length - 1);
const endsCvc = (s: string) => {
  const n = s.length;
  return (
    n >= 3 && isConsonant(s, n - 3) && !isConsonant(s, n - 2) && isConsonant(s, n - 1) && !'wxy'.includes(s[n - 1])
  );
};

function replaceSuffix(word: string, rules: [string, string][], minMeasure: number): string {
  for (const [suffix, replacement] of rules) {
    if (word.endsWith(suffix)) {
      const base = word.slice(0, -suffix.length);
      return measure(base) > minMeasure ? base + replacement : word;
    }
  }
  return word;
}

const STEP2: [string, string][] = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['bli', 'ble'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
  ['logi', 'log'],
];
const STEP3: [string, string][] = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];
const STEP4 = [
  'al',
  'ance',
  'ence',
  'er',
  'ic',
  'able',
  'ible',
  'ant',
  'ement',
  'ment',
  'ent',
  'ion',
  'ou',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
];

export function stem(word: string): string {
  if (word.length <= 2) return word;
  let w = word;
  // Step 1a
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (!w.endsWith('ss') && w.endsWith('s')) w = w.slice(0, -1);
  // Step 1b
  let extra = false;
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else if (w.endsWith('ed') && hasVowel(w.slice(0, -2))) {
    w = w.slice(0, -2);
    extra = true;
  } else if (w.endsWith('ing') && hasVowel(w.slice(0, -3))) {
    w = w.slice(0, -3);
    extra = true;
  }
  if (extra) {
    if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
    else if (endsDoubleConsonant(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1);
    else if (measure(w) === 1 && endsCvc(w)) w += 'e';
  }
  // Step 1c
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = w.slice(0, -1) + 'i';
  // Steps 2 and 3
  w = replaceSuffix(w, STEP2, 0);
  w = replaceSuffix(w, STEP3, 0);
  // Step 4
  for (const suffix of STEP4) {
    if (w.endsWith(suffix)) {
      const base = w.slice(0, -suffix.length);
      if (measure(base) > 1 && (suffix !== 'ion' || /[st]$/.test(base))) w = base;
      break;
    }
  }
  // Step 5
  if (w.endsWith('e')) {
    const base = w.slice(0, -1);
    const m = measure(base);
    if (m > 1 || (m === 1 && !endsCvc(base))) w = base;
  }
  if (measure(w) > 1 && endsDoubleConsonant(w) && w.endsWith('l')) w = w.slice(0, -1);
  return w;
}
