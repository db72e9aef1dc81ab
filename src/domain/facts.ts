/**
 * What D1 says about a person, as their object is told it (docs/architecture.md,
 * "Fact versions"): their secure number (null: none) and the companies they
 * belong to, with D1's version of them (`people.facts_version`, which only grows).
 */
export type Facts = { personId: number; e164: string | null; companies: number[]; version: number };
