/**
 * Permissions are role strings `<read|write> <area>`; `write` implies `read`
 * (docs/decisions.md, "The contract in brief").
 */
export const AREAS = ["settings", "employees", "exposures", "licenses", "webhooks", "sites"] as const;
export type Area = (typeof AREAS)[number];
export type Permission = `${"read" | "write"} ${Area}`;

export const DEFAULT_ROLES: ReadonlyArray<{ name: string; permissions: Permission[] }> = [
  { name: "Admin", permissions: AREAS.flatMap((area) => [`read ${area}`, `write ${area}`] as Permission[]) },
  {
    name: "HR",
    permissions: ["read employees", "write employees", "read exposures", "read licenses", "read sites"],
  },
  { name: "Viewer", permissions: ["read employees", "read exposures", "read sites"] },
];

export function grants(held: Iterable<string>, needed: Permission): boolean {
  const [, area] = needed.split(" ");
  for (const permission of held) {
    if (permission === needed || permission === `write ${area}`) return true;
  }
  return false;
}
