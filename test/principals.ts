import { DEMO } from "../src/fixtures/demo-world";

export type Who = keyof typeof DEMO.tokens;

/**
 * The tokens `as(who)` sends. test/setup.ts replaces them with tokens minted
 * for this test file (same principal, same scopes), so each file has its own
 * per-token rate-limit budget instead of every file sharing the demo tokens'.
 */
export const fileTokens: Record<Who, string> = { ...DEMO.tokens };
