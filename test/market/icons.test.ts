import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import { useHarness, type Harness } from '../support/stack/harness';
import { createSubmission, storeValidation, submissionBody } from '../support/market';

function png(
  width: number,
  height: number,
  fill: (i: number) => number = (i) => (i * 37) % 256,
  colorType: 2 | 6 = 6,
): Buffer {
  const image = new PNG({ width, height, colorType, inputColorType: 6 });
  for (let i = 0; i < image.data.length; i++) image.data[i] = fill(i);
  return PNG.sync.write(image, { colorType });
}

/** An Adam7-interlaced RGBA PNG (pngjs writes none), every scanline unfiltered. */
function interlacedPng(width: number, height: number): Buffer {
  const passes = [
    [0, 0, 8, 8],
    [4, 0, 8, 8],
    [0, 4, 4, 8],
    [2, 0, 4, 4],
    [0, 2, 2, 4],
    [1, 0, 2, 2],
    [0, 1, 1, 2],
  ];
  const rows: Buffer[] = [];
  for (const [x0, y0, dx, dy] of passes) {
    const columns = Math.ceil((width - x0) / dx);
    for (let y = y0; y < height && columns > 0; y += dy) {
      const row = Buffer.alloc(1 + columns * 4);
      for (let i = 1; i < row.length; i++) row[i] = (y * 31 + i * 7) % 256;
      rows.push(row);
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 6, 0, 0, 1], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The chunks of a PNG: offset of each chunk, its type and data range. */
function chunks(bytes: Buffer) {
  const out: { offset: number; type: string; dataStart: number; length: number }[] = [];
  for (let offset = 8; offset < bytes.length;) {
    const length = bytes.readUInt32BE(offset);
    out.push({ offset, type: bytes.toString('latin1', offset + 4, offset + 8), dataStart: offset + 8, length });
    offset += 12 + length;
  }
  return out;
}

/** Damages the compressed image data but writes a correct CRC, so only a full decode can tell. */
function corruptImageData(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  const idat = chunks(copy).find((c) => c.type === 'IDAT')!;
  for (let i = 2; i < Math.min(idat.length, 40); i++) copy[idat.dataStart + i] ^= 0xa5;
  const crc = crc32(copy.subarray(idat.offset + 4, idat.dataStart + idat.length));
  copy.writeUInt32BE(crc >>> 0, idat.dataStart + idat.length);
  return copy;
}

describe('market icons', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  const upload = (apiKey: string, bytes: Buffer, extra: Record<string, unknown> = {}) =>
    h.http('POST', '/api/v1/market/icons', {
      apiKey,
      body: { fileName: 'icon.png', contentType: 'image/png', base64: bytes.toString('base64'), ...extra },
    });

  async function refusedUpload(apiKey: string, bytes: Buffer, code: string, extra: Record<string, unknown> = {}) {
    const response = await upload(apiKey, bytes, extra);
    assert.equal(response.status, 400, JSON.stringify(response.body));
    assert.equal(response.body.error.code, code, JSON.stringify(response.body));
    return response.body.error.message as string;
  }

  it('stores a PNG under the caller and serves it publicly as image/png with nosniff', async function () {
    const user = await h.createUser();
    const bytes = png(64, 48);
    const response = await upload(user.apiKey, bytes);
    assert.equal(response.status, 201, JSON.stringify(response.body));
    assert.match(response.body.iconObjectKey, /^[0-9a-f-]{36}$/);
    assert.equal(response.body.iconUrl, `${h.baseUrl}/api/v1/market/icons/${response.body.iconObjectKey}.png`);
    assert.deepEqual([response.body.width, response.body.height], [64, 48]);
    const served = await fetch(response.body.iconUrl);
    assert.equal(served.status, 200);
    assert.equal(served.headers.get('content-type'), 'image/png');
    assert.equal(served.headers.get('x-content-type-options'), 'nosniff');
    assert.ok(Buffer.from(await served.arrayBuffer()).equals(bytes));
    const interlaced = await upload(user.apiKey, interlacedPng(37, 21));
    assert.equal(interlaced.status, 201, JSON.stringify(interlaced.body));
    assert.deepEqual([interlaced.body.width, interlaced.body.height], [37, 21]);
    const row = await h.db
      .selectFrom('market_icons')
      .select(['owner_id', 'byte_size'])
      .where('id', '=', response.body.iconObjectKey)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { owner_id: user.userId, byte_size: bytes.length });
    assert.equal(
      (await fetch(`${h.baseUrl}/api/v1/market/icons/00000000-0000-4000-8000-000000000000.png`)).status,
      404,
    );
    assert.equal((await fetch(`${h.baseUrl}/api/v1/market/icons/..%2F..%2Fetc.png`)).status, 404);
  });

  it('refuses what is not a whole, valid PNG within the limits', async function () {
    // Built first: slow work between requests would let the server close the kept-alive connection under the client.
    const noise = randomBytes(300 * 300 * 4);
    const noisy = png(300, 300, (i) => noise[i], 2);
    const user = await h.createUser();
    const good = png(32, 32);
    await refusedUpload(user.apiKey, good, 'validation_failed', { contentType: 'image/jpeg' });
    await refusedUpload(user.apiKey, Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;'), 'invalid_png');
    await refusedUpload(
      user.apiKey,
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      'invalid_png',
    );
    const iend = chunks(good).find((c) => c.type === 'IEND')!;
    assert.match(await refusedUpload(user.apiKey, good.subarray(0, iend.offset), 'invalid_png'), /truncated/);
    assert.match(await refusedUpload(user.apiKey, good.subarray(0, good.length - 30), 'invalid_png'), /truncated/);
    assert.match(
      await refusedUpload(user.apiKey, Buffer.concat([good, Buffer.from('<script>alert(1)</script>')]), 'invalid_png'),
      /after its IEND/,
    );
    const badCrc = Buffer.from(good);
    badCrc[chunks(good).find((c) => c.type === 'IDAT')!.dataStart + 3] ^= 0xff;
    assert.match(await refusedUpload(user.apiKey, badCrc, 'invalid_png'), /cannot be decoded/);
    // pngjs alone decodes a corrupt stream from uninitialised memory some of the time: every try is refused.
    for (let i = 0; i < 20; i++)
      assert.match(await refusedUpload(user.apiKey, corruptImageData(good), 'invalid_png'), /cannot be decoded/);
    await refusedUpload(user.apiKey, png(8, 8), 'icon_dimensions');
    await refusedUpload(
      user.apiKey,
      png(1025, 16, () => 0),
      'icon_dimensions',
    );
    assert.ok(noisy.length > 256 * 1024 && noisy.length < 300_000, `noise PNG is ${noisy.length} bytes`);
    await refusedUpload(user.apiKey, noisy, 'icon_too_large');
    const notBase64 = await h.http('POST', '/api/v1/market/icons', {
      apiKey: user.apiKey,
      body: { fileName: 'a.png', contentType: 'image/png', base64: '*not base64*' },
    });
    assert.equal(notBase64.body.error.code, 'invalid_base64');
    assert.equal(
      await h.db
        .selectFrom('market_icons')
        .select('id')
        .where('owner_id', '=', user.userId)
        .execute()
        .then((r) => r.length),
      0,
      'nothing refused was stored',
    );
  });

  it("lets a submission use only the caller's own icons", async function () {
    const [provider, other] = [await h.createUser(), await h.createUser()];
    const mine = (await upload(provider.apiKey, png(32, 32))).body;
    const theirs = (await upload(other.apiKey, png(32, 32))).body;
    const validation = await storeValidation(h, provider.userId);
    const refused = await h.http('POST', '/api/v1/mcp-market/submissions', {
      apiKey: provider.apiKey,
      body: submissionBody(validation, { iconObjectKey: theirs.iconObjectKey }),
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'icon_not_found');
    const created = await createSubmission(
      h,
      provider.apiKey,
      submissionBody(validation, { iconObjectKey: mine.iconObjectKey }),
    );
    assert.equal(created.iconObjectKey, mine.iconObjectKey);
    assert.equal(created.iconUrl, mine.iconUrl);
    const insecure = await h.http('POST', '/api/v1/mcp-market/submissions', {
      apiKey: provider.apiKey,
      body: submissionBody(validation, { iconUrl: 'http://cdn.example/icon.png' }),
    });
    assert.equal(insecure.body.error.code, 'insecure_url');
  });
});
