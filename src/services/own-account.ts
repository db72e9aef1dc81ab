import { sql } from "drizzle-orm";
import { personGone } from "../lib/answer";
import type { Deps } from "./deps";

type Row = {
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  number: string | null;
  places: string;
};

/**
 * The caller's own account as `GET /me` answers it (docs/decisions.md,
 * "Me"): their names, secure number and companies with the roles they hold
 * (companies by id, roles by name), read in one D1 statement (docs/capacity.md
 * counts an app's daily `/me` in D1 statements). A 401 refusal when the
 * person is gone (the token outlived them within the token record's window).
 */
export async function ownAccount(deps: Deps, personId: number) {
  const row = await deps.db.get<Row | undefined>(sql`
    select p.id, p.first_name, p.middle_name, p.last_name,
      (select json_object('country_code', sn.country_code, 'number', sn.number, 'e164', sn.e164)
         from secure_numbers sn where sn.person_id = p.id limit 1) as number,
      (select json_group_array(json(place)) from (
         select json_object('id', c.id, 'name', c.name, 'roles',
                  (select json_group_array(name) from (
                     select r.name from membership_roles mr join roles r on r.id = mr.role_id
                     where mr.membership_id = m.id order by r.name))) as place
         from memberships m join companies c on c.id = m.company_id
         where m.person_id = p.id order by c.id)) as places
    from people p where p.id = ${personId}`);
  if (!row) return personGone();
  const { number, places, ...names } = row;
  return {
    ok: true as const,
    ...names,
    secure_number:
      number === null ? null : (JSON.parse(number) as { country_code: string; number: string; e164: string }),
    companies: JSON.parse(places) as { id: number; name: string; roles: string[] }[],
  };
}
