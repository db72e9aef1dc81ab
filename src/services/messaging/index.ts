import type { Db } from "../../db/client";
import { devOutboxSender } from "./dev-outbox";
import { emailSender } from "./email";
import { NotSent, type Message, type Sender } from "./message";
import { telnyxSms } from "./telnyx";
import { twilioSms } from "./twilio";

export { NotSent, type Channel, type Message, type Sender } from "./message";

/**
 * The way out for each channel, from the deployment's configuration (src/secrets.d.ts): SMS through
 * `SMS_PROVIDER` (`twilio` or `telnyx`) with its secrets, email through the `EMAIL` binding from
 * `EMAIL_FROM`. Where a channel has none configured, development uses the outbox; production answers
 * 503 naming what is missing, and sends nothing.
 */
export function messagingOf(env: Env, db: Db): Sender {
  const outbox = env.ENVIRONMENT === "development" ? devOutboxSender(db) : null;
  const sms = smsSender(env) ?? outbox ?? unconfigured("SMS_PROVIDER and its credentials");
  const email =
    (env.EMAIL_FROM && env.EMAIL ? emailSender(env.EMAIL, env.EMAIL_FROM) : null) ??
    outbox ??
    unconfigured("EMAIL_FROM and the EMAIL binding");
  return (message: Message) => (message.channel === "sms" ? sms(message) : email(message));
}

function smsSender(env: Env): Sender | null {
  switch (env.SMS_PROVIDER) {
    case "twilio":
      if (!env.TWILIO_ACCOUNT_SID || !env.TWILIO_AUTH_TOKEN || !env.TWILIO_FROM) {
        return unconfigured("TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM");
      }
      return twilioSms({ accountSid: env.TWILIO_ACCOUNT_SID, authToken: env.TWILIO_AUTH_TOKEN, from: env.TWILIO_FROM });
    case "telnyx":
      if (!env.TELNYX_API_KEY || !env.TELNYX_FROM) return unconfigured("TELNYX_API_KEY and TELNYX_FROM");
      return telnyxSms({ apiKey: env.TELNYX_API_KEY, from: env.TELNYX_FROM });
    default:
      return null;
  }
}

const unconfigured =
  (missing: string): Sender =>
  async () => {
    throw new NotSent("unavailable", `codes cannot be sent: this deployment has no ${missing} (docs/security.md)`);
  };
