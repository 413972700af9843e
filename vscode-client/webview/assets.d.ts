// scripts/build.mjs resolves this to elkjs's worker script, loaded as text: the layout worker starts
// from it through a blob: URL
declare module "elk-worker-source" {
  const source: string;
  export default source;
}
