// Generates the labelled relevance set of bench/recall/ (see README.md there): memories of three
// agents and the workspace, and queries whose answers sit in one or two of them among thousands
// of distractors that share their words. Deterministic: the same seed gives the same files, byte
// for byte. Run: node bench/recall/generate.mjs (writes memories.jsonl and queries.jsonl here).
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rng } from '../lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const SEED = 20260601
const NOW = Date.UTC(2026, 5, 1)
const DAY = 86_400_000
const DISTRACTORS = 2700
const AGENTS = ['atlas', 'beacon', 'cobalt']

const random = rng(SEED)
const int = (n) => Math.floor(random() * n)
const pick = (list) => list[int(list.length)]
const between = (lo, hi) => lo + int(hi - lo + 1)
/** Two different elements. */
const two = (list) => {
  const a = int(list.length)
  const b = (a + 1 + int(list.length - 1)) % list.length
  return [list[a], list[b]]
}

const SERVICES = (
  'billing checkout inventory payments onboarding analytics gateway scheduler notifications reporting auth catalog ' +
  'shipping pricing recommendations telemetry ingest exporter webhooks mailer importer renderer indexer crawler ' +
  'archiver profiles ledger invoicing refunds loyalty coupons storefront warehouse dispatch forecasting audit ' +
  'compliance identity sandbox search'
).split(' ')
const PEOPLE = (
  'Alice Bruno Chen Dana Emeka Farah Gustav Hana Ivan Jonas Keiko Lena Marco Nadia Omar Priya Quinn Rosa Sven Tariq ' +
  'Uma Viktor Wen Ximena Yusuf Zara Amir Beatriz Carlos Dmitri Elif Femi Greta Hugo Ines Jae Kofi Lucia Mateo Noor'
).split(' ')
const DATABASES = 'Postgres MySQL MongoDB Redis Cassandra ClickHouse DynamoDB SQLite CockroachDB Elasticsearch'.split(' ')
const QUEUES = 'Kafka RabbitMQ NATS SQS Pulsar Sidekiq Celery Faktory'.split(' ')
const REGIONS = 'Frankfurt Oregon Tokyo Virginia Dublin Sydney Singapore Montreal Mumbai Stockholm'.split(' ')
const LANGS = 'Rust Go Python TypeScript Kotlin Java Elixir Ruby Scala Swift'.split(' ')
const EDITORS = 'Vim Emacs Helix Zed VSCode IntelliJ Neovim Sublime'.split(' ')
const LOGTOOLS = 'Loki Splunk Datadog Graylog Papertrail Logtail'.split(' ')
const CACHES = 'Redis Memcached Varnish Caffeine Dragonfly'.split(' ')
const PETS = 'Biscuit Pepper Mochi Ziggy Luna Otis Nacho Waffles Pixel Juniper Olive Tofu'.split(' ')
const FOODS = 'peanuts shellfish gluten sesame dairy eggs soy mustard celery kiwi'.split(' ')
const CITIES = 'Lisbon Porto Kraków Tallinn Ljubljana Valencia Bergen Ghent Bologna Seville Riga Vilnius'.split(' ')
const MONTHS = 'January February March April May June July August September October November December'.split(' ')
const DAYS = 'Monday Tuesday Wednesday Thursday Friday'.split(' ')
const TIMES = '8:30 9:00 9:15 9:30 10:00 10:30 11:00 13:30 14:00 15:00 16:30'.split(' ')
const FILES = 'CHANGELOG.md RELEASES.md docs/releases.md NOTES.txt HISTORY.md release-notes.adoc'.split(' ')
const DIMS = 'endpoint tenant region customer tier'.split(' ')
const COUNTRIES = 'Brazil Canada Germany India Japan Mexico Norway Spain Kenya Chile'.split(' ')
const CUSTOMERS = 'Acme Globex Initech Umbrella Hooli Vandelay Wonka Stark Tyrell Soylent Cyberdyne Wayne'.split(' ')

