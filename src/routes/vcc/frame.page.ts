/**
 * The consent container as an embeddable page (docs/consent.md):
 * plain HTML and one inline script, well under 10 KiB. The script loads the
 * container from its own origin, where the `session` cookie lives; a browser
 * that blocks third-party cookies withholds it until the visitor grants
 * storage access with the button. It posts the container to the parent only
 * when the parent's exact origin is the publisher's.
 */
export type FrameConfig = { nonce: string; id: string; name: string; domain: string; development: boolean };

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** JSON that is safe inside a `<script>` element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:0;padding:12px;color:#222;background:#fff}
h1{font-size:16px;margin:0 0 8px}ul{list-style:none;margin:8px 0 0;padding:0}
li{display:flex;justify-content:space-between;gap:8px;padding:6px 0;border-top:1px solid #eee}
button{font:inherit;padding:6px 10px;cursor:pointer}select{font:inherit}`;

const SCRIPT = `(() => {
const cfg = JSON.parse(document.getElementById("cfg").textContent);
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const LABELS = { trusted: "Trusted", negative: "Not trusted", "": "No choice" };
const parentOrigin = (() => {
  const a = location.ancestorOrigins;
  if (a && a.length) return a[0];
  try { return document.referrer ? new URL(document.referrer).origin : null; } catch { return null; }
})();
const isPublisher = (o) => {
  try {
    const u = new URL(o), h = u.hostname;
    return u.origin === o && (u.protocol === "https:" || (cfg.development && u.protocol === "http:")) &&
      (h === cfg.domain || h.endsWith("." + cfg.domain));
  } catch { return false; }
};
const say = (text) => { $("status").textContent = text; };

async function load() {
  let container;
  try {
    const r = await fetch("/apps/vcc/load_container/" + enc(cfg.id), { credentials: "include", headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error("HTTP " + r.status);
    container = await r.json();
  } catch { say("The privacy choices could not be loaded."); return; }
  await render(container);
  if (window.parent !== window && parentOrigin && isPublisher(parentOrigin))
    window.parent.postMessage({ type: "vcc:container", container }, parentOrigin);
}

async function render(container) {
  const signedIn = container.is_authenticated;
  const canAsk = !signedIn && typeof document.requestStorageAccess === "function" &&
    !(await document.hasStorageAccess().catch(() => false));
  say(signedIn ? "Your choices for " + container.company.name + ":" :
    canAsk ? "Your browser keeps your sign-in from this page until you allow it." : "You are not signed in.");
  $("access").hidden = !canAsk;
  document.body.dataset.authenticated = String(signedIn);
  const list = $("vendors");
  list.replaceChildren();
  for (const v of container.vendors) {
    const li = document.createElement("li");
    li.dataset.vendor = v.slug;
    li.dataset.trust = v.trust ?? "";
    const name = document.createElement("span");
    name.textContent = v.name + " (" + v.category + ")";
    li.append(name);
    if (signedIn) {
      const select = document.createElement("select");
      select.setAttribute("aria-label", "Trust in " + v.name);
      for (const [value, label] of Object.entries(LABELS)) select.add(new Option(label, value, false, (v.trust ?? "") === value));
      select.onchange = () => setTrust(v.slug, select.value || null);
      li.append(select);
    }
    list.append(li);
  }
}

async function setTrust(slug, trust) {
  const r = await fetch("/apps/vcc/trust/" + enc(cfg.id) + "/" + enc(slug), {
    method: "PUT", credentials: "include", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ trust }),
  }).catch(() => null);
  if (!r || !r.ok) { say("Your choice could not be saved."); return; }
  await load();
}

$("access").onclick = async () => {
  try { await document.requestStorageAccess(); } catch { say("Your browser did not allow it."); return; }
  await load();
};

(async () => {
  // A visitor who allowed it before needs no second click.
  try {
    const state = await navigator.permissions.query({ name: "storage-access" });
    if (state.state === "granted" && !(await document.hasStorageAccess())) await document.requestStorageAccess();
  } catch {}
  await load();
})();
})();`;

export function framePage(config: FrameConfig): string {
  const { nonce, id, name, domain, development } = config;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Privacy choices · ${escapeHtml(name)}</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body><main>
<h1>Privacy choices</h1>
<p id="status" role="status">Loading…</p>
<button id="access" type="button" hidden>Use my privacy settings here</button>
<ul id="vendors"></ul>
</main>
<script type="application/json" id="cfg">${scriptJson({ id, domain, development })}</script>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>
`;
}

export function frameNotFoundPage(containerId: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Not found</title></head>
<body><p>Not found: container ${escapeHtml(JSON.stringify(containerId))} does not exist or is disabled.</p></body></html>
`;
}
