import { companyStub, type CompanyStub } from "../objects/company/stub";

/**
 * The way to a company's own Durable Object (docs/architecture.md, "The
 * Company object"): `companyObjects.of(companyId)` is an RPC stub of that
 * company's `Company` object. Part of the dependency handle
 * (`Deps.companyObjects`); nothing else builds stubs.
 */
export type CompanyObjects = { of(companyId: number): CompanyStub };

export const companyObjectsOf = (namespace: Env["COMPANY"]): CompanyObjects => ({
  of: (companyId) => companyStub(namespace, companyId),
});