const memories = []
const queries = []
const used = new Set()
/** `key` once per template: no two targets of one template share their distinguishing entity. */
function fresh(template, ...parts) {
  for (let i = 0; i < 200; i++) {
    const values = parts.map(pick)
    const key = template + '|' + values.join('|')
    if (!used.has(key)) {
      used.add(key)
      return values
    }
  }
  throw new Error(`no fresh values for ${template}`)
}
const agentOf = () => (random() < 0.15 ? null : pick(AGENTS))
const ago = (lo, hi) => NOW - between(lo * 24, hi * 24) * 3_600_000 - int(3_600_000)

function memory(text, { kind = 'interaction', agent, age, instruction = false }) {
  const m = { key: memories.length, agentId: agent, kind, instruction, timestamp: age, text }
  memories.push(m)
  return m
}
function query(text, category, targets, agent) {
  queries.push({ query: text, category, targets, agentIds: agent ? [agent] : null })
}

// ---- lexical: paraphrases that share two or three words with the answer, in the same forms ----
const LEXICAL = [
  () => {
    const [svc] = fresh('db', SERVICES)
    const [db, region] = [pick(DATABASES), pick(REGIONS)]
    return [`${svc} keeps its primary database on ${db} ${between(9, 17)} in the ${region} region.`, `what database engine is primary for ${svc}`]
  },
  () => {
    const [svc] = fresh('oncall', SERVICES)
    const who = pick(PEOPLE)
    return [`The on-call rotation for ${svc} belongs to ${who} this quarter.`, `who is in charge of the ${svc} on-call rotation`]
  },
  () => {
    const [who] = fresh('dog', PEOPLE)
    const pet = pick(PETS)
    return [`${who}'s dog is called ${pet} and hates thunderstorms.`, `what is the name of ${who}'s dog`]
  },
  () => {
    const [who] = fresh('allergy', PEOPLE)
    const food = pick(FOODS)
    return [`${who} is allergic to ${food}, so leave it out when ordering lunch for the team.`, `${who} allergic to anything? ordering food`]
  },
  () => {
    const [svc] = fresh('port', SERVICES)
    return [`The staging environment of ${svc} listens on port ${between(3000, 9999)}.`, `which port does staging ${svc} listen on`]
  },
  () => {
    const [svc] = fresh('notes', SERVICES)
    const file = pick(FILES)
    return [`Release notes for ${svc} are written in ${file} at the repository root.`, `where do the ${svc} release notes go`]
  },
  () => {
    const [svc] = fresh('grafana', SERVICES)
    const dim = pick(DIMS)
    return [`The Grafana dashboard of ${svc} shows p99 latency per ${dim}.`, `how does the ${svc} grafana dashboard break down latency`]
  },
  () => {
    const [who] = fresh('offsite', PEOPLE)
    const [city, month] = [pick(CITIES), pick(MONTHS)]
    return [`${who} organised the team offsite in ${city} for the second week of ${month}.`, `which city hosts the offsite ${who} organised`]
  },
  () => {
    const [lang] = fresh('talk', LANGS)
    const who = pick(PEOPLE)
    return [`${who} gave an internal talk on ${lang} error handling patterns.`, `who presented the talk about ${lang} error handling`]
  },
  () => {
    const [svc] = fresh('owner', SERVICES)
    const who = pick(PEOPLE)
    return [`Feature flags of ${svc} are toggled only by ${who} in production.`, `who may toggle ${svc} feature flags in production`]
  },
]

