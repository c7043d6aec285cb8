import { PNG } from 'pngjs';
import { ruleBroken } from './errors';

/**
 * Market icons are PNG files, checked in full before they are stored:
 * - the 8-byte PNG signature, then IHDR as the first chunk;
 * - width and height each between ICON_MIN_SIDE and ICON_MAX_SIDE pixels (read from IHDR before
 *   anything is inflated, so a small file cannot expand into a huge bitmap);
 * - a well-formed chunk sequence that ends with IEND exactly at the end of the file (a truncated
 *   file, or bytes appended after IEND, is refused);
 * - a full decode with pngjs, CRCs checked (corrupt image data is refused).
 */
export const ICON_MAX_BYTES = 256 * 1024;
export const ICON_MIN_SIDE = 16;
export const ICON_MAX_SIDE = 1024;

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface PngIcon {
  width: number;
  height: number;
}

const invalid = (message: string) => ruleBroken('invalid_png', message, 'body/base64');

export function checkPngIcon(bytes: Buffer): PngIcon {
  if (bytes.length === 0) throw invalid('The file is empty');
  if (bytes.length > ICON_MAX_BYTES)
    throw ruleBroken(
      'icon_too_large',
      `Icons are at most ${ICON_MAX_BYTES} bytes; this one has ${bytes.length}`,
      'body/base64',
    );
  if (bytes.length < SIGNATURE.length + 25 || !bytes.subarray(0, 8).equals(SIGNATURE))
    throw invalid('The file is not a PNG image (wrong signature)');
  if (bytes.readUInt32BE(8) !== 13 || bytes.toString('latin1', 12, 16) !== 'IHDR')
    throw invalid('The PNG does not start with an IHDR chunk');
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  if (width < ICON_MIN_SIDE || height < ICON_MIN_SIDE || width > ICON_MAX_SIDE || height > ICON_MAX_SIDE) {
    throw ruleBroken(
      'icon_dimensions',
      `Icons are ${ICON_MIN_SIDE}–${ICON_MAX_SIDE} pixels on each side; this one is ${width}×${height}`,
      'body/base64',
    );
  }

  let offset = 8;
  let ended = false;
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) throw invalid('The PNG is truncated (incomplete chunk)');
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) throw invalid('The PNG has a malformed chunk');
    const end = offset + 12 + length;
    if (end > bytes.length) throw invalid(`The PNG is truncated (chunk ${type} runs past the end of the file)`);
    offset = end;
    if (type === 'IEND') {
      ended = true;
      break;
    }
  }
  if (!ended) throw invalid('The PNG is truncated (no IEND chunk)');
  if (offset !== bytes.length) throw invalid('The PNG has data after its IEND chunk');

  try {
    const decoded = PNG.sync.read(bytes, { checkCRC: true } as never);
    if (decoded.width !== width || decoded.height !== height) throw new Error('size mismatch');
  } catch (err) {
    throw invalid(`The PNG cannot be decoded: ${(err as Error).message}`);
  }
  return { width, height };
}
