import { inflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import { ruleBroken } from './errors';

/**
 * Market icons are PNG files, checked in full before they are stored:
 * - the 8-byte PNG signature, then IHDR as the first chunk;
 * - width and height each between ICON_MIN_SIDE and ICON_MAX_SIDE pixels (read from IHDR before
 *   anything is inflated, so a small file cannot expand into a huge bitmap);
 * - a well-formed chunk sequence that ends with IEND exactly at the end of the file (a truncated
 *   file, or bytes appended after IEND, is refused);
 * - the image data (the IDAT chunks) inflated by zlib to exactly the size IHDR implies: pngjs's
 *   synchronous reader ignores a zlib error and goes on decoding uninitialised memory, so a corrupt
 *   stream would pass it some of the time;
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
  const imageData: Buffer[] = [];
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) throw invalid('The PNG is truncated (incomplete chunk)');
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) throw invalid('The PNG has a malformed chunk');
    const end = offset + 12 + length;
    if (end > bytes.length) throw invalid(`The PNG is truncated (chunk ${type} runs past the end of the file)`);
    if (type === 'IDAT') imageData.push(bytes.subarray(offset + 8, offset + 8 + length));
    offset = end;
    if (type === 'IEND') {
      ended = true;
      break;
    }
  }
  if (!ended) throw invalid('The PNG is truncated (no IEND chunk)');
  if (offset !== bytes.length) throw invalid('The PNG has data after its IEND chunk');

  const expected = rawImageBytes(bytes, width, height);
  let inflated: Buffer;
  try {
    inflated = inflateSync(Buffer.concat(imageData), { maxOutputLength: Math.max(expected, 1) + 1 });
  } catch (err) {
    throw invalid(`The PNG cannot be decoded: ${(err as Error).message}`);
  }
  if (inflated.length !== expected)
    throw invalid(`The PNG cannot be decoded: its image data has ${inflated.length} bytes, not ${expected}`);

  try {
    const decoded = PNG.sync.read(bytes, { checkCRC: true } as never);
    if (decoded.width !== width || decoded.height !== height) throw new Error('size mismatch');
  } catch (err) {
    throw invalid(`The PNG cannot be decoded: ${(err as Error).message}`);
  }
  return { width, height };
}

const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
/** Adam7 passes: first column, first row, column step, row step. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** The size of the filtered scanlines IHDR describes (one filter byte per row, per pass if interlaced). */
function rawImageBytes(bytes: Buffer, width: number, height: number): number {
  const bitDepth = bytes[24];
  const channels = CHANNELS[bytes[25]];
  if (!channels || ![1, 2, 4, 8, 16].includes(bitDepth))
    throw invalid('The PNG has an unknown colour type or bit depth');
  const rowBytes = (columns: number) => 1 + Math.ceil((columns * channels * bitDepth) / 8);
  if (bytes[28] === 0) return height * rowBytes(width);
  if (bytes[28] !== 1) throw invalid('The PNG has an unknown interlace method');
  let total = 0;
  for (const [x0, y0, dx, dy] of ADAM7) {
    const columns = Math.ceil((width - x0) / dx);
    const rows = Math.ceil((height - y0) / dy);
    if (columns > 0 && rows > 0) total += rows * rowBytes(columns);
  }
  return total;
}
