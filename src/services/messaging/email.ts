import { NotSent, type Sender } from "./message";

/**
 * An email through Cloudflare Email Service: the `send_email` binding `EMAIL` (wrangler.toml) and
 * `env.EMAIL.send({from, to, subject, text})`. Under `wrangler dev` the binding writes the message to
 * .wrangler/tmp/email/ and sends nothing.
 */
export const emailSender =
  (binding: SendEmail, from: string): Sender =>
  async ({ to, subject, body }) => {
    try {
      await binding.send({ from, to, subject: subject ?? "Your verification code", text: body });
    } catch (err) {
      throw new NotSent("unavailable", `the email service refused the message: ${String((err as Error).message)}`);
    }
  };
