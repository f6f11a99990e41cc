// Reading HTTP/1.1 responses off a raw socket, for the load generators that write requests themselves
// (bench/list-load.ts, bench/scale-mixed-load.ts): a response is read just far enough to count it.

/** How much of `buf` one complete response takes, with its status and body; undefined until it has all arrived. */
export function parseResponse(buf: Buffer): { length: number; status: number; body: string } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.toString('latin1', 0, end);
  const match = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!match) throw new Error(`a response without Content-Length: ${head}`);
  const length = end + 4 + Number(match[1]);
  if (buf.length < length) return undefined;
  return { length, status: Number(head.slice(9, 12)), body: buf.toString('utf8', end + 4, length) };
}
