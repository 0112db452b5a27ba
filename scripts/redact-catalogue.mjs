// Assembles the provider catalogue `src/redact/catalogue/providers.tsv` from the public rule sets
// a user would otherwise run (issue 29): facts only (names, prefixes, alphabets, lengths, the
// keywords that introduce a value), never code. The inputs are transcriptions of those facts into
// small text files, made with the read tools from the pinned sources below and kept outside the
// repository (default /tmp/sources; the first argument names another directory):
//
//   gitleaks-rules.tsv            gitleaks/gitleaks @009e025ad410 config/gitleaks.toml (MIT):
//                                 rule id, keywords, the secret's regex, `kw` (introduced by a
//                                 keyword and an operator) or `tok` (stands alone)
//   trufflehog-detectors.txt      trufflesecurity/trufflehog @001eb948e357 proto/detectors.proto
//                                 (AGPL-3.0, facts only): the detector names of `DetectorType`
//   detect-secrets-plugins.tsv    Yelp/detect-secrets 1.5.0 detect_secrets/plugins/*.py
//                                 (Apache-2.0): plugin, provider, keywords, shape
//
// and one input vendored in the repository (its facts are small and CC-BY-4.0 asks attribution,
// which its header gives): `scripts/sources/secrets-patterns-db.tsv`, mazen160/secrets-patterns-db
// @0e9d3ea6a888 db/rules-stable.yml: pattern name, keywords, literal prefix, alphabet, length.
//
// The provider words the redactor knew before the catalogue (`PROVIDER_WORDS` of
// `src/redact/rules.rs`, issue 19) are merged in with the source `loa:rules`, so that nothing
// known before is lost. Run: `node scripts/redact-catalogue.mjs [dir]`; the output is sorted and
// deterministic, so a rerun on the same inputs changes nothing.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = process.argv[2] ?? '/tmp/sources'
const OUT = join(root, 'src', 'redact', 'catalogue', 'providers.tsv')

const lines = (file) =>
  readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))

for (const f of ['gitleaks-rules.tsv', 'trufflehog-detectors.txt', 'detect-secrets-plugins.tsv']) {
  if (!existsSync(join(dir, f))) {
    console.error(`redact-catalogue: ${join(dir, f)} is missing (see the header of this script)`)
    process.exit(2)
  }
}

/** Lowercase, letters and digits only: how identifier words are compared. */
const norm = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, '')

// Names that are ordinary words or generic technology, not a provider: a catalogue entry keeps
// them (their facts are still facts) but marks them `ambiguous`, and the redactor does not take
// them as provider words in identifiers (`user_key`, `host_token`, `float_key` stay generic).
// Chosen by reading the name list; many are also in gitleaks' generic-api-key stopwords.
const AMBIGUOUS = new Set(
  `generic test user host uri jdbc amqp ftp redis ldap sqlserver mongodb privatekey customregex kubeconfig
  close float convert front manifest honey hive column rev guru nitro raven swell moderation sentiment abstract
  verifier commodities monday copper delighted magnetic polygon bored harvest apollo enigma bubble cricket
  impala streak semaphore tru courier ditto kanban mite deputy wit twist gemini percy circle surge checkout
  agora chatbot nimble refiner humanity parsers holistic image4 happi findl geocode sms ip data news weather zip
  mux m3o audd rawg juro duply tefter fountain upwave processst macaddress hotwire instabot demio convier
  shortcut authorize airship artsy dnscheck workday rosette atera aha bulksms age cloud keygen box signal
  paper loop json api token key secret auth access client app oauth webhook url account service platform
  line storage base coin here flight holiday meta polls rapid words scraper zipcode unify tly hunter roaring
  segment screenshot extractor currents clou private ghost flask watson lighthouse nexus firefox twine unity quip
  kafka mysql postgresql elasticsearch ansible gradle homebrew wordpress magento minio`
    .split(/\s+/)
    .filter(Boolean),
)

// Trailing words of a detector or rule name that name the credential, not the provider.
const SUFFIX = new Set(
  `token key keys api apikey secret secrets oauth oauth2 webhook v2 old personal access pat client id app
  basicauth sms management metadata integration user project write org organization refresh session
  password passwd credentials credential cred private public pub service account license signing`.split(/\s+/),
)

