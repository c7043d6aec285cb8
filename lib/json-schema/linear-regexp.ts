import { RE2JS } from 're2js';

/**
 * Regular expressions of schemas the platform does not own (`pattern`, `patternProperties`,
 * `propertyNames.pattern`), run on RE2 (re2js, a pure-JavaScript port): matching time grows linearly
 * with the input, whatever the pattern, so `^(a+)+$` cannot stall a process the way a backtracking
 * engine (JavaScript's RegExp) does. This is ajv's `code.regExp` engine for such schemas.
 *
 * JSON Schema patterns are ECMA-262 regular expressions; RE2 accepts the common syntax and refuses,
 * with UnsupportedPatternError, what cannot run in linear time: backreferences (`\1`, `\k<name>`)
 * and lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`). `\uXXXX` and `\u{X…}` escapes are translated to
 * RE2's `\x{…}`. Where the two differ, RE2's meaning applies (`\s` is ASCII whitespace; `.` matches
 * `\r`). A pattern that compiles to more than MAX_PATTERN_PROGRAM_SIZE instructions (e.g. a long
 * bounded repetition like `.{1,5000}`) is refused too: linear, but with a large factor.
 */
export class UnsupportedPatternError extends Error {
  override readonly name = 'UnsupportedPatternError';
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(
      `pattern ${JSON.stringify(pattern.length > 200 ? `${pattern.slice(0, 200)}…` : pattern)} cannot be used: ${reason}`,
    );
  }
}

export const MAX_PATTERN_PROGRAM_SIZE = 3_000;

const FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0 };

const HEX4 = /^[0-9A-Fa-f]{4}/;
const BRACED = /^\{([0-9A-Fa-f]{1,6})\}/;
const LOW_SURROGATE = /^\\u([dD][c-fC-F][0-9A-Fa-f]{2})/;

/** ECMA-262 `\uXXXX` (a surrogate pair as one code point) and `\u{X…}` escapes as RE2's `\x{…}`; everything else as it is. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char !== '\\') {
      out += char;
      continue;
    }
    if (pattern[i + 1] === 'u') {
      const rest = pattern.slice(i + 2);
      const braced = BRACED.exec(rest);
      if (braced) {
        out += `\\x{${braced[1]}}`;
        i += 1 + braced[0].length;
        continue;
      }
      const hex = HEX4.exec(rest);
      if (hex) {
        let codePoint = parseInt(hex[0], 16);
        i += 5;
        const low = codePoint >= 0xd800 && codePoint <= 0xdbff ? LOW_SURROGATE.exec(pattern.slice(i + 1)) : null;
        if (low) {
          codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (parseInt(low[1], 16) - 0xdc00);
          i += 6;
        }
        out += `\\x{${codePoint.toString(16)}}`;
        continue;
      }
    }
    // Any other escape (or a trailing backslash) is RE2's to read.
    out += char + (pattern[i + 1] ?? '');
    i++;
  }
  return out;
}

function explain(message: string): string {
  if (/invalid escape sequence: `\\[1-9k]/.test(message))
    return 'backreferences are not supported (patterns run on a linear-time engine, RE2)';
  if (/`\(\?(=|!|<=|<!)/.test(message))
    return 'lookahead and lookbehind are not supported (patterns run on a linear-time engine, RE2)';
  return `${message} (patterns run on a linear-time engine with RE2 syntax)`;
}

/** Compiles `pattern` for RE2 with ajv's flags ("u", or ""); throws UnsupportedPatternError. */
export function compileLinearPattern(pattern: string, flags = ''): RE2JS {
  let bits = 0;
  for (const flag of flags) {
    if (!(flag in FLAGS))
      throw new UnsupportedPatternError(pattern, `the regular expression flag "${flag}" is not supported`);
    bits |= FLAGS[flag];
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(toRe2Syntax(pattern), bits);
  } catch (error) {
    throw new UnsupportedPatternError(pattern, explain((error as Error).message));
  }
  if (compiled.programSize() > MAX_PATTERN_PROGRAM_SIZE) {
    throw new UnsupportedPatternError(
      pattern,
      `it is too complex (${compiled.programSize()} instructions; at most ${MAX_PATTERN_PROGRAM_SIZE}): use a shorter pattern, or maxLength for lengths`,
    );
  }
  return compiled;
}

/** What ajv's `code.regExp` option takes: `(pattern, flags) => { test(string) }`, plus the code that names it in standalone output. */
export interface LinearRegExpEngine {
  (pattern: string, flags: string): { test(input: string): boolean; toString(): string };
  code: string;
}

/**
 * ajv's `code.regExp`. ajv keys the compiled expressions of a schema by `String(expression)`, so
 * each one's `toString()` is its own pattern and flags (two patterns must never share a key).
 */
export const linearRegExp: LinearRegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = compileLinearPattern(pattern, flags);
    const key = `re2:${JSON.stringify([pattern, flags])}`;
    return { test: (input: string) => compiled.test(input), toString: () => key };
  },
  { code: `require(${JSON.stringify(__filename)}).linearRegExp` },
);
