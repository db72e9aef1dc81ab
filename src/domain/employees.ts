/**
 * An employee as the employees routes hand it to the services: standardized
 * at the edge (emails trimmed and lowercased, countries ISO alpha-2, US
 * states USPS codes, phones E.164, one primary entry per list;
 * docs/decisions.md). The route schemas (src/routes/employees) produce these
 * shapes; the services (src/services/employees) take nothing else.
 */

export type EmailInput = { primary: boolean; email: string };
export type PhoneInput = { primary: boolean; countryCode: string; nationalNumber: string; e164: string };
export type AddressInput = {
  primary: boolean;
  line1: string;
  line2: string | null;
  city: string;
  region: string;
  postalCode: string;
  country: string;
};
export type AkaInput = { firstName: string; middleName: string | null; lastName: string | null };

export type NewEmployee = {
  firstName: string;
  middleName: string | null;
  lastName: string;
  dob: string;
  emails: EmailInput[];
  akas: AkaInput[];
  phones: PhoneInput[];
  addresses: AddressInput[];
  roles: string[];
  /** License id or name; null for none. */
  license: string | null;
  invite: boolean;
  ephemeral: boolean;
};

/** PUT: only the fields present change (docs/decisions.md, "Employees and exposures", PUT). */
export type EmployeeChanges = Partial<Omit<NewEmployee, "invite" | "ephemeral">>;

/** Employees a company may have (docs/decisions.md). */
export const MAX_EMPLOYEES_PER_COMPANY = 100_000;
/** Employees in one `POST /employees/bulk` (docs/onboarding.md). */
export const MAX_BULK_EMPLOYEES = 1_000;

/** The primary entry of a list: the one marked, else the first (the route schemas mark exactly one). */
export const primaryOf = <T extends { primary: boolean }>(entries: T[]): T =>
  entries.find((entry) => entry.primary) ?? entries[0]!;
