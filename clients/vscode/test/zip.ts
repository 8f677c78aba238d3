// Just enough of the zip format to read a .vsix: the central directory and stored/deflated entries.
import * as zlib from 'node:zlib';

export interface ZipEntry {
  name: string;
  /** Unix mode from the external attributes, when the archiver recorded one (0 otherwise). */
  mode: number;
  read(): Buffer;
}

export function readZip(data: Buffer): Map<string, ZipEntry> {
  let eocd = -1;
  for (let i = data.length - 22; i >= Math.max(0, data.length - 65557); i--) {
    if (data.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip file: no end of central directory');
  const count = data.readUInt16LE(eocd + 10);
  let at = data.readUInt32LE(eocd + 16);
  const entries = new Map<string, ZipEntry>();
  for (let n = 0; n < count; n++) {
    if (data.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central directory entry at ${at}`);
    const method = data.readUInt16LE(at + 10);
    const compressedSize = data.readUInt32LE(at + 20);
    const nameLength = data.readUInt16LE(at + 28);
    const extraLength = data.readUInt16LE(at + 30);
    const commentLength = data.readUInt16LE(at + 32);
    const external = data.readUInt32LE(at + 38);
    const local = data.readUInt32LE(at + 42);
    const name = data.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    entries.set(name, {
      name,
      mode: external >>> 16,
      read() {
        if (data.readUInt32LE(local) !== 0x04034b50) throw new Error(`bad local header for ${name}`);
        const start = local + 30 + data.readUInt16LE(local + 26) + data.readUInt16LE(local + 28);
        const raw = data.subarray(start, start + compressedSize);
        if (method === 0) return Buffer.from(raw);
        if (method === 8) return zlib.inflateRawSync(raw);
        throw new Error(`${name}: unsupported compression method ${method}`);
      },
    });
  }
  return entries;
}
