import type { Company } from "./company";

/** A company's object: one per company, everywhere, named `company:<id>` in the namespace (`idFromName`). */
export const companyStub = (namespace: DurableObjectNamespace<Company>, companyId: number) =>
  namespace.get(namespace.idFromName(`company:${companyId}`));
