import { groupBy } from "../lib/group";
import { iso } from "../lib/time";
import type { LinkCard, LinkedPerson } from "./contact-links";
import { KEY_KINDS } from "./key-kinds";

/*
 * A contact as the API shows it (docs/decisions.md, "Contacts"), from the contact as its owner's
 * object stores it and the platform people its phones and emails name. The Worker renders it
 * (services/contacts.ts) from the index's links or D1's; the owner's object renders a page itself
 * when it keeps every link the page needs (objects/person/contact-listing.ts), so the page crosses
 * the RPC once, as the answer's text. One renderer for both: the same bytes, so the same `ETag`.
 */

/** The collections `include` can add to a listed contact, by their write names (docs/decisions.md, "Contacts"). */
export const CONTACT_COLLECTIONS = ["emails", "phone_numbers", "addresses"] as const;
export type ContactCollection = (typeof CONTACT_COLLECTIONS)[number];

/** The API's Contact as read (OpenAPI component `Contact`; docs/decisions.md, "Contacts"). */
export type Contact = {
  id: number;
  profile_icon: string;
  display_name: string;
  birthday: string | null;
  email?: string[];
  phone?: string[];
  address?: string[];
  risk_score: number;
  labels: string[];
  user_id: number | null;
  connected: boolean;
  e2ee: boolean;
  created: string;
  updated: string;
};

/** A contact as its owner's object stores it (objects/person/api.ts `StoredContact`; times in ms). */
export type ContactFields = {
  id: number;
  displayName: string;
  birthday: string | null;
  labels: string[];
  emails: string[];
  phones: string[];
  addresses: string[];
  createdAt: number;
  updatedAt: number;
};

/** A platform person one of a page's phones or emails names, with what their link shows. */
export type LinkMatch = {
  value: string;
  via: "phone" | "email";
  personId: number;
  avatarUrl: string | null;
  riskScore: number;
  e2ee: number;
  /** 1: the person knows the owner (the same person, a shared company, or they trusted the owner). */
  known: number;
};

/** A page's phone or email with its index key (`num:<e164>`, `eml:<email>`). */
export type ValueKey = { value: string; via: "phone" | "email"; key: string };

/** The index keys of these phones and emails, phones first. */
export const valueKeysOf = (phones: string[], emails: string[]): ValueKey[] => [
  ...phones.map((value) => ({ value, via: "phone" as const, key: KEY_KINDS.num.key(value) })),
  ...emails.map((value) => ({ value, via: "email" as const, key: KEY_KINDS.eml.key(value) })),
];

/**
 * The people each value's links name (`linksOf(key)`), each known to owner `ownerId` when it is the
 * owner, shares one of the owner's companies (`owner`, the owner's card) or is among `trustedMe`.
 */
export function linkMatches(
  ownerId: number,
  owner: LinkCard,
  valueKeys: ValueKey[],
  linksOf: (key: string) => LinkedPerson[] | undefined,
  trustedMe: number[],
): LinkMatch[] {
  const ownCompanies = owner.c;
  return valueKeys.flatMap(({ value, via, key }) =>
    (linksOf(key) ?? []).map(({ personId, card }) => {
      const known =
        personId === ownerId ||
        card.c.some((company) => ownCompanies.includes(company)) ||
        trustedMe.includes(personId);
      return { value, via, personId, avatarUrl: card.a, riskScore: card.r, e2ee: card.e, known: known ? 1 : 0 };
    }),
  );
}

/**
 * The people among `rows` whose knowing the owner the read could not decide: none when `trustedMeOf`
 * is absent (the read's `trustedMe` named everyone who trusted the owner), else those not known that
 * `trustedMeOf` does not answer for.
 */
export function unresolvedOf(rows: LinkMatch[], trustedMeOf: number[] | undefined): number[] {
  if (trustedMeOf === undefined) return [];
  return [...new Set(rows.filter((m) => !m.known && !trustedMeOf.includes(m.personId)).map((m) => m.personId))];
}

/**
 * The contacts `items` as the API shows them, in their order: each linked to the lowest person id
 * its phones and emails name (`rows`; an email links only a person who knows the owner), the
 * avatar and risk score only of a person who knows the owner (`known`, or among `trustedAmong`),
 * with the collections named in `include`.
 */
export function contactsView(
  items: ContactFields[],
  rows: LinkMatch[],
  trustedAmong: number[],
  include: ReadonlySet<ContactCollection>,
): Contact[] {
  const trusted = new Set(trustedAmong);
  // An email links only a person who knows the owner.
  const matches = rows.flatMap((match) => {
    const known = match.known || trusted.has(match.personId) ? 1 : 0;
    return match.via === "email" && !known ? [] : [{ ...match, known }];
  });
  const byValue = groupBy(matches, (match) => match.value);
  return items.map((stored) => {
    // The lowest person id any of its values names (phones first: the first of equals wins).
    let link: LinkMatch | undefined;
    if (byValue.size > 0) {
      for (const values of [stored.phones, stored.emails]) {
        for (const value of values) {
          for (const match of byValue.get(value) ?? [])
            if (link === undefined || match.personId < link.personId) link = match;
        }
      }
    }
    const contact: Contact = {
      id: stored.id,
      profile_icon: (link?.known && link.avatarUrl) || "",
      display_name: stored.displayName,
      birthday: stored.birthday,
      risk_score: link?.known ? link.riskScore : 0,
      labels: stored.labels,
      user_id: link?.personId ?? null,
      connected: link !== undefined,
      e2ee: Boolean(link?.e2ee),
      created: iso(new Date(stored.createdAt))!,
      updated: iso(new Date(stored.updatedAt))!,
    };
    if (include.has("emails")) contact.email = stored.emails;
    if (include.has("phone_numbers")) contact.phone = stored.phones;
    if (include.has("addresses")) contact.address = stored.addresses;
    return contact;
  });
}
