// Params and results of every method, by name: the generated `GeneratedMethods` map
// (src/generated/schema.ts, from agent-proto/schema/openrpc.json). Params are by name; an
// optional param may be left out (or given as `null`, which means the same).
import { GENERATED_METHOD_NAMES } from "./generated/schema.js";
/**
 * Every method of the schema except `subscribe`/`unsubscribe` (those are
 * `Client.events`): each has a method of the same name on `Client`. Generated from the
 * method table (agent-proto's `rpc.rs`, through the schema); the `satisfies` check makes
 * sure each is a method of `GeneratedMethods`.
 */
export const METHOD_NAMES = GENERATED_METHOD_NAMES;
const everyMethodListed = true;
void everyMethodListed;
