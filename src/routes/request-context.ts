import type { Context } from "hono";
import { clientNetwork } from "../lib/client-network";
import type { CodeSettings } from "../services/codes";
import type { AppEnv } from "../types";

/**
 * The client's network as Cloudflare reports its address (`CF-Connecting-IP`), for per-client limits:
 * an IPv6 client's /64 (lib/client-network.ts), as the request budget counts it.
 */
export const clientIp = (c: Context<AppEnv>) => clientNetwork(c.req.header("CF-Connecting-IP"));

/** The deployment's code settings with this request's host (the SMS's Web OTP line, `@host #code`). */
export const codeSettings = (c: Context<AppEnv>): CodeSettings => ({
  ...c.var.deps.codes,
  host: new URL(c.req.url).hostname,
});
