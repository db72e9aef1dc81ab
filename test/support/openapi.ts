import { Validator, type Schema } from "@cfworker/json-schema";
import { call } from "../helpers";

/**
 * The served OpenAPI document and an independent check of answers against
 * it (@cfworker/json-schema, a JSON Schema 2020-12 validator that runs in
 * workerd, where Ajv's code generation cannot). Strict on purpose: an object
 * schema that does not say otherwise allows no undocumented field, and a
 * status the operation does not document fails.
 */
export type JsonSchema = { [key: string]: unknown };
export type Parameter = {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: JsonSchema;
};
export type Operation = {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }>; headers?: Record<string, Header> }>;
};
export type Header = { required?: boolean; $ref?: string };
export type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema>; headers?: Record<string, Header> };
};
export type Op = { method: string; path: string; operation: Operation };

export async function loadDocument(): Promise<Document> {
  return (await call("/openapi.json")).json<Document>();
}

export function operationsOf(doc: Document): Op[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );
}

/** Inlines `#/components/schemas/X` references (cycles are not expected in this document). */
export function resolve(doc: Document, schema: unknown, seen: string[] = []): JsonSchema {
  if (Array.isArray(schema)) return schema.map((item) => resolve(doc, item, seen)) as unknown as JsonSchema;
  if (!schema || typeof schema !== "object") return schema as JsonSchema;
  const ref = (schema as { $ref?: string }).$ref;
  if (ref?.startsWith("#/components/schemas/")) {
    const name = ref.slice("#/components/schemas/".length);
    if (seen.includes(name)) return {};
    return resolve(doc, doc.components.schemas[name], [...seen, name]);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, resolve(doc, value, seen)]));
}

/**
 * Allows no undocumented field: `additionalProperties: false` on every object
 * schema that lists its properties and says nothing else; a composition
 * (`allOf`) gets `unevaluatedProperties: false` instead, its parts stay open.
 */
function strict(schema: unknown, part = false): unknown {
  if (Array.isArray(schema)) return schema.map((item) => strict(item, part));
  if (!schema || typeof schema !== "object") return schema;
  const out = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, strict(value, key === "allOf")]),
  ) as JsonSchema;
  if ("allOf" in out && !("unevaluatedProperties" in out)) out.unevaluatedProperties = false;
  else if (!part && out.properties && !("additionalProperties" in out)) out.additionalProperties = false;
  return out;
}

const validators = new Map<string, Validator>();

/**
 * Problems of one answer of `op` (empty when it conforms): its status must be
 * documented; a JSON body must match the documented schema strictly; every 4xx
 * must be the error body with its status as the code (unless it documents a
 * non-JSON answer for that status); every header the answer declares required
 * must be sent, and `X-Request-Id` and `x-d1-bookmark` must be declared where
 * they are sent.
 */
export async function conformanceProblems(doc: Document, op: Op, response: Response): Promise<string[]> {
  const where = `${op.method} ${op.path} → ${response.status}`;
  const documented = op.operation.responses[String(response.status)] ?? op.operation.responses.default;
  const text = await response.clone().text();
  const problems: string[] = [];
  if (!documented) problems.push(`${where}: status not documented (body ${text.slice(0, 200)})`);
  else problems.push(...headerProblems(doc, documented.headers ?? {}, response).map((p) => `${where}: ${p}`));
  const type = response.headers.get("Content-Type") ?? "";
  // Every 4xx is the error body, unless the operation documents another kind of
  // answer for it (the consent frame's HTML 404 for people, docs/decisions.md).
  const otherDocumented =
    !type.includes("json") && Object.keys(documented?.content ?? {}).some((name) => type.startsWith(name));
  if (response.status >= 400 && response.status < 500 && !otherDocumented) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    if (
      !type.startsWith("application/json") ||
      Object.keys(body ?? {}).join() !== "error" ||
      error?.code !== String(response.status) ||
      typeof error?.message !== "string"
    ) {
      problems.push(`${where}: not the error body: ${text.slice(0, 200)}`);
    }
  }
  if (!documented || response.status === 204 || text === "") return problems;
  const mediaType = Object.keys(documented.content ?? {}).find((name) => type.startsWith(name));
  if (!mediaType) {
    problems.push(`${where}: Content-Type ${type} not documented`);
    return problems;
  }
  const schema = documented.content![mediaType]!.schema;
  if (!schema || !mediaType.includes("json")) return problems;
  const key = `${op.method} ${op.path} ${response.status} ${mediaType}`;
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator(strict(resolve(doc, schema)) as Schema, "2020-12", false);
    validators.set(key, validator);
  }
  const result = validator.validate(JSON.parse(text));
  if (!result.valid) {
    const errors = result.errors
      .filter((error) => error.keyword !== "properties" && error.keyword !== "items")
      .slice(0, 3)
      .map((error) => `${error.instanceLocation}: ${error.error}`);
    problems.push(`${where}: body does not match the schema: ${errors.join("; ")} (body ${text.slice(0, 300)})`);
  }
  return problems;
}

/** Headers to check both ways: sent where declared (required ones), declared where sent. */
const DECLARED_WHERE_SENT = ["X-Request-Id", "x-d1-bookmark"];

function headerProblems(doc: Document, declared: Record<string, Header>, response: Response): string[] {
  const problems: string[] = [];
  const lower = new Set(Object.keys(declared).map((name) => name.toLowerCase()));
  for (const [name, header] of Object.entries(declared)) {
    const resolved = header.$ref ? doc.components.headers?.[header.$ref.split("/").pop()!] : header;
    if (!resolved) problems.push(`header ${name} refers to ${header.$ref}, which the document does not define`);
    else if (resolved.required && !response.headers.has(name)) problems.push(`required header ${name} not sent`);
  }
  for (const name of DECLARED_WHERE_SENT) {
    if (response.headers.has(name) && !lower.has(name.toLowerCase()))
      problems.push(`header ${name} sent, not declared`);
  }
  return problems;
}