// ---- stemming: the query's key words are other forms of the answer's ----
const STEMMING = [
  () => {
    const [svc] = fresh('alerts', SERVICES)
    const who = pick(PEOPLE)
    return [`${who} configured the alerting thresholds for ${svc} last sprint.`, `who did the alert threshold configuration for ${svc}`]
  },
  () => {
    const [svc] = fresh('migrate', SERVICES)
    const [a, b] = two(DATABASES)
    return [`We migrated ${svc} from ${a} to ${b} over the weekend.`, `the migration of ${svc}, what was it moving to`]
  },
  () => {
    const [svc] = fresh('build', SERVICES)
    const lang = pick(LANGS)
    return [`The ${svc} build fails whenever ${lang} dependencies are updated without the lockfile.`, `${svc} builds failing after a dependency update`]
  },
  () => {
    const [svc] = fresh('batch', SERVICES)
    const who = pick(PEOPLE)
    return [`${who} is rewriting the ${svc} scheduler to batch notifications.`, `who handles notification batching in the scheduler of ${svc}`]
  },
  () => {
    const [svc] = fresh('freeze', SERVICES)
    const month = pick(MONTHS)
    return [`Deployments of ${svc} are paused until the ${month} audit is finished.`, `can I deploy ${svc} before the audit finishes`]
  },
  () => {
    const [who, svc] = fresh('cache', PEOPLE, SERVICES)
    const cache = pick(CACHES)
    return [`${who} recommended caching the ${svc} responses in ${cache} for ${between(5, 120)} seconds.`, `what cache did ${who} recommend for the ${svc} response`]
  },
  () => {
    const [lang] = fresh('mentor', LANGS)
    const who = pick(PEOPLE)
    return [`${who} volunteered to mentor the new interns on ${lang} this summer.`, `who is mentoring an intern in ${lang}`]
  },
  () => {
    const [svc, country] = fresh('tax', SERVICES, COUNTRIES)
    return [`Invoices generated by ${svc} were rounding taxes incorrectly for customers in ${country}.`, `${svc} invoice tax rounded wrong for a ${country} customer`]
  },
  () => {
    const [svc] = fresh('logs', SERVICES)
    const tool = pick(LOGTOOLS)
    return [`Logs of ${svc} are shipped to ${tool} and kept ${between(7, 90)} days.`, `where is ${svc} logging shipping to`]
  },
  () => {
    const [svc] = fresh('export', SERVICES)
    const cust = pick(CUSTOMERS)
    return [`${cust} reported that exports from ${svc} time out after ${between(2, 30)} minutes.`, `which customer is reporting ${svc} export timeouts`]
  },
]

// ---- recency: an older and a newer memory on the same subject; the newer one is the answer ----
const RECENCY = [
  () => {
    const [svc] = fresh('standup', SERVICES)
    const [t1, t2] = two(TIMES)
    return [`The ${svc} standup meeting happens at ${t1} every morning.`, `${svc} standup moved to ${t2}.`, `what time is the ${svc} standup meeting`]
  },
  () => {
    const [who] = fresh('workon', PEOPLE)
    const [s1, s2] = two(SERVICES)
    return [`${who} is working on the ${s1} payments integration.`, `${who} now works on the ${s2} search rewrite.`, `what is ${who} working on`]
  },
  () => {
    const [svc] = fresh('ratelimit', SERVICES)
    return [
      `The ${svc} API rate limit is ${between(10, 60) * 10} requests per minute.`,
      `Raised the ${svc} rate limit to ${between(70, 200) * 10} requests per minute.`,
      `current rate limit of the ${svc} API`,
    ]
  },
  () => {
    const [who] = fresh('editor', PEOPLE)
    const [e1, e2] = two(EDITORS)
    return [`${who}'s favourite editor is ${e1}.`, `${who} switched editors and uses ${e2} now.`, `which editor does ${who} use`]
  },
  () => {
    const [svc] = fresh('cluster', SERVICES)
    const [r1, r2] = two(REGIONS)
    return [`The ${svc} deploy target is the ${r1} cluster.`, `${svc} deploys go to the ${r2} cluster after the move.`, `which cluster does ${svc} deploy to`]
  },
  () => {
    const [who] = fresh('sync', PEOPLE)
    const [d1, d2] = two(DAYS)
    return [`The weekly sync with ${who} is on ${d1}.`, `Weekly sync with ${who} moved to ${d2}.`, `what day is the weekly sync with ${who}`]
  },
]

