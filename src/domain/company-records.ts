import { KEY_KINDS } from "./key-kinds";

/*
 * The `co:<company id>` KV records (docs/architecture.md, "The heartbeat's
 * company records"): what a member's heartbeat reads of a company — its
 * record's update time and its roster — without D1. Written by the index
 * work (services/trust-index/current.ts, services/trust-index/companies.ts) from D1 as it is when the work is applied,
 * after every change of the company row or its roster (the commands record
 * the work; D1 triggers are the guarantee), and by the index rebuild.
 */

/** `u`: `companies.updated_at`; `f`, `a`, `b`: the roster (first person, first_at, second_at); ms. */
export type CompanyRecord = { u: number; f: number | null; a: number | null; b: number | null };

export const companyKey = KEY_KINDS.co.key;

/**
 * Put by the rebuild once every company's record is written (then the trust
 * index's own mark): from then on an absent `co:` key means "no such
 * company"; before it, the heartbeat reads D1 instead. A mark of its own, so
 * an index built before these records existed is not taken as holding them.
 */
export const COMPANIES_COMPLETE_KEY = KEY_KINDS.idx.key("companies");

/** The newest change of a company's members other than `personId` (the roster's rule, db/rosters.ts). */
export const coworkerTime = (record: CompanyRecord, personId: number): number | null =>
  record.f === personId ? record.b : record.a;
