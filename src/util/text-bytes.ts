/*
 * Node's decoder turns Latin-1, UTF-16 or binary bytes into U+FFFD without a word, and a NUL marks a
 * binary file (or /proc's lists): both are refused with the byte offset, before any parsing.
 */

const strict = new TextDecoder('utf-8', { fatal: true });

/** Where the first invalid UTF-8 sequence starts (0-based), or -1. Only called once decoding failed. */
function firstInvalid(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i]!;
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > b.length) return i;
    try {
      strict.decode(b.subarray(i, i + n));
    } catch {
      return i;
    }
    i += n;
  }
  return -1;
}

const hex = (c: number) => `0x${c.toString(16).padStart(2, '0')}`;

/** The text of `bytes`, or a reason it is not UTF-8 text ("byte 17 (0xe9) is not UTF-8 …"). */
export function decodeText(bytes: Uint8Array): { text: string } | { problem: string } {
  const bom16 = bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
  if (bom16) return { problem: 'it is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8' };
  const nul = bytes.indexOf(0);
  let text: string;
  try {
    text = strict.decode(bytes);
  } catch {
    const at = firstInvalid(bytes);
    if (nul >= 0 && nul < at) return { problem: nulProblem(nul) };
    return { problem: `it is not UTF-8 text: byte ${at + 1} (${hex(bytes[at]!)}) starts no UTF-8 character (Latin-1? convert it: iconv -f latin1 -t utf-8)` };
  }
  if (nul >= 0) return { problem: nulProblem(nul) };
  return { text };
}

function nulProblem(at: number): string {
  return `it is not UTF-8 text: byte ${at + 1} is a NUL byte (UTF-16 or binary?)`;
}
