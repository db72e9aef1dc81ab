/** The name of a person's object (`idFromName`): one object per person, everywhere. */
export const personObjectName = (personId: number) => `person:${personId}`;
