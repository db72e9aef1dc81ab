/** A Telnyx Call Control envelope's event type and payload; both undefined for any other body. */
function envelope(body: unknown): { event: unknown; payload: unknown } {
  const data = (body as { data?: unknown } | null)?.data as
    { event_type?: unknown; payload?: unknown } | null | undefined;
  return { event: data?.event_type, payload: data?.payload };
}

/**
 * Whether `body` asks about a ringing call: anything but a Call Control envelope of another event.
 * A Call Control application posts every event of every call to its one webhook URL (`call.answered`,
 * `call.hangup`, …, and `call.initiated` of its outgoing calls); only an incoming `call.initiated`
 * is a call ringing a member (docs/providers.md).
 */
export function isRingingCall(body: unknown): boolean {
  const { event, payload } = envelope(body);
  if (typeof event !== "string") return true;
  const direction = (payload as { direction?: unknown } | null | undefined)?.direction;
  return event === "call.initiated" && (direction === undefined || direction === "incoming");
}

/**
 * Telnyx Call Control's webhook (`{"data": {"event_type": "call.initiated",
 * "payload": {"to", "from", …}}}`, docs/providers.md) read as the lookup's
 * own fields: `to`/`from` as `To`/`From`, and the caller's verification.
 * Anything that is not such an envelope gives {}.
 */
export function callControlFields(body: unknown): Record<string, unknown> {
  const { payload } = envelope(body);
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return {};
  const { to, from, shaken_stir_attestation, shaken_stir_validated } = payload as Record<string, unknown>;
  return { To: to, From: from, shaken_stir_attestation, shaken_stir_validated };
}
