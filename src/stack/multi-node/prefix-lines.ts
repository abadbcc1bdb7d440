import { Writable } from 'node:stream';

/** A stream that writes `prefix` before every line to `to` (an agent's output says which node it is from). */
export function prefixLines(to: NodeJS.WritableStream, prefix: string): NodeJS.WritableStream {
  let atStart = true;
  return new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      const text = chunk.toString();
      let out = '';
      for (const ch of text.split(/(?<=\n)/)) {
        if (atStart) out += prefix;
        out += ch;
        atStart = ch.endsWith('\n');
      }
      to.write(out, () => cb());
    },
  });
}
