/**
 * A person's object: one per person, everywhere, named `person:<id>` in the namespace (`idFromName`). Typed
 * by the Worker's binding (`Env["PERSON"]`), so the files of the object name no class to call each other.
 */
export const personStub = (namespace: Env["PERSON"], personId: number) =>
  namespace.get(namespace.idFromName(`person:${personId}`));

/** The stub of a person's object: its RPC methods. */
export type PersonStub = ReturnType<typeof personStub>;
