// graphql-inspector's diff of two SDL files, as JSON: what changed and how critical it is.
//
//   node schema-diff.mjs <old.graphql> <new.graphql>
//
// Prints [{type, level, path, message, reason}], level being BREAKING, DANGEROUS or
// NON_BREAKING (graphql-inspector's criticality).
import { readFileSync } from "node:fs";
import { buildSchema } from "graphql";
import { diff } from "@graphql-inspector/core";

const [before, after] = process.argv.slice(2).map((file) => buildSchema(readFileSync(file, "utf8")));
const changes = await diff(before, after);
process.stdout.write(
  JSON.stringify(
    changes.map((c) => ({
      type: c.type,
      level: c.criticality.level,
      path: c.path ?? null,
      message: c.message,
      reason: c.criticality.reason ?? null,
    })),
  ),
);
