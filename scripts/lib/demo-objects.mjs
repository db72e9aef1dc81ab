// The demo world's data that lives in people's own Durable Objects (src/fixtures/demo-world.ts,
// DEMO_VENDOR_SETTINGS), written through the API of a running server: only the Worker reaches
// the objects. Idempotent (each is a PUT of the same value). `put(url, headers, body)` answers
// `{ status, text }`; the default uses fetch (the browser test passes one that accepts its
// self-signed certificate).
import { tsImport } from "tsx/esm/api";

const fetchPut = async (url, headers, body) => {
  const response = await fetch(url, { method: "PUT", headers, body });
  return { status: response.status, text: await response.text() };
};

export async function loadDemoObjects(base, put = fetchPut) {
  const { DEMO_VENDOR_SETTINGS } = await tsImport("../../src/fixtures/demo-world.ts", import.meta.url);
  for (const setting of DEMO_VENDOR_SETTINGS) {
    const { status, text } = await put(
      `${base}/apps/vcc/trust/${setting.container}/${setting.vendor}`,
      { authorization: `Bearer ${setting.token}`, "content-type": "application/json" },
      JSON.stringify({ trust: setting.trust }),
    );
    if (status !== 200) {
      throw new Error(
        `the demo world's object data: PUT ${setting.container}/${setting.vendor} answered ${status} ${text}`,
      );
    }
  }
}