/** Words of a CamelCase or kebab/snake name: `NewRelicPersonalApiKey` -> new relic personal api key. */
function nameWords(name) {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase())
}

/** The provider part of a name: its words up to the first credential word. */
function providerOf(name) {
  const w = nameWords(name)
  let end = w.length
  while (end > 1 && SUFFIX.has(w[end - 1])) end--
  const first = w.findIndex((x, i) => i > 0 && SUFFIX.has(x))
  if (first > 0) end = Math.min(end, first)
  return w.slice(0, end)
}

// gitleaks rule ids whose first words are not the provider's name.
const GITLEAKS_NAME = {
  'cisco-meraki-api-key': 'meraki',
  'defined-networking-api-token': 'definednetworking',
  'microsoft-teams-webhook': 'microsoftteams',
  'octopus-deploy-api-key': 'octopusdeploy',
  '1password-secret-key': 'onepassword',
  '1password-service-account-token': 'onepassword',
  'hashicorp-tf-api-token': 'terraform',
  'intra42-client-secret': 'intra42',
  'freemius-secret-key': 'freemius',
  'aws-access-token': 'aws',
  'gcp-api-key': 'gcp',
  'sidekiq-sensitive-url': 'sidekiq',
  'privateai-api-token': 'privateai',
  'new-relic-browser-api-token': 'newrelic',
  'new-relic-insert-key': 'newrelic',
  'new-relic-user-api-id': 'newrelic',
  'new-relic-user-api-key': 'newrelic',
}
// Rules of other detectors than the provider catalogue (generic keywords, curl, private keys,
// Kubernetes manifests, JWTs, config files): not providers.
const GITLEAKS_SKIP = new Set([
  'curl-auth-header',
  'curl-auth-user',
  'database-password',
  'generic-api-key',
  'jwt',
  'jwt-base64',
  'kubernetes-secret-yaml',
  'private-key',
  'pkcs12-file',
  'nuget-config-password',
  'hashicorp-tf-password',
])

// secrets-patterns-db patterns whose name does not start with the provider's (`Picatic API key`
// is a Stripe-format key), and keywords that are no provider (`secret` of `Onelogin - 2`).
const SPDB_NAME = {
  aws: 'aws', awsapikey: 'aws', awsaccesskeyidvalue: 'aws', awsclientid: 'aws', awsmwsid: 'amazonmws', awsmwskey: 'amazonmws',
  awsappsyncgraphqlkey: 'awsappsync', picaticapikey: 'picatic', paypalbraintreeaccesstoken: 'braintree',
  braintreeapikey: 'braintree', fcmserverkey: 'firebase', discordwebhook: 'discord', microsoftteamswebhook: 'microsoftteams',
  googleapikey: 'google', googleoauthaccesstoken: 'google', twilioapikey: 'twilio', onelogin: 'onelogin',
  telegrambotapikey: 'telegram', terraformcloudpersonaltoken: 'terraform', datagov: 'datagov', gitlabv2: 'gitlab',
  newrelicadminapikey: 'newrelic', newrelicinsightsapikey: 'newrelic', newrelicrestapikey: 'newrelic',
  newrelicsyntheticslocationkey: 'newrelic', pypiuploadtoken: 'pypi', shopifycustomappaccesstoken: 'shopify',
  shopifysharedsecret: 'shopify', squareoauthsecret: 'square', hockeyapp: 'hockeyapp', saucetoken: 'saucelabs',
}
// Generic words, and names of one project's own variables in the list of environment-variable names
// the database took from public repositories (`claimr_token`, `kovan_private_key`): no provider.
const SPDB_SKIP = new Set(
  `secret customer flat less host line daily front graph key cheverny claimr kovan rinkeby ropsten starship gren
  grgit hab ofta vsce apigw awscn bundlesize eureka wincert gcr lottie snoowrap`.split(/\s+/),
)

