import unhomoglyph from 'unhomoglyph';
import { WELL_KNOWN_TOOL_NAMES } from './well-known-tool-names';

/**
 * Tool names that look like another tool's: the Unicode TR39 skeleton (UTS #39, section 4: NFD, each
 * character replaced by its prototype from Unicode's confusables.txt, NFD again) of a name, compared
 * with the skeletons of the listing's other tools and of well-known tool names. The character table is
 * the `unhomoglyph` package's (nodeca; generated from confusables.txt), not a hand-made one. Names are
 * NFKC-folded first, so fullwidth letters compare as the ASCII they show.
 *
 * A name is confusable when its skeleton equals another name's while the names differ (`reаd_file`
 * with a Cyrillic а against `read_file`), or when it mixes ASCII letters with letters of another
 * script that stand in for ASCII ones (`gеt_weather`): a name that reads as ASCII but is not has no
 * honest use. Names written wholly in another script (`получить_погоду`) are names, not disguises.
 */
export function skeleton(text: string): string {
  return unhomoglyph(text.normalize('NFKC').normalize('NFD')).normalize('NFD');
}

const KNOWN_BY_SKELETON = new Map<string, string>();
for (const name of WELL_KNOWN_TOOL_NAMES) {
  const key = skeleton(name);
  if (!KNOWN_BY_SKELETON.has(key)) KNOWN_BY_SKELETON.set(key, name);
}

const ASCII_LETTER = /[A-Za-z]/;
const NON_ASCII_LETTER = /[^\x00-\x7F]/u;

function isAsciiName(text: string): boolean {
  return /^[\x20-\x7E]*$/.test(text);
}

/** Why `name` looks like another tool's name, or null. */
export function confusableNameProblem(name: string, otherNames: readonly string[] = []): string | null {
  const own = skeleton(name);
  // Of two look-alikes, the plain ASCII one is the original: the finding names the disguise.
  const other = otherNames.find(
    (candidate) => candidate !== name && skeleton(candidate) === own && !(isAsciiName(name) && !isAsciiName(candidate)),
  );
  if (other) return `looks like the name of another tool of this source ("${other}") but is written differently`;
  const known = KNOWN_BY_SKELETON.get(own);
  if (known && known !== name) return `looks like the well-known tool name "${known}" but is written differently`;
  if (!isAsciiName(name) && ASCII_LETTER.test(name) && NON_ASCII_LETTER.test(name)) {
    const disguised = [...name].filter((c) => NON_ASCII_LETTER.test(c) && isAsciiName(skeleton(c)));
    if (disguised.length && isAsciiName(own))
      return `mixes ASCII letters with look-alike letters of another script (${disguised
        .map((c) => `"${c}" U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`)
        .join(', ')}): it reads as "${own}"`;
  }
  return null;
}
