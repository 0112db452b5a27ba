// The letters-only probe of issue 29 (breadth, part 3): 100 fixed-seed values per shape and form, count left in clear.
// Run: node scripts/letters-probe.cjs (after npm run build:debug).
const c=require(require('node:path').join(__dirname, '..', 'index.js'));
let seed=1;const rnd=()=>{seed=(seed*1103515245+12345)%2147483648;return seed/2147483648};
const gen=(cs,n)=>{let s='';for(let i=0;i<n;i++)s+=cs[Math.floor(rnd()*cs.length)];return s};
const L='abcdefghijklmnopqrstuvwxyz', U=L.toUpperCase(), D='0123456789';
const shapes={lower32:[L,32],mixed20:[L+U,20],mixed40:[L+U,40],alnum32:[L+U+D,32],hexlow32:['0123456789abcdef',32]};
const forms={'api_key: V':'api_key: V','zendesk_token: V':'zendesk_token: V','ZENDESK_API_KEY="V"':'ZENDESK_API_KEY="V"','"token": "V"':'{"token": "V"}','zendesk token V':'zendesk token V','secret=V':'secret=V'};
for (const [sn,[cs,n]] of Object.entries(shapes)) { const row=[sn]; for (const [fn,f] of Object.entries(forms)) { let miss=0; for(let i=0;i<100;i++){const v=gen(cs,n); const o=c.redact(f.replace('V',v)).text; if(o.includes(v.slice(4,12))) miss++;} row.push(fn+':'+miss);} console.log(row.join('  ')); }
