/**
 * Telnyx Call Control's webhook (`{"data": {"event_type": "call.initiated",
 * "payload": {"to", "from", …}}}`, docs/providers.md) read as the lookup's
 * own fields: `to`/`from` as `To`/`From`, and the caller's verification.
 * Anything that is not such an envelope gives {}.
 */
/**
 * Whether `body` asks about a ringing call: anything but a Call Control envelope of another event.
 * A Call Control application posts every event of every call to its one webhook URL (`call.answered`,
 * `call.hangup`, …, and `call.initiated` of its outgoing calls); only an incoming `call.initiated`
 * is a call ringing a member (docs/providers.md).
 */
export function isRingingCall(body: unknown): boolean {
  const data = (body as { data?: unknown } | null)?.data;
  const event = (data as { event_type?: unknown } | null | undefined)?.event_type;
  if (typeof event !== "string") return true;
  const direction = ((data as { payload?: unknown }).payload as { direction?: unknown } | null | undefined)?.direction;
  return event === "call.initiated" && (direction === undefined || direction === "incoming");
}

export function callControlFields(body: unknown): Record<string, unknown> {
  const data = (body as { data?: unknown } | null)?.data;
  const payload = (data as { payload?: unknown } | null | undefined)?.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return {};
  const { to, from, shaken_stir_attestation, shaken_stir_validated } = payload as Record<string, unknown>;
  return { To: to, From: from, shaken_stir_attestation, shaken_stir_validated };
}
