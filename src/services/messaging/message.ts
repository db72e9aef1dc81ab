/*
 * A message to a person's phone or mailbox (docs/security.md, "Codes"): one interface, one module per
 * way out — Twilio's or Telnyx's messaging API for SMS, Cloudflare Email Service for email, and the
 * development outbox where none is configured.
 */

export type Channel = "sms" | "email";

export type Message = {
  channel: Channel;
  /** E.164 for SMS, an email address for email. */
  to: string;
  /** Email only. */
  subject?: string;
  body: string;
};

/** Sends one message; throws `NotSent` when the way out refused or failed. */
export type Sender = (message: Message) => Promise<void>;

/**
 * The message did not leave: `unavailable` (a timeout, a 5xx, a 429, or nothing configured) answers
 * 503, `refused` (the provider's 4xx: a bad number, an unverified sender) 502. Either way the code
 * stays valid and nothing else was written.
 */
export class NotSent extends Error {
  constructor(
    readonly kind: "unavailable" | "refused",
    /** What the client is told: the provider, its status and its error code, never its own words. */
    detail: string,
    /** The provider's answer (at most 300 characters), for the operator's log only, masked there. */
    readonly providerText = "",
  ) {
    super(detail);
    this.name = "NotSent";
  }
}

/** How long a provider has to answer. */
export const SEND_TIMEOUT_MS = 10_000;

/** A provider's HTTP answer turned into `NotSent` when it is not a success. */
export async function expectAccepted(provider: string, send: () => Promise<Response>): Promise<void> {
  let answer: Response;
  try {
    answer = await send();
  } catch (err) {
    const timeout = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    throw new NotSent(
      "unavailable",
      `${provider} did not answer${timeout ? ` within ${SEND_TIMEOUT_MS / 1000} s` : ""}`,
    );
  }
  if (answer.ok) {
    await answer.body?.cancel();
    return;
  }
  // Read whole for its error code (an error answer is a few hundred bytes; 16 KiB at most is read),
  // kept cut to 300 characters for the log.
  const text = (await answer.text().catch(() => "")).slice(0, 16_384);
  const kind = answer.status >= 500 || answer.status === 429 ? "unavailable" : "refused";
  const code = errorCodeOf(text);
  throw new NotSent(kind, `${provider} answered ${answer.status}${code ? ` (error ${code})` : ""}`, text.slice(0, 300));
}

/**
 * The provider's error code in its JSON answer (Twilio's `code`, Telnyx's `errors[0].code`): what a
 * client may be told. The answer's own words can name the deployment's sender or account, so they
 * stay in the operator's log.
 */
function errorCodeOf(text: string): string | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const record = (body ?? {}) as { code?: unknown; errors?: { code?: unknown }[] };
  const code = record.code ?? (Array.isArray(record.errors) ? record.errors[0]?.code : undefined);
  return typeof code === "number" || (typeof code === "string" && /^[\w.-]{1,32}$/.test(code)) ? String(code) : null;
}
