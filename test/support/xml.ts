/**
 * A strict reader of the small XML documents TwiML answers are (the test
 * runtime has no DOMParser): an optional declaration, then one element tree
 * of elements, attributes, text and the five predefined entities. Throws on
 * anything not well-formed; answers the tree.
 */
export type XmlElement = { name: string; attributes: Record<string, string>; children: (XmlElement | string)[] };

export function parseXml(text: string): XmlElement {
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`not well-formed XML at ${at}: ${what} in ${text}`);
  };
  const decode = (raw: string) => {
    if (/&(?!(amp|lt|gt|quot|apos);)/.test(raw) || raw.includes("<")) fail("a bare & or <");
    return raw.replace(
      /&(amp|lt|gt|quot|apos);/g,
      (_, name: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" })[name]!,
    );
  };
  const NAME = /^[A-Za-z_][\w.-]*/;
  const skipSpace = () => {
    while (/\s/.test(text[at] ?? "")) at++;
  };
  function element(): XmlElement {
    if (text[at] !== "<") fail("an element");
    at++;
    const name = NAME.exec(text.slice(at))?.[0] ?? fail("an element name");
    at += name.length;
    const attributes: Record<string, string> = {};
    for (;;) {
      skipSpace();
      if (text.startsWith("/>", at)) {
        at += 2;
        return { name, attributes, children: [] };
      }
      if (text[at] === ">") {
        at++;
        break;
      }
      const attribute = NAME.exec(text.slice(at))?.[0] ?? fail("an attribute name");
      at += attribute.length;
      const value = /^="([^"]*)"/.exec(text.slice(at)) ?? fail("a quoted attribute value");
      if (attribute in attributes) fail(`attribute ${attribute} twice`);
      attributes[attribute] = decode(value[1]!);
      at += value[0].length;
    }
    const children: (XmlElement | string)[] = [];
    for (;;) {
      if (text.startsWith(`</${name}>`, at)) {
        at += name.length + 3;
        return { name, attributes, children };
      }
      if (text.startsWith("</", at)) fail(`the end of ${name}`);
      if (text[at] === "<") children.push(element());
      else {
        const end = text.indexOf("<", at);
        if (end === -1) fail(`the end of ${name}`);
        children.push(decode(text.slice(at, end)));
        at = end;
      }
    }
  }
  const declaration = /^<\?xml version="1\.0"( encoding="UTF-8")?\?>/.exec(text);
  if (declaration) at = declaration[0].length;
  skipSpace();
  const root = element();
  skipSpace();
  if (at !== text.length) fail("one root element");
  return root;
}
