// Validates Kubernetes objects offline against their JSON schemas, with the models of
// kubernetes-models and its KEDA, Gateway API and prometheus-operator packages.
//   node validate.mjs NODE_MODULES < objects.json      (a JSON array of objects)
// Prints a JSON array: one {kind, name, error} per object, error null when it is valid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const PACKAGES = {
  "keda.sh": "@kubernetes-models/keda",
  "gateway.networking.k8s.io": "@kubernetes-models/gateway-api",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

async function model(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const folder = PACKAGES[group]
    ? join(PACKAGES[group], group, version)
    : join("kubernetes-models", ...(group ? [group] : []), version);
  for (const file of ["index.mjs", "index.js"]) {
    try {
      const loaded = await import(pathToFileURL(join(modules, folder, file)).href);
      if (loaded[kind]) return loaded[kind];
    } catch {
      // no such file: the other one
    }
  }
  throw new Error(`no schema for ${apiVersion} ${kind}`);
}

const results = [];
for (const object of JSON.parse(readFileSync(0, "utf8"))) {
  let error = null;
  try {
    const Model = await model(object.apiVersion, object.kind);
    new Model(object).validate();
  } catch (caught) {
    error = caught.message;
  }
  results.push({ kind: object.kind, name: object.metadata?.name, error });
}
console.log(JSON.stringify(results));
