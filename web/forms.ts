import type { WebContext } from './context';
import { PageError } from './page';

/** Forms are small: anything larger is refused before it is read whole. */
export const FORM_LIMIT_BYTES = 16 * 1024;

/** Reads an application/x-www-form-urlencoded body. */
export async function readForm(ctx: WebContext): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new PageError(415, 'Unsupported form', 'Forms are sent as application/x-www-form-urlencoded.');
  if (Number(ctx.get('content-length') || 0) > FORM_LIMIT_BYTES)
    throw new PageError(413, 'Form too large', 'The form is larger than this site accepts.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT_BYTES)
      throw new PageError(413, 'Form too large', 'The form is larger than this site accepts.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
