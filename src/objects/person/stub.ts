import type { Person } from "./person";

/** A person's object: one per person, everywhere, named `person:<id>` in the namespace (`idFromName`). */
export const personStub = (namespace: DurableObjectNamespace<Person>, personId: number) =>
  namespace.get(namespace.idFromName(`person:${personId}`));
