/**
 * Pages built to make a careless converter slow (quadratic regular expressions, per-level rebuilding, recursion).
 * Run as a script (`node -r tsx/cjs test/support/fakes/pathological-pages.ts`), it converts each in a process of its own and
 * prints the CPU time every call took, so nothing else running in the test process is counted.
 */
import { htmlToPage, needsBrowser } from '../../../lib/page/convert';

export const PATHOLOGICAL_PAGES: Record<string, () => string> = {
  'a <pre> of 300k spaces between words': () => `<html><body><pre>start${' '.repeat(300_000)}end</pre></body></html>`,
  'a <pre> line ending in 300k spaces': () => `<pre>start${' '.repeat(300_000)}\nnext line</pre>`,
  'a <pre> of 300k blank lines': () => `<pre>top${'\n'.repeat(300_000)}bottom</pre>`,
  'a paragraph with 1 MB whitespace runs of spaces, tabs and newlines': () =>
    `<p>a${' \t\n'.repeat(350_000)}b ${'\t'.repeat(100_000)} c</p>`,
  'whitespace runs around inline elements and in attributes': () =>
    `<p>${'<b> </b>  \n '.repeat(20_000)}end</p><div style=";${' '.repeat(500_000)}display:block" class="${' '.repeat(200_000)}x">styled</div>`,
  '100k nested divs': () => `${'<div>'.repeat(100_000)}deep text${'</div>'.repeat(100_000)}`,
  '100k unclosed nested list items': () => `${'<ul><li>'.repeat(100_000)}deepest item`,
  '20k nested inline elements': () => `<p>${'<span><em>'.repeat(10_000)}inner</p>`,
  '600 nested links around 1 MB of text': () => `${'<a href="/x">'.repeat(600)}${'word '.repeat(200_000)}`,
  '500 nested text-less links over 100k empty elements': () =>
    `${Array.from({ length: 500 }, (_, i) => `<a href="/link-${i}"><noscript>`).join('')}${'<i></i>'.repeat(100_000)}`,
  '500 nested blockquotes over 40k lines': () => `${'<blockquote>'.repeat(500)}${'line<br>'.repeat(40_000)}`,
  '300 nested tables': () => `${'<table><tr><td>'.repeat(300)}${'cell '.repeat(100_000)}`,
  '10 MB of text in paragraphs': () => {
    const paragraph = `<p>${'Bees forage across the city rooftops and return with pollen.\n      '.repeat(15)}</p>\n`;
    return `<!doctype html><html lang="en"><head><title>Long</title></head><body>${paragraph.repeat(Math.ceil(10_000_000 / paragraph.length))}</body></html>`;
  },
  '10 MB in one text node': () => `<p>${'lorem ipsum dolor sit amet '.repeat(400_000)}</p>`,
  'a long run of comment openers': () => `${'<!--'.repeat(100_000)}<html><body>text`,
  'a script with many location assignments': () =>
    `<html><body><script>${'location '.repeat(300_000)}</script></body></html>`,
};

export interface PathologicalResult {
  htmlBytes: number;
  /** CPU seconds of htmlToPage and of needsBrowser (text/html, and without a content type). */
  convertSeconds: number;
  needsBrowserSeconds: number;
  markdownChars: number;
  markdownHead: string;
  markdownTail: string;
  error?: string;
}

function cpuSeconds(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

export function measure(make: () => string): PathologicalResult {
  const html = make();
  let markdown = '';
  try {
    const convertSeconds = cpuSeconds(() => {
      markdown = htmlToPage(html, 'http://127.0.0.1/page').markdown;
    });
    const needsBrowserSeconds = cpuSeconds(() => {
      needsBrowser(html, 'text/html');
      needsBrowser(html, '');
    });
    return {
      htmlBytes: html.length,
      convertSeconds,
      needsBrowserSeconds,
      markdownChars: markdown.length,
      markdownHead: markdown.slice(0, 200),
      markdownTail: markdown.slice(-200),
    };
  } catch (error) {
    return {
      htmlBytes: html.length,
      convertSeconds: NaN,
      needsBrowserSeconds: NaN,
      markdownChars: 0,
      markdownHead: '',
      markdownTail: '',
      error: String(error),
    };
  }
}

if (require.main === module) {
  const results: Record<string, PathologicalResult> = {};
  for (const [name, make] of Object.entries(PATHOLOGICAL_PAGES)) results[name] = measure(make);
  process.stdout.write(JSON.stringify(results));
}
