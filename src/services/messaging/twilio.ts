import { expectAccepted, SEND_TIMEOUT_MS, type Sender } from "./message";

/** Twilio's credentials (Worker secrets, .dev.vars.example). */
export type TwilioAccount = { accountSid: string; authToken: string; from: string; baseUrl?: string };

/**
 * An SMS through Twilio's Messages API: `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` with
 * form fields `To`, `From` (or `MessagingServiceSid` for an `MG…` sender) and `Body`, HTTP Basic auth
 * with the account SID and auth token (https://www.twilio.com/docs/messaging/api/message-resource).
 */
export const twilioSms =
  ({ accountSid, authToken, from, baseUrl = "https://api.twilio.com" }: TwilioAccount): Sender =>
  async ({ to, body }) => {
    const form = new URLSearchParams({ To: to, Body: body });
    form.set(from.startsWith("MG") ? "MessagingServiceSid" : "From", from);
    const url = `${baseUrl}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`;
    await expectAccepted("Twilio", () =>
      fetch(url, {
        method: "POST",
        headers: {
          Authorization: `Basic ${btoa(`${accountSid}:${authToken}`)}`,
          "Content-Type": "application/x-www-form-urlencoded",
          Accept: "application/json",
        },
        body: form.toString(),
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      }),
    );
  };
