/**
 * Which URLs the service may POST webhooks to (docs/webhooks.md, "Endpoints
 * the service refuses"). Checked when a webhook is created or switched on,
 * and again before every delivery, so a rule tightened later also stops
 * deliveries to endpoints registered before.
 *
 * Outside `development` an endpoint must be `https://`, carry no
 * credentials, and name a host that is not private: not an IP literal in a
 * private, loopback, link-local, CGNAT, unique-local, multicast,
 * documentation, reserved or unspecified range in any spelling the URL
 * parser accepts (decimal `2130706433`, hex `0x7f.1`, octal `0177.0.0.1`,
 * IPv4-mapped or -embedding IPv6, a trailing dot) nor a NAT64 address; not
 * `localhost`, `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.lan`,
 * `*.localdomain` or a single-label name; not a name
 * under a wildcard-DNS service (`10.0.0.1.nip.io`, `app-127-0-0-1.sslip.io`)
 * that embeds a non-public IPv4 address, nor one of the domains that always
 * resolve to loopback (`localtest.me`, `lvh.me`).
 *
 * This is a check of the URL's text: a public name whose DNS answers a
 * private address is not caught here (Workers cannot resolve names before
 * fetching); the Worker's fetch leaves from Cloudflare's network, not from
 * ours.
 */

/** Why `endpoint` may not receive deliveries, or null when it may. */
export function endpointProblem(endpoint: string, environment: string): string | null {
  const development = environment === "development";
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "must be an absolute URL such as https://hooks.example.com/privacy";
  }
  if (url.protocol !== "https:" && !(development && url.protocol === "http:")) {
    return development ? "must be an http:// or https:// URL" : "must be an https:// URL";
  }
  if (url.username || url.password) return "must not contain credentials (user:password@)";
  if (development) return null;
  const host = privateHostReason(url.hostname);
  return host ? `must name a public host (${host})` : null;
}

/** Why a URL's `hostname` is not a public destination, or null when it is. */
export function privateHostReason(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host.startsWith("[")) {
    const groups = parseIPv6(host.slice(1, -1));
    if (!groups) return "an unreadable IPv6 address";
    return ipv6Reason(groups);
  }
  const v4 = parseIPv4(host);
  if (v4 !== null) return ipv4Reason(v4);
  const last = host.slice(host.lastIndexOf(".") + 1);
  if (last === "localhost") return "a localhost name";
  const privateSuffix = PRIVATE_SUFFIXES.find((suffix) => host === suffix || host.endsWith(`.${suffix}`));
  if (privateSuffix) return `a .${privateSuffix} name`;
  if (!host.includes(".")) return "a single-label host name";
  for (const domain of LOOPBACK_DOMAINS) {
    if (host === domain || host.endsWith(`.${domain}`)) return `${domain} always resolves to loopback`;
  }
  for (const domain of WILDCARD_DNS_DOMAINS) {
    if (host.endsWith(`.${domain}`)) return wildcardReason(host.slice(0, -domain.length - 1), domain);
  }
  return null;
}

/** Services answering `<ip>.<domain>` with that IP (dotted, dashed or hex forms). */
const WILDCARD_DNS_DOMAINS = [
  "nip.io",
  "sslip.io",
  "xip.io",
  "traefik.me",
  "backname.io",
  "nip.direct",
  "ip.addr.tools",
];
/** Domains whose every name resolves to 127.0.0.1. */
/** Names only a private network resolves (RFC 6762 `.local`, RFC 8375 `.home.arpa`, and common home-router names). */
const PRIVATE_SUFFIXES = ["local", "internal", "home.arpa", "lan", "localdomain"];

const LOOPBACK_DOMAINS = ["localtest.me", "lvh.me", "vcap.me", "lacolhost.com", "fuf.me", "127.0.0.1.nip.io"];

/**
 * `prefix` is what stands before a wildcard-DNS domain; the service resolves
 * the IPv4 address written at its end: `10.0.0.1`, `app.10.0.0.1`,
 * `app-10-0-0-1`, `app-0a000001`. Refused when that address is not public, or
 * when no address can be read (the service then answers with addresses of
 * its own choosing).
 */
function wildcardReason(prefix: string, domain: string): string | null {
  const labels = prefix.split(".");
  const candidates: string[] = [];
  if (labels.length >= 4) candidates.push(labels.slice(-4).join("."));
  const last = labels[labels.length - 1]!;
  const dashed = /(?:^|[-.])(\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})$/.exec(last);
  if (dashed) candidates.push(dashed[1]!.replaceAll("-", "."));
  const hex = /(?:^|-)([0-9a-f]{8})$/.exec(last);
  if (hex) candidates.push(String(Number.parseInt(hex[1]!, 16)));
  const addresses = candidates.map(parseIPv4).filter((v): v is number => v !== null);
  if (addresses.length === 0) return `a ${domain} name without an address`;
  for (const address of addresses) {
    const reason = ipv4Reason(address);
    if (reason) return `${reason} behind ${domain}`;
  }
  return null;
}

