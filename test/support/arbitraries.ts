import fc from "fast-check";
import type { JsonSchema } from "./openapi";

/**
 * fast-check arbitraries from the document's (resolved) JSON Schemas: values
 * that the schema accepts, kept small. Not every one passes the business rules
 * (a free seat, an unused email): the fuzz test only asks that nothing is a 5xx.
 */
const ENDPOINT = "https://hooks.example/fuzz";

export function fromSchema(schema: JsonSchema | undefined, name = "", depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.constant(null);
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alternatives?.length && schema.properties) {
    // An object whose alternatives only add rules (which fields are required or forbidden, a `kind`):
    // each alternative refines the object itself.
    return fc.oneof(...alternatives.map((alternative) => fromSchema(refine(schema, alternative), name, depth + 1)));
  }
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => fromSchema(s, name, depth + 1)));
  if (schema.if && schema.then)
    return fromSchema(refine({ ...schema, if: undefined }, schema.then as JsonSchema), name, depth);
  if (Array.isArray(schema.allOf))
    return fromSchema(Object.assign({}, ...(schema.allOf as JsonSchema[])), name, depth + 1);
  const type = schema.type;
  if (Array.isArray(type)) return fc.oneof(...type.map((t) => fromSchema({ ...schema, type: t }, name, depth + 1)));
  switch (type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 0;
      const max = typeof schema.maximum === "number" ? Math.min(schema.maximum, min + 1000) : min + 1000;
      return fc.integer({ min: Math.ceil(min), max: Math.floor(max) });
    }
    case "string":
      return stringFor(schema, name);
    case "array": {
      const minLength = typeof schema.minItems === "number" ? schema.minItems : 0;
      const maxLength = Math.max(minLength, Math.min(typeof schema.maxItems === "number" ? schema.maxItems : 3, 3));
      return fc.array(fromSchema(schema.items as JsonSchema, name, depth + 1), { minLength, maxLength });
    }
    case "object":
    default: {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      if (type !== "object" && Object.keys(properties).length === 0) return fc.jsonValue({ maxDepth: 1 });
      const required = (schema.required ?? []) as string[];
      return fc.record(
        Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, fromSchema(s, key, depth + 1)])),
        { requiredKeys: required.filter((key) => key in properties) },
      );
    }
  }
}

function stringFor(schema: JsonSchema, name: string): fc.Arbitrary<string> {
  if (/endpoint|url$/.test(name)) return fc.constant(ENDPOINT);
  const example = typeof schema.example === "string" ? [schema.example] : [];
  switch (schema.format) {
    case "date-time":
      return fc
        .integer({ min: Date.parse("2020-01-01"), max: Date.parse("2030-01-01") })
        .map((t) => new Date(t).toISOString());
    case "date":
      return fc
        .integer({ min: Date.parse("1950-01-01"), max: Date.parse("2020-01-01") })
        .map((t) => new Date(t).toISOString().slice(0, 10));
    case "email":
      return fc.stringMatching(/^[a-z]{1,8}$/).map((local) => `${local}@fuzz.example`);
    case "uri":
    case "url":
      return fc.constant(ENDPOINT);
    case "uuid":
      return fc.uuid();
  }
  const minLength = typeof schema.minLength === "number" ? schema.minLength : 0;
  const maxLength = Math.max(minLength, Math.min(typeof schema.maxLength === "number" ? schema.maxLength : 20, 20));
  const free = fc.string({ minLength, maxLength });
  const patterned =
    typeof schema.pattern === "string"
      ? fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= 200)
      : free;
  return example.length ? fc.oneof(fc.constantFrom(...example), patterned) : patterned;
}

/** Strings a careless server chokes on. */
export const nastyStrings = [
  "",
  "\u0000",
  "a\u0000b",
  "\uD800",
  "\uDFFF\uD800",
  "🙂".repeat(50),
  "\u202Eevil",
  "\uFFFF",
  "x".repeat(100_000),
  "' OR 1=1 --",
  "../../etc/passwd",
  "%00",
  "1e309",
  "-0",
  "NaN",
];

/** Numbers a careless server chokes on. */
export const nastyNumbers = [-1, 0, 1.5, 2 ** 31, 2 ** 53 + 2, 1e308, -1e308, Number.MAX_SAFE_INTEGER, -(2 ** 63)];

/** Values of the wrong type for any field. */
export const wrongTypes: unknown[] = [null, true, 0, -7, "text", [], {}, [1, "a"], { nested: { deep: [null] } }];

/**
 * `base` under one of its alternatives (or its `then`): the alternative's
 * `required` added, its properties merged in; a property it forbids
 * (`not: {}`) or another alternative requires (under `oneOf`, exactly one
 * may hold) is left out.
 */
function refine(base: JsonSchema, alternative: JsonSchema): JsonSchema {
  const { anyOf: _any, oneOf, ...rest } = base;
  const properties = { ...((rest.properties ?? {}) as Record<string, JsonSchema>) };
  for (const [key, value] of Object.entries((alternative.properties ?? {}) as Record<string, JsonSchema>)) {
    if (value.not && Object.keys(value.not as object).length === 0) delete properties[key];
    else properties[key] = { ...properties[key], ...value };
  }
  const required = (alternative.required ?? []) as string[];
  for (const other of (oneOf ?? []) as JsonSchema[]) {
    if (other === alternative) continue;
    for (const key of (other.required ?? []) as string[]) if (!required.includes(key)) delete properties[key];
  }
  return { ...rest, properties, required: [...new Set([...((rest.required ?? []) as string[]), ...required])] };
}