// The kind each provider's findings carry: the existing kinds of `src/redact/rules.rs` (kept
// stable); a provider without a format rule of its own is found by the assignment detector,
// whose findings say `secret`.
const KIND = {
  adobe: 'adobe_client_secret', age: 'age_secret_key', airtable: 'airtable_token', alibaba: 'alibaba_access_key_id',
  amazonmws: 'amazon_mws_token', anthropic: 'anthropic_api_key', artifactory: 'artifactory_token', atlassian: 'atlassian_token',
  authress: 'authress_key', aws: 'aws_access_key_id', azure: 'azure_client_secret', bitbucket: 'bitbucket_token',
  buildkite: 'buildkite_token', circleci: 'circleci_token', clickhouse: 'clickhouse_api_key', clojars: 'clojars_token',
  cloudflare: 'cloudflare_origin_ca_key', contentful: 'contentful_token', databricks: 'databricks_token',
  definednetworking: 'defined_networking_token', digitalocean: 'digitalocean_token', docker: 'docker_hub_token',
  doppler: 'doppler_token', dropbox: 'dropbox_token', duffel: 'duffel_token', dynatrace: 'dynatrace_token',
  easypost: 'easypost_token', elevenlabs: 'elevenlabs_api_key', facebook: 'facebook_token', figma: 'figma_token',
  flutterwave: 'flutterwave_key', flyio: 'fly_io_token', frameio: 'frameio_token', github: 'github_token',
  gitlab: 'gitlab_token', gocardless: 'gocardless_token', gcp: 'google_api_key', google: 'google_api_key',
  grafana: 'grafana_token', groq: 'groq_api_key', harness: 'harness_token', terraform: 'hashicorp_tf_token',
  heroku: 'heroku_api_key', hubspot: 'hubspot_token', huggingface: 'huggingface_token', infracost: 'infracost_token',
  intra42: 'intra42_secret', linear: 'linear_api_key', mailchimp: 'mailchimp_api_key', mailgun: 'mailgun_api_key',
  mapbox: 'mapbox_token', maxmind: 'maxmind_license_key', netlify: 'netlify_token', newrelic: 'newrelic_key',
  notion: 'notion_token', npm: 'npm_token', nuget: 'nuget_token', octopusdeploy: 'octopus_deploy_api_key',
  onepassword: 'onepassword_token', openai: 'openai_api_key', openshift: 'openshift_token', perplexity: 'perplexity_api_key',
  planetscale: 'planetscale_token', postman: 'postman_token', prefect: 'prefect_token', pulumi: 'pulumi_token',
  pypi: 'pypi_token', readme: 'readme_token', rubygems: 'rubygems_token', scalingo: 'scalingo_token',
  sendgrid: 'sendgrid_api_key', sendinblue: 'sendinblue_api_key', sentry: 'sentry_token', settlemint: 'settlemint_token',
  shippo: 'shippo_token', shopify: 'shopify_token', slack: 'slack_token', sonar: 'sonar_token',
  sourcegraph: 'sourcegraph_token', square: 'square_token', stripe: 'stripe_key', telegram: 'telegram_bot_token',
  twilio: 'twilio_api_key', twitter: 'twitter_token', typeform: 'typeform_token', vault: 'vault_token',
  yandex: 'yandex_api_key', microsoftteams: 'webhook_url', razorpay: 'razorpay_key', posthog: 'posthog_token',
  supabase: 'supabase_token', tencent: 'tencent_secret_id', replicate: 'replicate_token',
}

// Published checksums inside the token (documented by the providers).
const CHECKSUM = { github: 'crc32', npm: 'crc32', age: 'bech32', pypi: 'macaroon' }

// The provider words of issue 19, before the catalogue.
const LOA_WORDS = `adafruit adobe airtable algolia alibaba amplitude anthropic artifactory asana atlassian auth0 aws azure
beamer bintray bitbucket bittrex braintree circleci clickhouse cloudflare codecov cohere coinbase confluence
confluent contentful contribsys databricks datadog deepgram digitalocean discord docker doppler droneci dropbox
duffel dynatrace easypost elevenlabs etsy facebook fastly finicity finnhub firebase flickr flutterwave frameio
freshbooks gcp github gitlab gitter gocardless google grafana groq heroku hubspot huggingface infracost intercom
jenkins jfrog jira kraken kucoin launchdarkly linear linkedin lob looker mailchimp mailgun mapbox mattermost meraki
messagebird mistral netlify newrelic notion npm nytimes okta openai pagerduty paypal perplexity pinecone plaid
planetscale postman privateai pulumi pypi rapidapi replicate rubygems sendbird sendgrid sentry shopify sidekiq slack
snyk sonar sourcegraph square squarespace stripe sumo sumologic supabase telegram terraform travis trello twilio
twitch twitter typeform vault vercel yandex zendesk`.split(/\s+/)