// ---- importance: a decision or instruction and an interaction with the same words; the
// interaction is the closer lexical match, the decision is the answer ----
const IMPORTANCE = [
  () => {
    const [svc] = fresh('jobs', SERVICES)
    const [q1, q2] = two(QUEUES)
    return [
      { kind: 'decision', text: `Decision after the design review: ${svc} will use ${q1} for background jobs, with retries and a dead letter queue.` },
      { text: `Maybe ${svc} could use ${q2} for background jobs.` },
      `what do we use for background jobs in ${svc}`,
    ]
  },
  () => {
    const [svc] = fresh('dryrun', SERVICES)
    return [
      { kind: 'learning', instruction: true, text: `Always run the ${svc} migrations with --dry-run first and post the plan in the channel; the user insists on it.` },
      { text: `Ran the ${svc} migrations today.` },
      `how should ${svc} migrations be run`,
    ]
  },
  () => {
    const [svc] = fresh('emails', SERVICES)
    const who = pick(PEOPLE)
    return [
      { kind: 'decision', text: `We agreed in the privacy review that ${svc} error messages must never include customer emails or names.` },
      { text: `${svc} error messages showed customer emails in a screenshot ${who} shared.` },
      `${svc} error messages with customer emails`,
    ]
  },
  () => {
    const [svc, lang] = fresh('pin', SERVICES, LANGS)
    return [
      { kind: 'decision', text: `Decided to pin the ${lang} toolchain to a single version across all ${svc} builds, updated quarterly.` },
      { text: `Asked which ${lang} version the ${svc} builds use.` },
      `which ${lang} version do ${svc} builds use`,
    ]
  },
  () => {
    const [who] = fresh('tabs', PEOPLE)
    return [
      { kind: 'interaction', instruction: true, text: `${who} prefers that code reviews never approve pull requests without a passing test run; please remember that.` },
      { text: `${who} approved pull requests in code review today.` },
      `can I approve pull requests in code review for ${who}`,
    ]
  },
]

// ---- agents: the same kind of fact for two agents; the other agent's is the better match and
// must not be returned to this one ----
const AGENT = [
  () => {
    const [svc] = fresh('runner', SERVICES)
    const [t1, t2] = two(['Jest', 'Vitest', 'Mocha', 'pytest', 'nextest', 'AVA', 'tap', 'RSpec'])
    return [`My test runner for ${svc} is ${t1}.`, `The test runner used for ${svc} tests is ${t2}, the runner everyone uses.`, `test runner for ${svc} tests`]
  },
  () => {
    const [svc] = fresh('branch', SERVICES)
    const [b1, b2] = two(['main', 'trunk', 'develop', 'release', 'stable', 'next'])
    return [`Pull requests for ${svc} target the ${b1} branch.`, `${svc} pull requests always target ${b2}; the ${svc} branch policy is strict about pull requests.`, `which branch do ${svc} pull requests target`]
  },
]

// ---- CJK: Chinese and Japanese memories, found by character bigrams ----
const SVC_ZH = '支付 订单 库存 物流 用户 搜索 推荐 消息 结算 报表 会员 风控'.split(' ')
const CITY_ZH = '北京 上海 深圳 杭州 成都 广州 南京 武汉'.split(' ')
const PEOPLE_ZH = '王伟 李娜 张敏 刘洋 陈静 杨帆 赵磊 黄丽'.split(' ')
const PEOPLE_JA = '田中 佐藤 鈴木 高橋 伊藤 渡辺 山本 中村'.split(' ')
const TIMES_JA = '九時 十時 十一時 二時 三時 四時'.split(' ')
const CJK = [
  () => {
    const [svc] = fresh('zh-db', SVC_ZH)
    const city = pick(CITY_ZH)
    return [`${svc}系统的数据库已经迁移到${city}机房。`, `${svc}系统的数据库在哪个机房`]
  },
  () => {
    const [svc] = fresh('zh-oncall', SVC_ZH)
    const who = pick(PEOPLE_ZH)
    return [`${who}负责${svc}服务的值班安排。`, `谁负责${svc}服务值班`]
  },
  () => {
    const [who] = fresh('ja-review', PEOPLE_JA)
    const t = pick(TIMES_JA)
    return [`${who}さんは毎朝${t}にコードレビューをします。`, `${who}さんのコードレビューは何時ですか`]
  },
]
const CJK_DISTRACTORS = [
  () => `${pick(SVC_ZH)}服务今天的发布很顺利，没有回滚。`,
  () => `${pick(PEOPLE_ZH)}在周会上讨论了${pick(SVC_ZH)}系统的性能问题。`,
  () => `${pick(CITY_ZH)}机房的网络昨天有波动，${pick(SVC_ZH)}服务受到影响。`,
  () => `${pick(SVC_ZH)}系统的数据库备份每天凌晨执行。`,
  () => `${pick(PEOPLE_JA)}さんは${pick(TIMES_JA)}から会議があります。`,
  () => `${pick(PEOPLE_JA)}さんがコードの設計をレビューしました。`,
]

