import { describe, expect, it } from "vitest";
import doc from "../../docs/webhooks.md?raw";
import { DELIVERED_EVENTS, deliveryBodySchema } from "../../src/routes/webhooks/webhook-events.schemas";

/**
 * docs/webhooks.md shows one example body per event; each must be what the
 * code's schemas describe, with no field they do not know (zod drops unknown
 * keys, so the parsed body must equal the example).
 */

/** `#### <event>` followed (before the next heading) by one ```json block. */
function examples(markdown: string) {
  const found = new Map<string, unknown[]>();
  const sections = markdown.split(/^#### /m).slice(1);
  for (const section of sections) {
    const name = section.slice(0, section.indexOf("\n")).trim();
    const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
    found.set(name, blocks);
  }
  return found;
}

describe("docs/webhooks.md event catalogue", () => {
  const catalogue = examples(doc);

  it("has exactly the events a webhook can receive", () => {
    expect([...catalogue.keys()].sort()).toEqual([...DELIVERED_EVENTS].sort());
  });

  it.each([...DELIVERED_EVENTS])("%s: one example, valid against the code's schema", (event) => {
    const blocks = catalogue.get(event) ?? [];
    expect(blocks).toHaveLength(1);
    const parsed = deliveryBodySchema(event).safeParse(blocks[0]);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(parsed.data).toEqual(blocks[0]);
  });
});
