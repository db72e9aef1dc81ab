import { expectAccepted, SEND_TIMEOUT_MS, type Sender } from "./message";

/** Telnyx's credentials (Worker secrets, .dev.vars.example). */
export type TelnyxAccount = { apiKey: string; from: string; baseUrl?: string };

/**
 * An SMS through Telnyx's Messaging API: `POST /v2/messages` with a JSON body `{from, to, text}` and
 * `Authorization: Bearer <API key>` (https://developers.telnyx.com/api/messaging/send-message).
 */
export const telnyxSms =
  ({ apiKey, from, baseUrl = "https://api.telnyx.com" }: TelnyxAccount): Sender =>
  async ({ to, body }) => {
    await expectAccepted("Telnyx", () =>
      fetch(`${baseUrl}/v2/messages`, {
        method: "POST",
        headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ from, to, text: body }),
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      }),
    );
  };
