/** The deployment's push credentials (Worker secrets, src/secrets.d.ts); any may be unset. */
export type PushSecrets = Pick<
  Env,
  | "VAPID_PUBLIC_KEY"
  | "VAPID_PRIVATE_KEY"
  | "VAPID_SUBJECT"
  | "FCM_SERVICE_ACCOUNT"
  | "APNS_KEY"
  | "APNS_KEY_ID"
  | "APNS_TEAM_ID"
>;

export const pushSecretsOf = (env: Env): PushSecrets => ({
  VAPID_PUBLIC_KEY: env.VAPID_PUBLIC_KEY,
  VAPID_PRIVATE_KEY: env.VAPID_PRIVATE_KEY,
  VAPID_SUBJECT: env.VAPID_SUBJECT,
  FCM_SERVICE_ACCOUNT: env.FCM_SERVICE_ACCOUNT,
  APNS_KEY: env.APNS_KEY,
  APNS_KEY_ID: env.APNS_KEY_ID,
  APNS_TEAM_ID: env.APNS_TEAM_ID,
});
