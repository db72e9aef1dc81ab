/**
 * The network a client address stands for, in the per-client limits (the request budget, the codes
 * asked from one client): an IPv4 address as it is; an IPv6 address as the /64 it is in (one
 * subscriber's network, where any host picks a new interface id at will, so a limit per address
 * would be a limit per request); an IPv4-mapped IPv6 address as its IPv4 address. Anything that does
 * not parse (a header set by hand) counts as itself, lowercased.
 */
export function clientNetwork(address: string | undefined): string {
  if (!address) return "unknown";
  const text = address.trim().toLowerCase().replace(/%.*$/, "");
  if (!text.includes(":")) return text;
  const groups = ipv6Groups(text);
  if (!groups) return text;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 is two), or null. */
function ipv6Groups(text: string): number[] | null {
  let body = text;
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(body);
  if (dotted) {
    const bytes = dotted.slice(1).map(Number);
    if (bytes.some((byte) => byte > 255)) return null;
    body = `${body.slice(0, dotted.index)}${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const part = (half: string) => (half === "" ? [] : half.split(":"));
  const left = part(halves[0]!);
  const right = halves.length === 2 ? part(halves[1]!) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return null;
  return all.map((group) => parseInt(group, 16));
}
