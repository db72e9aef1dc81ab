import type { PushEvent, PushJob, PushTarget } from "../../domain/push";
import { PUSH_RETRY_MS } from "../../domain/push";
import { loggableError } from "../../lib/errors";
import { logError } from "../../lib/log";
import { endpointProblem } from "../../lib/outbound-url";
import type { Deps } from "../deps";
import type { PushSecrets } from "./secrets";
import { sendApns } from "./apns";
import { sendFcm, serviceAccountOf } from "./fcm";
import { missingSecret, type PushOutcome } from "./outcome";
import { sendWebPush } from "./web-push";

export { registerPush, unregisterPush, pushRegistrationView } from "./registrations";

/*
 * Sending a push (docs/app.md, "Push"): the `background` queue's `push` job,
 * one device and one event per message, queued by the person's object when
 * something arrived for a device with no open stream (objects/person/push.ts).
 * The kind's sender (web-push.ts, fcm.ts, apns.ts) answers an outcome
 * (outcome.ts); a 404 or 410 removes the registration (if it is still that
 * one); a retry is the queue's, with backoff, within `PUSH_RETRY_MS` of the
 * event.
 */

/** The names among `names` whose secret is unset, or null when every one is set. */
function unset(secrets: PushSecrets, names: (keyof PushSecrets)[]): string | null {
  const missing = names.filter((name) => !secrets[name]);
  return missing.length === 0 ? null : missing.join(", ");
}

/** Sends `event` to `target` with the deployment's credentials; never throws. */
export async function sendPush(
  secrets: PushSecrets,
  environment: string,
  target: PushTarget,
  event: PushEvent,
  now = Date.now(),
): Promise<PushOutcome> {
  try {
    switch (target.kind) {
      case "webpush": {
        const problem = endpointProblem(target.subscription.endpoint, environment);
        if (problem) return { result: "skipped", reason: `the subscription's endpoint ${problem}` };
        const missing = unset(secrets, ["VAPID_PUBLIC_KEY", "VAPID_PRIVATE_KEY", "VAPID_SUBJECT"]);
        if (missing) return missingSecret(missing);
        const vapid = {
          publicKey: secrets.VAPID_PUBLIC_KEY!,
          privateKey: secrets.VAPID_PRIVATE_KEY!,
          subject: secrets.VAPID_SUBJECT!,
        };
        return await sendWebPush(target, event, vapid, now);
      }
      case "fcm": {
        if (!secrets.FCM_SERVICE_ACCOUNT) return missingSecret("FCM_SERVICE_ACCOUNT");
        const account = serviceAccountOf(secrets.FCM_SERVICE_ACCOUNT);
        if (typeof account === "string") return { result: "skipped", reason: account };
        return await sendFcm(target, event, account, now);
      }
      case "apns": {
        const missing = unset(secrets, ["APNS_KEY", "APNS_KEY_ID", "APNS_TEAM_ID"]);
        if (missing) return missingSecret(missing);
        const apns = { key: secrets.APNS_KEY!, keyId: secrets.APNS_KEY_ID!, teamId: secrets.APNS_TEAM_ID! };
        return await sendApns(target, event, apns, now);
      }
    }
  } catch (err) {
    // A key that does not import, a subscription key that is not a point: nothing a retry mends.
    const { name, message } = loggableError(err);
    return { result: "skipped", reason: `${name}: ${message}` };
  }
}

/**
 * One `push` job: sent, and what follows from the answer. `retry`: the queue
 * tries the message again (backoff 1 s doubling to 60 s), while the event is
 * younger than `PUSH_RETRY_MS`. Logged without the device's address.
 */
export async function runPushJob(
  deps: Deps,
  job: PushJob,
  now = new Date(),
): Promise<{ done: Record<string, unknown>; retry: boolean }> {
  const outcome = await sendPush(deps.push, deps.environment, job.target, job.event, now.getTime());
  const fields = { deviceId: job.deviceId, push: job.target.kind, type: job.event.type };
  if (outcome.result === "gone") {
    // The push service no longer knows the device: its registration goes (unless it changed since). A
    // removal that fails is logged, not retried: the push is done, and the next event's push is
    // answered gone again and removes it then (a push never reaches the dead letters).
    await deps.objects
      .write(job.personId, (person) => person.changePush(job.deviceId, null, job.target))
      .catch((err) => logError("a dead push registration was not removed; the next push tries again", err, fields));
  }
  const late = now.getTime() - job.at >= PUSH_RETRY_MS;
  if (outcome.result === "failed" || outcome.result === "skipped" || (outcome.result === "retry" && late)) {
    const what =
      outcome.result === "retry" ? "a push failed until its retries ran out; dropped" : `push ${outcome.result}`;
    logError(what, new Error(outcome.reason), { ...fields, status: "status" in outcome ? outcome.status : null });
  }
  return {
    done: { ...fields, result: outcome.result, status: "status" in outcome ? outcome.status : null },
    retry: outcome.result === "retry" && !late,
  };
}
