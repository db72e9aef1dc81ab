/**
 * Ids of the rows a person's object keeps (docs/decisions.md, "Activity ids").
 * No database hands them out, so they are made of time: the millisecond
 * times 2,048, plus the allocating person's id modulo 2,048 in the low bits.
 * - Within one feed ids strictly increase: a new id is above the feed's
 *   newest (`after`), even when the clock stands still or goes back.
 * - A chat takes one id in both parties' feeds: the sender's object asks for
 *   one above the newest of both (Lamport-style), see Person.sendChat.
 * - Two people's ids differ unless their person ids are equal modulo 2,048
 *   and they allocate in the same millisecond; rows moved in from D1 keep
 *   their (far smaller) D1 ids.
 * The largest id until the year 2100 is about 8.5e15: a safe integer, at
 * most 16 digits.
 */
export const ID_SLOTS = 2048;

/** The smallest id above `after` (and no older than now) in the slot of person `personId`. */
export function nextId(personId: number, after: number, now = Date.now()): number {
  const slot = personId % ID_SLOTS;
  const floor = Math.max(after + 1, now * ID_SLOTS);
  return floor + ((slot - (floor % ID_SLOTS) + ID_SLOTS) % ID_SLOTS);
}
