// Prints the licence texts of the npm packages bundled inside a prebuilt
// bundle, as listed by the bundle's source map.  Used by vendor.sh.
//   node bundled-licenses.mjs node_modules/graphiql/graphiql.min.js.map
//   node bundled-licenses.mjs --spdx build/x.bundle.js.map   the licences only, joined by AND
//   node bundled-licenses.mjs --dependencies sigma           a package's dependencies instead
//                                                            (a UMD build without a source map
//                                                            that inlines them)
import fs from 'node:fs';
import path from 'node:path';

// Sources without node_modules/ in their path come from the graphiql monorepo.
const MONOREPO = {
  'codemirror-graphql': 'codemirror-graphql',
  'graphiql-react': '@graphiql/react',
  'graphiql-toolkit': '@graphiql/toolkit',
  'graphql-language-service': 'graphql-language-service',
  src: 'graphiql',
};
const LICENCE_FILE = /^(licen[cs]e|copying)(\.(md|txt))?$/i;

const args = process.argv.slice(2);
const mode = args[0].startsWith('--') ? args.shift() : '--texts';
const names = new Set();
// the package a prebuilt bundle's map ships in (node_modules/<package>/...), if any
const owner = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(args[args.length - 1])?.[1];
if (mode === '--dependencies') {
  const pkg = JSON.parse(fs.readFileSync(path.join('node_modules', args[0], 'package.json'), 'utf8'));
  for (const name of Object.keys(pkg.dependencies ?? {})) names.add(name);
}
const map = mode === '--dependencies' ? { sources: [] } : JSON.parse(fs.readFileSync(args[0], 'utf8'));
for (const source of map.sources) {
  const i = source.lastIndexOf('node_modules/');
  if (i < 0) {
    // the bundle's own sources: graphiql's come from its monorepo's packages
    const top = source.replace(/^(\.\.\/)+/, '').split('/')[0];
    names.add(owner && owner !== 'graphiql' ? owner : MONOREPO[top] ?? top);
    continue;
  }
  const parts = source.slice(i + 'node_modules/'.length).split('/');
  names.add(parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]);
}

function findPackage(name) {
  // hoisted first, then nested copies anywhere under node_modules
  const direct = path.join('node_modules', name);
  if (fs.existsSync(path.join(direct, 'package.json'))) return direct;
  const stack = ['node_modules'];
  while (stack.length) {
    const dir = stack.pop();
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const sub = path.join(dir, entry.name);
      const candidate = path.join(sub, 'node_modules', name);
      if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
      if (entry.name === 'node_modules' || entry.name.startsWith('@') || dir.endsWith('node_modules')) stack.push(sub);
    }
  }
  return null;
}

function licenceOf(pkg) {
  return typeof pkg.license === 'string' ? pkg.license : JSON.stringify(pkg.license ?? pkg.licenses);
}

if (mode === '--spdx') {
  const licences = new Set();
  for (const name of names) {
    const dir = findPackage(name);
    licences.add(dir ? licenceOf(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))) : 'UNKNOWN');
  }
  process.stdout.write([...licences].sort().join(' AND ') + '\n');
  process.exit(0);
}

const out = [
  mode === '--dependencies'
    ? `Third-party code inlined in ${args[0]}'s UMD build: its dependencies`
    : `Third-party code bundled inside ${path.basename(args[0], '.map')}`,
  (mode === '--dependencies' ? 'Package list taken from its package.json' : 'Package list taken from its source map') +
    '; licence texts from the same-named packages',
  'installed by web/vendor-build (versions may differ slightly from the bundled ones).',
  '',
];
for (const name of [...names].sort()) {
  const dir = findPackage(name);
  out.push('='.repeat(78));
  if (!dir) {
    out.push(`${name}: not installed, licence text unavailable`, '');
    continue;
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const licence = licenceOf(pkg);
  out.push(`${name}@${pkg.version}  (${licence})`);
  out.push('='.repeat(78));
  let file = fs.readdirSync(dir).find((f) => LICENCE_FILE.test(f));
  let text;
  if (file) {
    text = fs.readFileSync(path.join(dir, file), 'utf8');
  } else if (fs.existsSync('node_modules/graphiql/LICENSE') && pkg.repository && JSON.stringify(pkg.repository).includes('graphql/graphiql')) {
    text = '(no LICENSE file in the package; graphql/graphiql monorepo licence:)\n' +
      fs.readFileSync('node_modules/graphiql/LICENSE', 'utf8');
  } else {
    text = `(no licence file in the package; package.json says: ${licence})\n`;
  }
  out.push(text.trimEnd(), '');
}
process.stdout.write(out.join('\n') + '\n');