const entries = new Map()
function entry(name) {
  let e = entries.get(name)
  if (!e) {
    e = { name, prefixes: new Set(), shapes: new Set(), keywords: new Set([name]), sources: new Set() }
    entries.set(name, e)
  }
  return e
}

/** Literal prefixes a regex's matches start with (simple alternations expanded), or []. */
function literalPrefixes(re) {
  let outs = ['']
  let i = 0
  while (i < re.length) {
    const c = re[i]
    if (c === '\\' && /[.\-~$]/.test(re[i + 1] ?? '')) {
      outs = outs.map((o) => o + re[i + 1])
      i += 2
    } else if (/[A-Za-z0-9_\-.~:$]/.test(c) && c !== '.') {
      outs = outs.map((o) => o + c)
      i++
    } else if (c === '[' && /^\[[A-Za-z0-9_-]{1,6}\]/.test(re.slice(i)) && !re.slice(i).match(/^\[[^\]]*-[^\]]/)) {
      // A small class of literals (`xox[os]-`): one prefix per member.
      const close = re.indexOf(']', i)
      if (/[?*{+]/.test(re[close + 1] ?? '')) break
      const members = [...re.slice(i + 1, close)]
      outs = outs.flatMap((o) => members.map((m) => o + m))
      i = close + 1
    } else if (re.startsWith('(?:', i)) {
      const close = re.indexOf(')', i)
      const body = re.slice(i + 3, close)
      if (close < 0 || !/^[A-Za-z0-9_|-]+$/.test(body) || /[?*{]/.test(re[close + 1] ?? '')) break
      const alts = body.split('|')
      outs = outs.flatMap((o) => alts.map((a) => o + a))
      i = close + 1
    } else break
  }
  // A literal directly followed by a quantifier is not all there: drop its last character.
  if (/[?*{+]/.test(re[i] ?? '')) outs = outs.map((o) => o.slice(0, -1))
  return outs.filter((o) => o.length >= 2 && !/[:/]/.test(o))
}

/** The characters of a class body (`a-z0-9_\\-`), or null for what a class body cannot say. */
function classChars(body) {
  const out = new Set()
  for (let i = 0; i < body.length; i++) {
    let c = body[i]
    if (c === '\\') {
      c = body[++i]
      if (c === 'd') for (const d of '0123456789') out.add(d)
      else if (c === 'w') for (const d of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_') out.add(d)
      else if (/[A-Za-z]/.test(c)) return null // \S, \W, \s: no alphabet
      else out.add(c)
    } else if (body[i + 1] === '-' && i + 2 < body.length) {
      for (let x = c.charCodeAt(0); x <= body.charCodeAt(i + 2); x++) out.add(String.fromCharCode(x))
      i += 2
    } else out.add(c)
  }
  return out
}

/** A class body for a set of characters: ranges of three or more, `-` last. */
function classBody(set) {
  const codes = [...set].filter((c) => c !== '-').map((c) => c.charCodeAt(0)).sort((a, b) => a - b)
  let out = ''
  for (let i = 0; i < codes.length; ) {
    let j = i
    while (j + 1 < codes.length && codes[j + 1] === codes[j] + 1) j++
    out += j - i >= 2 ? `${String.fromCharCode(codes[i])}-${String.fromCharCode(codes[j])}` : codes.slice(i, j + 1).map((c) => String.fromCharCode(c)).join('')
    i = j + 1
  }
  return set.has('-') ? out + '-' : out
}

/**
 * The alphabet and length of a secret regex, where the whole regex is a sequence of counted
 * classes and literal characters after an optional literal prefix (`[0-9a-f]{8}-[0-9a-f]{4}-...`
 * of a UUID: `0-9a-f-`, 36): the shape a value must have. Empty where the regex says more than
 * that (alternatives, open repeats).
 */
function shape(re) {
  let r = re.replace(/^\(\?i\)/, '').replace(/^\\b/, '').replace(/\\b$/, '')
  r = r.replace(/^\(\?:[A-Za-z0-9_|]+\)\?/, '') // an optional prefix (`(?:squ_|sqp_)?`)
  r = r.replace(/^(?:[A-Za-z0-9_-]|\\[.-])+(?=\[)/, '') // a literal prefix (`NRAK-`): the catalogue lists prefixes apart
  const chars = new Set()
  let lo = 0
  let hi = 0
  let i = 0
  while (i < r.length) {
    if (r[i] === '[') {
      let close = i + 1
      while (close < r.length && (r[close] !== ']' || r[close - 1] === '\\')) close++
      const set = classChars(r.slice(i + 1, close))
      const q = r.slice(close + 1).match(/^\{(\d+)(?:,(\d+))?\}/)
      if (!set || !q) return { charset: '', length: '' }
      for (const c of set) chars.add(c)
      lo += Number(q[1])
      hi += Number(q[2] ?? q[1])
      i = close + 1 + q[0].length
    } else if (r[i] === '\\' && /[.\-_]/.test(r[i + 1] ?? '')) {
      chars.add(r[i + 1])
      lo++
      hi++
      i += 2
    } else if (/[A-Za-z0-9_-]/.test(r[i])) {
      chars.add(r[i])
      lo++
      hi++
      i++
    } else return { charset: '', length: '' }
  }
  if (!chars.size || lo < 8 || [...chars].some((c) => c === '|' || c === '\t' || c === ',')) return { charset: '', length: '' }
  return { charset: classBody(chars), length: lo === hi ? `${lo}` : `${lo}-${hi}` }
}

/** Adds a shape to an entry (at most 6, the first ones found). */
function addShape(e, s) {
  if (s.charset && e.shapes.size < 6) e.shapes.add(`${s.charset}\t${s.length}`)
}

// gitleaks
for (const l of lines('gitleaks-rules.tsv')) {
  const [id, kws, re, mode] = l.split('\t')
  if (GITLEAKS_SKIP.has(id)) continue
  // gitleaks names a rule `<provider>-<qualifier>-<credential>` (`gitlab-deploy-token`).
  const name = GITLEAKS_NAME[id] ?? norm(id.split('-')[0])
  const e = entry(name)
  e.sources.add(`gitleaks:${id}`)
  if (mode === 'kw') {
    for (const k of kws.split(',')) if (/^[a-z][a-z0-9_-]*[a-z0-9]$/.test(k) && !k.includes('__')) e.keywords.add(norm(k))
  }
  if (re !== '-') {
    addShape(e, shape(re))
    if (mode === 'tok') for (const p of literalPrefixes(re)) e.prefixes.add(p)
  }
}

// trufflehog: one entry per provider; the full name is a keyword too (`exchangerateapi`).
for (const l of lines('trufflehog-detectors.txt')) {
  for (const det of l.split(/\s+/).filter(Boolean)) {
    const words = providerOf(det)
    const name = norm(words.join(''))
    if (name.length < 2) continue
    const e = entry(name)
    e.sources.add(`trufflehog:${det.toLowerCase()}`)
    const full = norm(det)
    if (full !== name && !SUFFIX.has(full)) e.keywords.add(full)
  }
}

// detect-secrets
for (const l of lines('detect-secrets-plugins.tsv')) {
  const [plugin, provider, kws] = l.split('\t')
  if (['generic', 'url', 'jwt', 'private_key'].includes(provider)) continue
  const e = entry(norm(provider))
  e.sources.add(`detect-secrets:${plugin}`)
  for (const k of kws.split(',')) if (/^[a-z][a-z0-9_]*$/.test(k) && norm(k).length >= 3) e.keywords.add(norm(k))
}

// Provider names that are one entry under two spellings.
const SAME = { sumologic: 'sumo', travisci: 'travis', sendinbluev2: 'sendinblue', githubold: 'github' }

// The keywords of the token rules (`src/redact/rules.rs`): a prefix is kept where one of them
// reaches it, as the catalogue's test asks; the others are reported (no rule finds them yet).
const RULE_KEYWORDS = [...readFileSync(join(root, 'src', 'redact', 'rules.rs'), 'utf8').matchAll(/rule\(\s*"[a-z0-9_]+",\s*&\[([^\]]*)\]/g)]
  .flatMap((m) => [...m[1].matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((k) => k[1].toLowerCase()))
const reachable = (prefix) => RULE_KEYWORDS.some((k) => prefix.toLowerCase().startsWith(k) || k.startsWith(prefix.toLowerCase()))
const unreached = new Set()

/** The entry a name or keyword already denotes (its own name, or a keyword of one entry). */
function known(word) {
  if (!word) return undefined
  if (entries.has(word)) return word
  for (const e of entries.values()) if (e.keywords.has(word)) return e.name
  return undefined
}

// secrets-patterns-db: the provider is the entry its name already denotes (`Fixerio`, `Github
// Personal Access Token`), else the one its keyword denotes (`(?:airbrake).{0,40}` of
// `Airbrakeprojectkey`), else a new entry named by the keyword or the name. Its keywords name the provider; its prefixes are facts of a token format
// and are kept where the provider has a format rule of its own (a kind), as a rule must find them.
for (const l of readFileSync(join(root, 'scripts', 'sources', 'secrets-patterns-db.tsv'), 'utf8').split('\n')) {
  if (!l.trim() || l.startsWith('#')) continue
  const [pattern, kws, prefixes, charset, length] = l.split('\t')
  const keywords = kws === '-' ? [] : kws.split(',').map(norm).filter((k) => k.length >= 3)
  const name = SPDB_NAME[norm(pattern)] ?? known(norm(providerOf(pattern.replace(/_/g, ' ')).join(''))) ?? known(keywords[0]) ?? keywords[0] ?? norm(providerOf(pattern.replace(/_/g, ' ')).join(''))
  if (name.length < 2 || SPDB_SKIP.has(name)) continue
  const e = entry(SAME[name] ?? name)
  e.sources.add(`secrets-patterns-db:${pattern.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}`)
  for (const k of keywords) e.keywords.add(k)
  // Its lengths may list alternatives (`8,32`): one shape each.
  if (charset !== '-' && length !== '-' && classChars(charset) && !/[|,]/.test(charset)) {
    for (const l of length.split(',')) if (/^\d+(?:-\d+)?$/.test(l) && Number(l.split('-')[0]) >= 8) addShape(e, { charset: classBody(classChars(charset)), length: l })
  }
  if (prefixes !== '-' && KIND[SAME[name] ?? name]) {
    for (const pre of prefixes.split(',')) {
      if (pre.length < 3 || /[:/]/.test(pre)) continue
      if (reachable(pre)) e.prefixes.add(pre)
      else unreached.add(`${name}:${pre}`)
    }
  }
}

for (const w of LOA_WORDS) entry(w).sources.add('loa:rules')

// Token formats of trufflehog's detectors that the rule sets above do not state (issue 29): the
// prefix, alphabet and length of `pkg/detectors/<detector>` (its regex and its pattern tests'
// samples), as the rules of `src/redact/rules.rs` match them; the kind their findings carry.
const TRUFFLEHOG_FORMATS = [
  // [detector, prefixes, charset, length, kind]
  ['adafruitio', ['aio_'], 'A-Za-z0-9', '28', 'adafruit_io_key'],
  ['apify', ['apify_api_'], 'A-Za-z0-9', '30-64', 'apify_token'],
  ['aws', ['da2-'], '', '', ''],
  ['besttime', ['pri_'], 'a-f0-9', '32', 'besttime_api_key'],
  ['buildkite', ['bkua_'], 'a-z0-9', '40', ''],
  ['dynatrace', ['dt0s01.', 'dt0s02.'], '', '', ''],
  ['teamworkcrm', ['tkn.v1_'], 'A-Za-z0-9', '71', 'teamwork_token'],
  ['teamworkdesk', ['tkn.v1_'], 'A-Za-z0-9', '71', 'teamwork_token'],
  ['teamworkspaces', ['tkn.v1_'], 'A-Za-z0-9', '71', 'teamwork_token'],
  ['wakatime', ['waka_'], 'a-f0-9-', '36', 'wakatime_api_key'],
]
for (const [det, prefixes, charset, length, kind] of TRUFFLEHOG_FORMATS) {
  const e = entries.get(det)
  if (!e) continue
  e.sources.add(`trufflehog:${det}`)
  for (const p of prefixes) e.prefixes.add(p)
  if (!e.charset && charset) Object.assign(e, { charset, length })
  if (kind && !KIND[det]) KIND[det] = kind
}

// Spellings of a provider's name that its rule ids use (`1password-secret-key`).
const EXTRA = new Set(['1password'])
for (const k of EXTRA) entry('onepassword').keywords.add(k)

for (const [from, to] of Object.entries(SAME)) {
  const a = entries.get(from)
  if (!a || !entries.get(to)) continue
  const b = entries.get(to)
  for (const k of ['prefixes', 'keywords', 'sources']) for (const x of a[k]) b[k].add(x)
  for (const x of a.shapes) addShape(b, { charset: x.split('\t')[0], length: x.split('\t')[1] })
  entries.delete(from)
}

const cell = (xs, sep = ',') => (xs.length ? xs.join(sep) : '-')
const out = [
  '# The provider catalogue of the redactor (issue 29), assembled by scripts/redact-catalogue.mjs from the',
  '# public rule sets named in its sources column (facts only). Columns, tab-separated:',
  '# name  kind  prefixes  charset  length  checksum  keywords  flags  sources',
  '# name: lowercase letters and digits; kind: what [REDACTED:<kind>] says for its format rules (`secret`:',
  '# found by the keyword-introduced value detector only); prefixes: literal starts of its token formats;',
  '# charset/length: the shapes a rule set states for the secret (after its prefix), alphabet and length',
  '# (n or min-max), several separated by `|`; keywords:',
  '# identifier words that name the provider (ordinary words left out); flags: `ambiguous` (the name is an',
  '# ordinary word, so it is no keyword) or `-`; sources: `gitleaks:<rule-id>`, `trufflehog:<detector>`,',
  '# `detect-secrets:<plugin>`, `secrets-patterns-db:<pattern>`, `loa:rules` (the provider words of issue 19).',
]
for (const e of [...entries.values()].sort((a, b) => a.name.localeCompare(b.name))) {
  const ambiguous = AMBIGUOUS.has(e.name) && !e.sources.has('loa:rules')
  // A keyword that is an ordinary word, or holds a credential word (`accountkey` of detect-secrets'
  // Azure plugin), would make every `secret_key` a provider's: left out.
  const keywords = [...e.keywords]
    .filter((k) => k.length >= 3 && !SUFFIX.has(k) && !(AMBIGUOUS.has(k) && !e.sources.has('loa:rules')))
    .filter((k) => k === e.name || EXTRA.has(k) || !/key|secret|token|pass|auth/.test(k.replace(e.name, '')) || /^[a-z]+(?:api)?key$/.test(k) && !/^(?:account|secret|private|api|access|secretaccess)key$/.test(k))
    .sort()
  out.push(
    [
      e.name,
      KIND[e.name] ?? 'secret',
      cell([...e.prefixes].sort()),
      cell([...e.shapes].map((x) => x.split('\t')[0]), '|'),
      cell([...e.shapes].map((x) => x.split('\t')[1]), '|'),
      CHECKSUM[e.name] ?? '-',
      cell(keywords),
      ambiguous ? 'ambiguous' : '-',
      [...e.sources].sort().join(','),
    ].join('\t'),
  )
}
writeFileSync(OUT, out.join('\n') + '\n')
console.log(`redact-catalogue: ${entries.size} providers -> ${OUT}`)
if (unreached.size) console.log(`secrets-patterns-db prefixes no rule finds (left out): ${[...unreached].join(' ')}`)
