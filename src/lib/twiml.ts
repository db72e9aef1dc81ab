/*
 * trust-lookup's answer in the provider's own language (docs/providers.md,
 * "Answering in TwiML"): TwiML for Twilio, TeXML for Telnyx, the same XML. A
 * voice URL pointed straight at the service gets a call flow, not JSON.
 */

const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

/** Text and attribute values escaped for XML (the five predefined entities). */
const escapeXml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[char]!,
  );

/** Where a trusted call is put through: the app's calling identity, or the member's own phone. */
export type TwimlDial = { kind: "client"; identity: string } | { kind: "number"; e164: string };

/** `<Dial>` of a trusted call. */
export const dialTwiml = (dial: TwimlDial) =>
  `${DECLARATION}<Response><Dial>${
    dial.kind === "client" ? `<Client>${escapeXml(dial.identity)}</Client>` : `<Number>${escapeXml(dial.e164)}</Number>`
  }</Dial></Response>`;

/** An untrusted or unknown call, or any refusal: the caller hears that the call was rejected. */
export const rejectTwiml = () => `${DECLARATION}<Response><Reject reason="rejected"/></Response>`;

/** `{user_id}` in the deployment's template of the calling identity (`person-{user_id}`). */
export const clientIdentity = (template: string, userId: number) => template.replaceAll("{user_id}", String(userId));

/**
 * Whether a trust-lookup asked for TwiML: `?answer=twiml` in its URL, or an
 * `Accept` header naming `application/xml` (or `text/xml`) before any JSON.
 */
export function wantsTwiml(url: string, accept: string | undefined): boolean {
  if (new URL(url).searchParams.get("answer")?.toLowerCase() === "twiml") return true;
  if (!accept) return false;
  const types = accept.split(",").map((part) => part.split(";")[0]!.trim().toLowerCase());
  const xml = types.findIndex((type) => type === "application/xml" || type === "text/xml");
  const json = types.findIndex((type) => type === "application/json");
  return xml !== -1 && (json === -1 || xml < json);
}

export const XML_CONTENT_TYPE = "application/xml";

/** The deployment's choice (wrangler.toml `TWIML_DIAL`, `TWIML_CLIENT_IDENTITY`): client unless `number`. */
export type TwimlSettings = { dial: "client" | "number"; identity: string };

export const twimlSettings = (vars: { TWIML_DIAL?: string; TWIML_CLIENT_IDENTITY?: string }): TwimlSettings => ({
  dial: vars.TWIML_DIAL === "number" ? "number" : "client",
  identity: vars.TWIML_CLIENT_IDENTITY || "person-{user_id}",
});
