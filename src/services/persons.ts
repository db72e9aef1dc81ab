import { personObjectName } from "../objects/person/name";
import type { Person } from "../objects/person/person";

/**
 * The way to a person's own Durable Object (docs/architecture.md, "Where
 * data lives"): `persons.of(personId)` is an RPC stub of that person's
 * `Person` object. Part of the dependency handle (`Deps.persons`), like D1
 * and KV; nothing else builds stubs.
 */
export type Persons = { of(personId: number): DurableObjectStub<Person> };

export const personsOf = (namespace: DurableObjectNamespace<Person>): Persons => ({
  of: (personId) => namespace.get(namespace.idFromName(personObjectName(personId))),
});
