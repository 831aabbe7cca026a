/**
 * India's states and union territories as ISO 3166-2:IN subdivision codes: a notice's
 * `regions` and the widget's `region` (docs/api.md, Regions).
 *
 * The list is the ISO 3166 Maintenance Agency's current one, 28 states and 8 union territories,
 * after the 2023 change of four codes (IN-CT → IN-CG, IN-OR → IN-OD, IN-TG → IN-TS,
 * IN-UT → IN-UK), the merger of IN-DN and IN-DD into IN-DH (2020-11-24) and the addition of
 * IN-LA (2019-11-22). The codes those changes retired are still accepted and read as their
 * successor (geolocation databases keep them for a while), so a notice or a proof of consent
 * only ever holds current codes.
 */
export const REGIONS = [
  'IN-AN', // Andaman and Nicobar Islands (UT)
  'IN-AP', // Andhra Pradesh
  'IN-AR', // Arunachal Pradesh
  'IN-AS', // Assam
  'IN-BR', // Bihar
  'IN-CG', // Chhattisgarh (IN-CT before 2023)
  'IN-CH', // Chandigarh (UT)
  'IN-DH', // Dadra and Nagar Haveli and Daman and Diu (UT; IN-DN and IN-DD before 2020)
  'IN-DL', // Delhi (UT)
  'IN-GA', // Goa
  'IN-GJ', // Gujarat
  'IN-HP', // Himachal Pradesh
  'IN-HR', // Haryana
  'IN-JH', // Jharkhand
  'IN-JK', // Jammu and Kashmir (UT)
  'IN-KA', // Karnataka
  'IN-KL', // Kerala
  'IN-LA', // Ladakh (UT)
  'IN-LD', // Lakshadweep (UT)
  'IN-MH', // Maharashtra
  'IN-ML', // Meghalaya
  'IN-MN', // Manipur
  'IN-MP', // Madhya Pradesh
  'IN-MZ', // Mizoram
  'IN-NL', // Nagaland
  'IN-OD', // Odisha (IN-OR before 2023)
  'IN-PB', // Punjab
  'IN-PY', // Puducherry (UT)
  'IN-RJ', // Rajasthan
  'IN-SK', // Sikkim
  'IN-TN', // Tamil Nadu
  'IN-TR', // Tripura
  'IN-TS', // Telangana (IN-TG before 2023)
  'IN-UK', // Uttarakhand (IN-UT before 2023)
  'IN-UP', // Uttar Pradesh
  'IN-WB', // West Bengal
] as const;
export type Region = (typeof REGIONS)[number];

/** Retired codes → the current code of the same territory. */
export const FORMER_REGION_CODES: Readonly<Record<string, Region>> = {
  'IN-CT': 'IN-CG',
  'IN-OR': 'IN-OD',
  'IN-TG': 'IN-TS',
  'IN-UT': 'IN-UK',
  'IN-DN': 'IN-DH',
  'IN-DD': 'IN-DH',
};

const current = new Set<string>(REGIONS);

/**
 * The current code for `code` (a current or retired ISO 3166-2:IN code, exactly as written:
 * upper case), or undefined when it names no state or union territory of India.
 */
export function canonicalRegion(code: string): Region | undefined {
  if (current.has(code)) return code as Region;
  return Object.hasOwn(FORMER_REGION_CODES, code) ? FORMER_REGION_CODES[code] : undefined;
}

export const REGION_FORMAT = 'an ISO 3166-2:IN code of a state or union territory, e.g. IN-MH';
