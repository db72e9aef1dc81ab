/**
 * Telnyx Call Control's webhook (`{"data": {"event_type": "call.initiated",
 * "payload": {"to", "from", …}}}`, docs/providers.md) read as the lookup's
 * own fields: `to`/`from` as `To`/`From`, and the caller's verification.
 * Anything that is not such an envelope gives {}.
 */
export function callControlFields(body: unknown): Record<string, unknown> {
  const data = (body as { data?: unknown } | null)?.data;
  const payload = (data as { payload?: unknown } | null | undefined)?.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return {};
  const { to, from, shaken_stir_attestation, shaken_stir_validated } = payload as Record<string, unknown>;
  return { To: to, From: from, shaken_stir_attestation, shaken_stir_validated };
}
