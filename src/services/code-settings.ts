import type { Sender } from "./messaging/message";

/** SMS a day to one country when the deployment sets no `SMS_DAILY_CAP`. */
const DEFAULT_SMS_DAILY_CAP = 1_000;

/** What a deployment says about codes (wrangler.toml vars and secrets). */
export type CodeSettings = {
  key: string | undefined;
  /** Calling codes SMS may go to; null: those of the secure-number pool. */
  smsCountries: string[] | null;
  smsDailyCap: number;
  /** The host of the Web OTP line (`@host #code`). */
  host: string;
  send: Sender;
};

/** A deployment's code settings but the host, which each request names (`Deps.codes`, services/create-deps.ts). */
export const codeSettingsOf = (env: Env, send: Sender): Omit<CodeSettings, "host"> => ({
  key: env.CODE_KEY,
  smsCountries: env.SMS_COUNTRIES ? env.SMS_COUNTRIES.split(",").map((code) => code.trim().replace(/^\+/, "")) : null,
  smsDailyCap: Number(env.SMS_DAILY_CAP) > 0 ? Number(env.SMS_DAILY_CAP) : DEFAULT_SMS_DAILY_CAP,
  send,
});