/**
 * An IPv4 address as the URL standard reads a host: one to four parts
 * separated by dots, each decimal, `0x` hex or `0`-prefixed octal, the last
 * part filling the remaining bytes. Null when `host` is not one.
 */
export function parseIPv4(host: string): number | null {
  const parts = host.split(".");
  if (parts.length > 4 || parts.some((part) => part === "")) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    let value: number;
    if (/^0x[0-9a-f]*$/i.test(part)) value = part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) value = Number.parseInt(part.slice(1), 8);
    else if (/^(0|[1-9]\d*)$/.test(part)) value = Number(part);
    else return null;
    numbers.push(value);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return null;
  return numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), 0) + last;
}

/** [first address, prefix length, what the range is]. */
const IPV4_REFUSED: [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified address"],
  ["10.0.0.0", 8, "a private address"],
  ["100.64.0.0", 10, "a CGNAT address"],
  ["127.0.0.0", 8, "a loopback address"],
  ["169.254.0.0", 16, "a link-local address"],
  ["172.16.0.0", 12, "a private address"],
  ["192.0.0.0", 24, "a reserved address"],
  ["192.0.2.0", 24, "a documentation address"],
  ["192.168.0.0", 16, "a private address"],
  ["198.18.0.0", 15, "a benchmarking address"],
  ["198.51.100.0", 24, "a documentation address"],
  ["203.0.113.0", 24, "a documentation address"],
  ["224.0.0.0", 4, "a multicast address"],
  ["240.0.0.0", 4, "a reserved address"],
];
const IPV4_RANGES = IPV4_REFUSED.map(([first, bits, what]) => ({ first: parseIPv4(first)!, bits, what }));

function ipv4Reason(address: number): string | null {
  for (const { first, bits, what } of IPV4_RANGES) {
    const size = 2 ** (32 - bits);
    if (address >= first && address < first + size) return what;
  }
  return null;
}

/** Eight 16-bit groups, or null. Accepts `::`, a dotted IPv4 tail and a `%zone`. */
export function parseIPv6(text: string): number[] | null {
  let body = text.split("%")[0]!;
  const lastColon = body.lastIndexOf(":");
  if (lastColon < 0) return null;
  const tail = body.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(tail) ? parseIPv4(tail) : null;
    if (v4 === null) return null;
    body = `${body.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const groups = [...head, ...rest];
  if (groups.some((group) => !/^[0-9a-f]{1,4}$/i.test(group))) return null;
  if (halves.length === 1 ? groups.length !== 8 : groups.length > 7) return null;
  const zeros = new Array<string>(halves.length === 2 ? 8 - groups.length : 0).fill("0");
  return [...head, ...zeros, ...rest].map((group) => Number.parseInt(group, 16));
}

function ipv6Reason(g: number[]): string | null {
  const embedded = () => g[6]! * 65536 + g[7]!;
  const zeroUntil = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUntil(8)) return "an unspecified address";
  if (zeroUntil(7) && g[7] === 1) return "a loopback address";
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible): the IPv4 address decides.
  if (zeroUntil(5) && (g[5] === 0xffff || g[5] === 0)) {
    const reason = ipv4Reason(embedded());
    return reason ? `${reason} inside IPv6` : null;
  }
  // NAT64 (64:ff9b::/96 well-known, 64:ff9b:1::/48 local-use, RFC 6052 / 8215): a translator
  // reaches an IPv4 address of someone's network through it, whatever address it embeds.
  if (g[0] === 0x64 && g[1] === 0xff9b && (g[2] === 1 || g.slice(2, 6).every((x) => x === 0))) {
    return "a NAT64 address";
  }
  // 2002:AABB:CCDD::/48 (6to4) embeds a.b.c.d in groups 1 and 2.
  if (g[0] === 0x2002) {
    const reason = ipv4Reason(g[1]! * 65536 + g[2]!);
    return reason ? `${reason} inside IPv6` : null;
  }
  if ((g[0]! & 0xfe00) === 0xfc00) return "a unique-local address";
  if ((g[0]! & 0xffc0) === 0xfe80 || (g[0]! & 0xffc0) === 0xfec0) return "a link-local address";
  if ((g[0]! & 0xff00) === 0xff00) return "a multicast address";
  if ((g[0] === 0x2001 && g[1] === 0x0db8) || (g[0]! & 0xfff0) === 0x3ff0) return "a documentation address";
  if (g[0] === 0x2001 && g[1] === 0) return "a Teredo address";
  if (g[0] === 0x0100 && zeroUntil(4)) return "a discard address";
  if (zeroUntil(1)) return "a reserved address";
  return null;
}
