import { and, asc, desc, eq } from "drizzle-orm";
import { personPhones } from "../db/schema";
import { clientIdentity, type TwimlDial } from "../lib/twiml";
import type { Deps } from "./deps";

/**
 * Where a trusted call answered in TwiML is put through (docs/providers.md,
 * "Answering in TwiML"), as the deployment chose (`TWIML_DIAL`): the app's
 * calling identity (`TWIML_CLIENT_IDENTITY`, no read), or the member's own
 * phone — a phone they confirmed themselves, their primary one first (one D1
 * read, only in that mode; a phone only their employer entered is never
 * dialled, docs/decisions.md "Who is trusted"); a member without a confirmed
 * phone is dialled as a client.
 */
export async function dialFor(deps: Deps, userId: number): Promise<TwimlDial> {
  const client: TwimlDial = { kind: "client", identity: clientIdentity(deps.twiml.identity, userId) };
  if (deps.twiml.dial !== "number") return client;
  const phone = await deps.db
    .select({ e164: personPhones.e164 })
    .from(personPhones)
    .where(and(eq(personPhones.personId, userId), eq(personPhones.confirmed, true)))
    .orderBy(desc(personPhones.primary), asc(personPhones.id))
    .limit(1)
    .get();
  return phone ? { kind: "number", e164: phone.e164 } : client;
}
