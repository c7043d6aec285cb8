import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { functionsTable } from '../db/function-files';

/** Writes db/README.md's table of database functions from the headers of db/functions/*.sql. */
const README = path.join(__dirname, '..', 'db', 'README.md');
const START = '<!-- functions table: npm run db:functions-table writes it from db/functions/*.sql -->';
const END = '<!-- end of functions table -->';

const text = readFileSync(README, 'utf8');
const from = text.indexOf(START);
const to = text.indexOf(END);
if (from < 0 || to < from) throw new Error(`db/README.md lacks the markers ${START} … ${END}`);
writeFileSync(README, `${text.slice(0, from + START.length)}\n${functionsTable()}\n${text.slice(to)}`);
console.log('db/README.md: table of functions written');