// ---- distractors: agent chatter over the same services, people and tools ----
const DISTRACTOR = [
  () => `${pick(PEOPLE)} asked about the ${pick(SERVICES)} dashboard during standup.`,
  () => `Reviewed the ${pick(DATABASES)} upgrade notes for ${pick(SERVICES)} with ${pick(PEOPLE)}.`,
  () => `The ${pick(SERVICES)} tests were flaky again on ${pick(DAYS)}; reran them twice.`,
  () => `${pick(PEOPLE)} is out until ${pick(MONTHS)}; ${pick(PEOPLE)} covers the ${pick(SERVICES)} on-call.`,
  () => `Deployed ${pick(SERVICES)} to the ${pick(REGIONS)} cluster without issues.`,
  () => `The ${pick(SERVICES)} database connection pool was raised to ${between(10, 200)}.`,
  () => `${pick(PEOPLE)} shared a ${pick(LANGS)} snippet for parsing dates in ${pick(SERVICES)}.`,
  () => `Standup notes: ${pick(SERVICES)} migration on track, ${pick(SERVICES)} release slipped a day.`,
  () => `Cache hit rate for ${pick(SERVICES)} in ${pick(CACHES)} dropped to ${between(40, 95)} percent.`,
  () => `${pick(CUSTOMERS)} asked for an export of their ${pick(SERVICES)} data as CSV.`,
  () => `Release notes for ${pick(SERVICES)} mention the new ${pick(DIMS)} filter.`,
  () => `${pick(PEOPLE)} opened a pull request to bump ${pick(LANGS)} in ${pick(SERVICES)}.`,
  () => `The rate limit errors in ${pick(SERVICES)} came from a retry loop in the client.`,
  () => `${pick(PEOPLE)} and ${pick(PEOPLE)} paired on the ${pick(SERVICES)} scheduler for an hour.`,
  () => `Grafana alerts for ${pick(SERVICES)} latency fired ${between(2, 9)} times overnight.`,
  () => `Background jobs in ${pick(SERVICES)} are retried ${between(2, 8)} times before giving up.`,
  () => `${pick(PEOPLE)} brought ${pick(FOODS)} cookies for the team lunch on ${pick(DAYS)}.`,
  () => `${pick(PEOPLE)} walked their dog past the office in ${pick(CITIES)}.`,
  () => `The ${pick(SERVICES)} API returned 502 for ${between(2, 40)} minutes after the ${pick(REGIONS)} failover.`,
  () => `Talked with ${pick(PEOPLE)} about code review load; ${pick(SERVICES)} has ${between(3, 30)} open pull requests.`,
  () => `${pick(SERVICES)} logs were noisy; lowered the level of the ${pick(SERVICES)} client warnings.`,
  () => `The weekly sync covered the ${pick(SERVICES)} roadmap and the ${pick(MONTHS)} audit.`,
  () => `Invoices from ${pick(SERVICES)} now show the ${pick(COUNTRIES)} VAT number.`,
  () => `${pick(PEOPLE)} configured a new ${pick(LOGTOOLS)} dashboard for ${pick(SERVICES)} errors.`,
  () => `The ${pick(SERVICES)} build took ${between(4, 40)} minutes; most of it was ${pick(LANGS)} compilation.`,
  () => `${pick(PEOPLE)} will present the ${pick(SERVICES)} postmortem on ${pick(DAYS)} at ${pick(TIMES)}.`,
  () => `Feature flags for ${pick(SERVICES)} were cleaned up; ${between(3, 20)} stale flags removed.`,
  () => `The staging environment was down for ${pick(SERVICES)} because of an expired certificate.`,
  () => `${pick(PEOPLE)} prefers short pull requests with one concern each.`,
  () => `Interns started this week; ${pick(PEOPLE)} showed them the ${pick(SERVICES)} codebase.`,
]
/** Distractors of 10 to 80 words: one to four chatter sentences. */
function distractorText() {
  if (random() < 0.05) return Array.from({ length: 1 + int(2) }, () => pick(CJK_DISTRACTORS)()).join('')
  return Array.from({ length: 1 + Math.floor(random() ** 1.5 * 4) }, () => pick(DISTRACTOR)()).join(' ')
}

