import { parse } from 'sql-parser-cst';
const o = {dialect:'mysql'};
const strip = (n) => { if (Array.isArray(n)) return n.map(strip); if (n && typeof n === 'object') { if (n.type==='keyword') return 'KW:'+n.name; const r={}; for (const [k,v] of Object.entries(n)) if (k!=='range') r[k]=strip(v); return r;} return n; };
const s = (q) => console.log(q, '\n', JSON.stringify(strip(parse(q,o).statements[0]), null, 0).slice(0,2500), '\n');
s("SELECT DISTINCT a AS x, b y, t.* FROM t AS z LEFT JOIN u ON z.a = u.a WHERE a NOT IN ('a') AND b IS NOT NULL AND NOT c AND d NOT LIKE 'x' AND e BETWEEN 1 AND 2 GROUP BY a HAVING count(*) > 1 ORDER BY a DESC LIMIT 5, 10");
s("SELECT CASE WHEN a=1 THEN 2 ELSE 3 END, CASE a WHEN 1 THEN 2 END, -a, now() - INTERVAL 7 DAY, count(DISTINCT a) FROM t LIMIT 10 OFFSET 3");
s("SELECT EXISTS (SELECT 1), (SELECT 1), a IN (SELECT 1) FROM t");
