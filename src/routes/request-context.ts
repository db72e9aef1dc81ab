import type { Context } from "hono";
import type { CodeSettings } from "../services/codes";
import type { AppEnv } from "../types";

/** The client's IP as Cloudflare reports it (`CF-Connecting-IP`), for per-client limits. */
export const clientIp = (c: Context<AppEnv>) => c.req.header("CF-Connecting-IP") ?? "unknown";

/** The deployment's code settings with this request's host (the SMS's Web OTP line, `@host #code`). */
export const codeSettings = (c: Context<AppEnv>): CodeSettings => ({
  ...c.var.deps.codes,
  host: new URL(c.req.url).hostname,
});