// ---- build ----
const plan = [
  [LEXICAL, 'lexical', 60],
  [STEMMING, 'stemming', 60],
  [RECENCY, 'recency', 36],
  [IMPORTANCE, 'importance', 30],
  [AGENT, 'agent', 20],
  [CJK, 'cjk', 18],
]
for (const [templates, category, count] of plan) {
  for (let i = 0; i < count; i++) {
    const out = templates[i % templates.length]()
    if (category === 'lexical' || category === 'stemming' || category === 'cjk') {
      const agent = agentOf()
      const m = memory(out[0], { agent, age: ago(1, 360) })
      query(out[1], category, [m], agent)
    } else if (category === 'recency') {
      const agent = agentOf()
      memory(out[0], { agent, age: ago(150, 330) })
      const fresher = memory(out[1], { agent, age: ago(2, 120) })
      query(out[2], category, [fresher], agent)
    } else if (category === 'importance') {
      const agent = agentOf()
      const [answer, chatter, q] = out
      const a = memory(answer.text, { agent, kind: answer.kind, instruction: !!answer.instruction, age: ago(5, 200) })
      memory(chatter.text, { agent, age: ago(5, 200) })
      query(q, category, [a], agent)
    } else if (category === 'agent') {
      const [mine, theirs] = two(AGENTS)
      const m = memory(out[0], { agent: mine, age: ago(1, 360) })
      memory(out[1], { agent: theirs, age: ago(1, 360) })
      query(out[2], category, [m], mine)
    }
  }
}
for (let i = 0; i < DISTRACTORS; i++) {
  memory(distractorText(), { agent: agentOf(), kind: random() < 0.9 ? 'interaction' : pick(['learning', 'error', 'milestone']), age: ago(0, 365) })
}

// Ids in shuffled order, so an id says nothing about what a memory is.
const order = memories.map((_, i) => i)
for (let i = order.length - 1; i > 0; i--) {
  const j = int(i + 1)
  ;[order[i], order[j]] = [order[j], order[i]]
}
const idOf = new Map(order.map((key, n) => [key, `m${String(n + 1).padStart(5, '0')}`]))
const lines = [...memories]
  .sort((a, b) => idOf.get(a.key).localeCompare(idOf.get(b.key)))
  .map((m) =>
    JSON.stringify({
      id: idOf.get(m.key),
      agentId: m.agentId,
      kind: m.kind,
      instruction: m.instruction,
      timestamp: new Date(m.timestamp).toISOString(),
      text: m.text,
    }),
  )
writeFileSync(join(here, 'memories.jsonl'), lines.join('\n') + '\n')
const qlines = queries.map((q, n) =>
  JSON.stringify({
    id: `q${String(n + 1).padStart(3, '0')}`,
    category: q.category,
    query: q.query,
    agentIds: q.agentIds,
    includeUnassigned: true,
    now: new Date(NOW).toISOString(),
    expected: q.targets.map((m) => idOf.get(m.key)),
  }),
)
writeFileSync(join(here, 'queries.jsonl'), qlines.join('\n') + '\n')
console.log(`${memories.length} memories, ${queries.length} queries`)
