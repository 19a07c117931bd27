#!/usr/bin/env bash
# Reproduces web/static/vendor/ from npm with the exact versions pinned in
# package.json / package-lock.json.  Run from anywhere:  bash web/vendor-build/vendor.sh
#
# Writes:
#   web/static/vendor/<pkg>/<file>            dist files, byte-identical to the npm tarballs
#   web/static/vendor/licenses/<pkg>.LICENSE  each vendored package's licence text
#                                             (scope '@' dropped, '/' -> '-')
#   web/static/vendor/licenses/graphiql.bundled.LICENSES
#                                             licences of the third-party code bundled inside
#                                             graphiql.min.js (package list read from its source map)
#   web/static/vendor/<pkg>/<name>.bundle.js  a package that ships CommonJS only, bundled here by
#                                             esbuild (pinned) into one script; its VERSIONS
#                                             licence is that of every package inside it
#   web/static/vendor/licenses/<pkg>.bundled.LICENSES
#                                             licences of the third-party code bundled inside
#                                             such a bundle (package list from its source map)
#   web/static/vendor/VERSIONS                one line per vendored file:
#                                             package@version  path  sha256  licence
#                                             (path is relative to web/static/vendor/)
# node_modules/ and build/ (esbuild's output and source maps) stay here and are git-ignored.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="$(cd "$here/.." && pwd)/static/vendor"
cd "$here"

npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

rm -rf "$out"
mkdir -p "$out/licenses"
: > "$out/VERSIONS.tmp"

pkg_field() { node -p "require('./node_modules/$1/package.json').$2"; }

# vendor <npm package> <file inside the package> <destination dir under vendor/>
vendor() {
  local pkg="$1" src="$2" dir="$3"
  local version licence dest
  version="$(pkg_field "$pkg" version)"
  licence="$(pkg_field "$pkg" license)"
  dest="$dir/$(basename "$src")"
  mkdir -p "$out/$dir"
  cp "node_modules/$pkg/$src" "$out/$dest"
  printf '%s@%s  %s  %s  %s\n' "$pkg" "$version" "$dest" \
    "$(sha256sum "$out/$dest" | cut -d' ' -f1)" "$licence" >> "$out/VERSIONS.tmp"
}

# bundle <npm package> <CommonJS entry inside the package> <global name> <destination file under vendor/>
# An IIFE that sets window.<global name> to the entry's exports; not minified, so the worker
# source that graphology-layout-forceatlas2 turns into a blob stays as published.
bundle() {
  local pkg="$1" entry="$2" global="$3" dest="$4"
  local version map licences
  version="$(pkg_field "$pkg" version)"
  mkdir -p "$here/build" "$out/$(dirname "$dest")"
  node_modules/.bin/esbuild "node_modules/$pkg/$entry" --bundle --format=iife \
    --global-name="$global" --sourcemap --legal-comments=inline --log-level=warning \
    --outfile="$here/build/$(basename "$dest")"
  cp "$here/build/$(basename "$dest")" "$out/$dest"
  map="$here/build/$(basename "$dest").map"
  licences="$(node bundled-licenses.mjs --spdx "$map")"
  node bundled-licenses.mjs "$map" \
    > "$out/licenses/$(echo "$pkg" | sed 's|^@||; s|/|-|g').bundled.LICENSES"
  printf '%s@%s  %s  %s  %s\n' "$pkg" "$version" "$dest" \
    "$(sha256sum "$out/$dest" | cut -d' ' -f1)" "$licences" >> "$out/VERSIONS.tmp"
}

# licence <npm package> <licence file, relative to the repo root of the package>
licence() {
  local pkg="$1" file="$2"
  cp "$file" "$out/licenses/$(echo "$pkg" | sed 's|^@||; s|/|-|g').LICENSE"
}

vendor react                     umd/react.production.min.js          react
vendor react-dom                 umd/react-dom.production.min.js      react-dom
vendor graphiql                  graphiql.min.js                      graphiql
vendor graphiql                  graphiql.min.css                     graphiql
vendor @graphiql/plugin-explorer dist/index.umd.js                    graphiql-plugin-explorer
vendor @graphiql/plugin-explorer dist/style.css                       graphiql-plugin-explorer
vendor cytoscape                 dist/cytoscape.min.js                cytoscape
vendor graphology                dist/graphology.umd.min.js           graphology
vendor sigma                     dist/sigma.min.js                    sigma
bundle graphology-layout-forceatlas2 worker.js FA2Layout graphology-layout-forceatlas2/fa2-worker.bundle.js

licence react                     node_modules/react/LICENSE
licence react-dom                 node_modules/react-dom/LICENSE
licence graphiql                  node_modules/graphiql/LICENSE
licence cytoscape                 node_modules/cytoscape/LICENSE
licence graphology                node_modules/graphology/LICENSE.txt
licence sigma                     node_modules/sigma/LICENSE.txt
licence graphology-layout-forceatlas2 node_modules/graphology-layout-forceatlas2/LICENSE.txt
# @graphiql/plugin-explorer ships no LICENSE file; it is MIT and lives in the
# graphql/graphiql monorepo, whose LICENSE is the one graphiql ships.  Its UMD
# build bundles graphiql-explorer (MIT, OneGraph), whose licence is appended.
{
  echo "@graphiql/plugin-explorer $(pkg_field @graphiql/plugin-explorer version): license \"$(pkg_field @graphiql/plugin-explorer license)\" (package.json)."
  echo "The package has no LICENSE file of its own; it is published from the graphql/graphiql"
  echo "monorepo, whose licence text follows."
  echo
  cat node_modules/graphiql/LICENSE
  echo
  echo "------------------------------------------------------------------------------"
  echo "Bundled inside index.umd.js: graphiql-explorer $(pkg_field @graphiql/plugin-explorer/node_modules/graphiql-explorer version)"
  echo "------------------------------------------------------------------------------"
  cat node_modules/@graphiql/plugin-explorer/node_modules/graphiql-explorer/LICENSE
} > "$out/licenses/graphiql-plugin-explorer.LICENSE"

node bundled-licenses.mjs node_modules/graphiql/graphiql.min.js.map \
  > "$out/licenses/graphiql.bundled.LICENSES"
# sigma's UMD build has no source map; it inlines its dependencies (events, graphology-utils)
node bundled-licenses.mjs --dependencies sigma > "$out/licenses/sigma.bundled.LICENSES"
# graphology's UMD build inlines the `events` package (its source map lists it)
node bundled-licenses.mjs node_modules/graphology/dist/graphology.umd.min.js.map \
  > "$out/licenses/graphology.bundled.LICENSES"

sort -k2,2 "$out/VERSIONS.tmp" > "$out/VERSIONS"
rm "$out/VERSIONS.tmp"

cat "$out/VERSIONS"
du -sh "$out"
