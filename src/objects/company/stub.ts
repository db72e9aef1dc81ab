/**
 * A company's object: one per company, everywhere, named `company:<id>` in the namespace (`idFromName`).
 * Typed by the Worker's binding (`Env["COMPANY"]`), so no file but src/index.ts names the class.
 */
export const companyStub = (namespace: Env["COMPANY"], companyId: number) =>
  namespace.get(namespace.idFromName(`company:${companyId}`));

/** The stub of a company's object: its RPC methods. */
export type CompanyStub = ReturnType<typeof companyStub>;
