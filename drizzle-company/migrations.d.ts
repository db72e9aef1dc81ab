/** drizzle-kit's bundle of this folder's migrations (migrations.js), for drizzle's durable-sqlite migrator. */
declare const migrations: {
  journal: { entries: { idx: number; when: number; tag: string; breakpoints: boolean }[] };
  migrations: Record<string, string>;
};
export default migrations;
