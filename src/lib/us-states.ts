/**
 * USPS two-letter codes of the 50 states, the District of Columbia, the
 * territories and the armed-forces "states" (https://pe.usps.com/text/pub28/28apb.htm),
 * so a US address's region can be standardized (docs/decisions.md,
 * "Employees and exposures", Addresses).
 */
const US_REGIONS: Record<string, string> = {
  AL: "Alabama",
  AK: "Alaska",
  AZ: "Arizona",
  AR: "Arkansas",
  CA: "California",
  CO: "Colorado",
  CT: "Connecticut",
  DE: "Delaware",
  FL: "Florida",
  GA: "Georgia",
  HI: "Hawaii",
  ID: "Idaho",
  IL: "Illinois",
  IN: "Indiana",
  IA: "Iowa",
  KS: "Kansas",
  KY: "Kentucky",
  LA: "Louisiana",
  ME: "Maine",
  MD: "Maryland",
  MA: "Massachusetts",
  MI: "Michigan",
  MN: "Minnesota",
  MS: "Mississippi",
  MO: "Missouri",
  MT: "Montana",
  NE: "Nebraska",
  NV: "Nevada",
  NH: "New Hampshire",
  NJ: "New Jersey",
  NM: "New Mexico",
  NY: "New York",
  NC: "North Carolina",
  ND: "North Dakota",
  OH: "Ohio",
  OK: "Oklahoma",
  OR: "Oregon",
  PA: "Pennsylvania",
  RI: "Rhode Island",
  SC: "South Carolina",
  SD: "South Dakota",
  TN: "Tennessee",
  TX: "Texas",
  UT: "Utah",
  VT: "Vermont",
  VA: "Virginia",
  WA: "Washington",
  WV: "West Virginia",
  WI: "Wisconsin",
  WY: "Wyoming",
  DC: "District of Columbia",
  AS: "American Samoa",
  GU: "Guam",
  MP: "Northern Mariana Islands",
  PR: "Puerto Rico",
  VI: "Virgin Islands",
  UM: "United States Minor Outlying Islands",
  AA: "Armed Forces Americas",
  AE: "Armed Forces Europe",
  AP: "Armed Forces Pacific",
};

/** Other spellings people write for some regions. */
const ALIASES: Record<string, string> = {
  "washington dc": "DC",
  "washington d c": "DC",
  "us virgin islands": "VI",
  "u s virgin islands": "VI",
  "united states virgin islands": "VI",
};

const key = (name: string) => name.toLowerCase().replace(/[.,]/g, " ").replace(/\s+/g, " ").trim();

const BY_NAME = new Map<string, string>([
  ...Object.entries(US_REGIONS).map(([code, name]) => [key(name), code] as [string, string]),
  ...Object.entries(ALIASES),
]);

/** "California", "california", "ca" or "CA" → "CA"; null when it names no US state or territory. */
export function usStateCode(input: string): string | null {
  const value = input.trim();
  const upper = value.toUpperCase();
  if (upper in US_REGIONS) return upper;
  return BY_NAME.get(key(value)) ?? null;
}
