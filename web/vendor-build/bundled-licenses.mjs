// Prints the licence texts of the npm packages bundled inside a prebuilt
// bundle, as listed by the bundle's source map.  Used by vendor.sh.
//   node bundled-licenses.mjs node_modules/graphiql/graphiql.min.js.map
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

const map = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const names = new Set();
for (const source of map.sources) {
  const i = source.lastIndexOf('node_modules/');
  if (i < 0) {
    const top = source.replace(/^(\.\.\/)+/, '').split('/')[0];
    names.add(MONOREPO[top] ?? top);
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

const out = [
  `Third-party code bundled inside ${path.basename(process.argv[2], '.map')}`,
  'Package list taken from its source map; licence texts from the same-named packages',
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
  const licence = typeof pkg.license === 'string' ? pkg.license : JSON.stringify(pkg.license ?? pkg.licenses);
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
