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
#   web/static/vendor/VERSIONS                one line per vendored file:
#                                             package@version  path  sha256  licence
#                                             (path is relative to web/static/vendor/)
# node_modules/ stays here and is git-ignored.
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

licence react                     node_modules/react/LICENSE
licence react-dom                 node_modules/react-dom/LICENSE
licence graphiql                  node_modules/graphiql/LICENSE
licence cytoscape                 node_modules/cytoscape/LICENSE
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

sort -k2,2 "$out/VERSIONS.tmp" > "$out/VERSIONS"
rm "$out/VERSIONS.tmp"

cat "$out/VERSIONS"
du -sh "$out"
