import { z } from "@hono/zod-openapi";

/**
 * Ids are JSON integers; path and body ids also accept numeric strings
 * (docs/decisions.md). Returns null for anything that is not a positive integer.
 */
export function parseId(value: unknown): number | null {
  if (typeof value === "number") return Number.isSafeInteger(value) && value > 0 ? value : null;
  if (typeof value === "string" && /^[0-9]{1,16}$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  }
  return null;
}

/** A positive integer id given as a number or a numeric string. */
export const IdSchema = z
  .union([z.number(), z.string()])
  .transform((value, ctx) => {
    const id = parseId(value);
    if (id === null) {
      ctx.addIssue({ code: "custom", message: "must be a positive integer id" });
      return z.NEVER;
    }
    return id;
  })
  .openapi({ type: "integer", format: "int64", minimum: 1, example: 1 });

export const pathId = (name: string, description: string) =>
  z
    .string()
    // Up to 16 digits: activity ids are time-based and pass 15 digits (docs/decisions.md, "Activity ids").
    .regex(/^[0-9]{1,16}$/, { message: "must be a positive integer id" })
    .refine((text) => Number.isSafeInteger(Number(text)), { message: "must be a positive integer id" })
    .transform(Number)
    .openapi({
      param: { name, in: "path", required: true },
      type: "integer",
      format: "int64",
      description,
      example: 1,
    });

/**
 * An id in an answer: a JSON integer that passes 2³¹ (activity ids are
 * time-based, ~3.7×10¹⁵), so the document says `int64` and generated
 * clients use 64-bit integers (docs/decisions.md, "Ids").
 */
export const int64Id = () => z.number().int().openapi({ format: "int64" });
