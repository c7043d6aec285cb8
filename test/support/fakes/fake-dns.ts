// Network rule: listens on 127.0.0.1 and answers only over loopback.
import { createSocket, type RemoteInfo } from 'node:dgram';
import { isIP } from 'node:net';

/**
 * A real DNS server (UDP, RFC 1035 wire format) on 127.0.0.1 for the tests: it answers A and AAAA queries for the
 * names of its zone and NXDOMAIN for every other name, so that no test resolves a made-up name through the
 * machine's nameserver (DNS_SERVERS points the platform's guard here). Every query is recorded.
 */
export interface FakeDns {
  /** `127.0.0.1:port`, the DNS_SERVERS value that points at this server. */
  readonly server: string;
  readonly port: number;
  /** Adds or replaces a name's addresses (IPv4 and/or IPv6). A name with no address of a type answers NODATA for it. */
  set(name: string, addresses: string[]): void;
  /** Every query received, oldest first: the name as asked (lowercase, no trailing dot) and the record type. */
  queries(): { name: string; type: string }[];
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;
const TYPE_NAMES: Record<number, string> = {
  1: 'A',
  28: 'AAAA',
  5: 'CNAME',
  15: 'MX',
  16: 'TXT',
  33: 'SRV',
  65: 'HTTPS',
  255: 'ANY',
};
const RCODE_NXDOMAIN = 3;
const RCODE_FORMERR = 1;
const RCODE_NOTIMP = 4;
const TTL_SECONDS = 5;

function ipv4Bytes(ip: string): Buffer {
  return Buffer.from(ip.split('.').map(Number));
}

function ipv6Bytes(ip: string): Buffer {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, null];
  const groups = (part: string | null) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === null ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(group, i * 2));
  return bytes;
}

/** The question of a query: its name, type and where it ends in the packet. */
function readQuestion(packet: Buffer): { name: string; type: number; klass: number; end: number } | null {
  let offset = 12;
  const labels: string[] = [];
  for (;;) {
    if (offset >= packet.length) return null;
    const length = packet[offset];
    if (length === 0) {
      offset += 1;
      break;
    }
    if (length > 63 || offset + 1 + length > packet.length) return null; // no compression in questions
    labels.push(packet.subarray(offset + 1, offset + 1 + length).toString('latin1'));
    offset += 1 + length;
  }
  if (offset + 4 > packet.length) return null;
  return {
    name: labels.join('.').toLowerCase(),
    type: packet.readUInt16BE(offset),
    klass: packet.readUInt16BE(offset + 2),
    end: offset + 4,
  };
}

function answerPacket(
  query: Buffer,
  question: { end: number } | null,
  rcode: number,
  records: Buffer[],
  recordType: number,
): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0); // id
  const recursionDesired = query.length > 2 ? query[2] & 0x01 : 0;
  header[2] = 0x80 | 0x04 | recursionDesired; // response, authoritative, RD copied
  header[3] = 0x80 | rcode; // recursion available
  header.writeUInt16BE(question ? 1 : 0, 4);
  header.writeUInt16BE(records.length, 6);
  const questionBytes = question ? query.subarray(12, question.end) : Buffer.alloc(0);
  const answers = records.map((rdata) => {
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
    rr.writeUInt16BE(recordType, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(TTL_SECONDS, 6);
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  return Buffer.concat([header, questionBytes, ...answers]);
}

export async function startFakeDns(zone: Record<string, string[]> = {}): Promise<FakeDns> {
  const names = new Map<string, string[]>();
  const set = (name: string, addresses: string[]) => {
    for (const address of addresses)
      if (isIP(address) === 0) throw new Error(`fake DNS: ${address} is not an IP address`);
    names.set(name.toLowerCase().replace(/\.$/, ''), [...addresses]);
  };
  for (const [name, addresses] of Object.entries(zone)) set(name, addresses);
  const seen: { name: string; type: string }[] = [];

  const socket = createSocket('udp4');
  socket.on('message', (query: Buffer, from: RemoteInfo) => {
    if (query.length < 12 || query[2] & 0x80) return; // not a query
    const question = query.readUInt16BE(4) === 1 ? readQuestion(query) : null;
    let reply: Buffer;
    if (!question || question.klass !== 1) {
      reply = answerPacket(query, null, RCODE_FORMERR, [], 0);
    } else {
      seen.push({ name: question.name, type: TYPE_NAMES[question.type] ?? String(question.type) });
      const addresses = names.get(question.name);
      if (!addresses) reply = answerPacket(query, question, RCODE_NXDOMAIN, [], 0);
      else if (question.type === TYPE_A)
        reply = answerPacket(query, question, 0, addresses.filter((a) => isIP(a) === 4).map(ipv4Bytes), TYPE_A);
      else if (question.type === TYPE_AAAA)
        reply = answerPacket(query, question, 0, addresses.filter((a) => isIP(a) === 6).map(ipv6Bytes), TYPE_AAAA);
      else if (TYPE_NAMES[question.type])
        reply = answerPacket(query, question, 0, [], 0); // the name exists, no such record
      else reply = answerPacket(query, question, RCODE_NOTIMP, [], 0);
    }
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    port,
    set,
    queries: () => seen.map((q) => ({ ...q })),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
