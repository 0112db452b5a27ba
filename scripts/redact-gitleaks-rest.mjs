// Writes `testdata/corpus/gitleaks_rule_samples.rest.jsonl` (issue 29): gitleaks' OWN true and
// false-positive samples (the `tps` / `fps` its rule generators define in
// `cmd/generate/config/rules/*.go`, gitleaks/gitleaks, MIT) for the rules that are NOT in the
// development split `gitleaks_rule_samples.dev.jsonl`. It is the public stand-in for the issue's
// held-out figure ("gitleaks' own samples of the rules not shown"), so it is measured, not tuned on.
//
// The samples below are transcribed as data from the files named beside each rule (the commit is the
// one the file was read at); those gitleaks writes out literally are read from
// `testdata/corpus/gitleaks_rest_literals.jsonl` (see `rule` below). Where gitleaks draws a random
// secret (`secrets.NewSecret(regex)`), the regex is kept and a value is drawn from it with a
// seeded generator (seed 2911), and where it wraps
// a secret in its sample generator (`utils.GenerateSampleSecrets(id, secret)`, six contexts; the
// older `GenerateSampleSecret`, one context) the same contexts are written. The secret's span is
// known for generated contexts; for a literal sample it is located with the rule's secret regex
// (gitleaks-rules.tsv, see scripts/redact-catalogue.mjs) when that regex finds it, else left empty
// (the sample then counts as found when anything in it is redacted).
//
// Run: `node scripts/redact-gitleaks-rest.mjs [sources-dir]` (default /tmp/sources).
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { prng } from './redact-devcorpus.mjs'
import { regexSampler } from './regex-sample.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = process.argv[2] ?? '/tmp/sources'
const corpus = join(root, 'testdata', 'corpus')
const rng = prng(2911)
const int = (n) => Math.floor(rng() * n)
const generate = regexSampler(int)

// gitleaks' charset helpers (cmd/generate/config/utils), as regexes.
const AN = (n) => `[a-z0-9]{${n}}`
const AXS = (n) => `[a-z0-9_-]{${n}}`
const AX = (n) => `[a-z0-9=_\\-]{${n}}`
const HEX = (n) => `[a-f0-9]{${n}}`
const NUM = (n) => `[0-9]{${n}}`
const HEX8_4 = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'


// Sample builders. A value is a string or an array of parts (strings and g(regex) draws).
const g = (re) => ({ re })
const val = (parts) => (Array.isArray(parts) ? parts.map((p) => (typeof p === 'string' ? p : generate(p.re))).join('') : parts)
/** `utils.GenerateSampleSecrets(id, secret)`: the secret in gitleaks' six contexts. */
const six = (id, secret) => {
  const s = val(secret)
  return [
    `${id}Token="${s}"`,
    `${id}Token = "${s}"`,
    `${id}Token=${s}`,
    `${id}Token = ${s}`,
    `{\n    "${id}_token": "${s}"\n}`,
    `{"config.ini": "${id.toUpperCase()}_TOKEN=${s}\\nBACKUP_ENABLED=true"}`,
  ].map((text) => ({ text, secret: s }))
}
/** The older `generateSampleSecret(id, secret)`: one context. */
const one = (id, secret) => {
  const s = val(secret)
  return [{ text: `${id}_api_token = "${s}"`, secret: s }]
}
/** A sample written out (parts may draw a secret, as `"x := \"" + secrets.NewSecret(...) + "\""`). */
const lit = (...parts) => ({ text: val(parts) })

// gitleaks' written-out samples (its literal tps, fps and the literal secrets it wraps in its
// sample contexts) are fake tokens a secret scanner would flag, so they live in a data file
// (testdata/corpus/gitleaks_rest_literals.jsonl, provenance in its README), not in this source:
// a rule that has some takes them from there in order, `tp()` / `fp()` a sample, `secret()` a
// secret for `six` / `one`. Every literal of the file must be used, exactly once.
const LITERALS = new Map()
for (const line of readFileSync(join(corpus, 'gitleaks_rest_literals.jsonl'), 'utf8').split('\n')) {
  if (!line) continue
  const { rule_id: id, use, text } = JSON.parse(line)
  if (!LITERALS.has(id)) LITERALS.set(id, { tp: [], fp: [], secret: [] })
  LITERALS.get(id)[use].push(text)
}
/** `[id, file, tps, fps]` of a rule whose samples `build({ tp, fp, secret })` writes. */
const rule = (id, file, build) => {
  const left = LITERALS.get(id)
  if (!left) throw new Error(`${id}: no literals in gitleaks_rest_literals.jsonl`)
  const next = (use) => {
    if (!left[use].length) throw new Error(`${id}: more ${use} literals used than the data file holds`)
    return left[use].shift()
  }
  const [tps, fps] = build({ tp: () => ({ text: next('tp') }), fp: () => ({ text: next('fp') }), secret: () => next('secret') })
  for (const [use, rest] of Object.entries(left)) {
    if (rest.length) throw new Error(`${id}: ${rest.length} ${use} literals of the data file unused`)
  }
  LITERALS.delete(id)
  return [id, file, tps, fps]
}

// [rule id, file@commit, true positives, false positives]
const RULES = [
  rule('1password-secret-key', '1password.go@fca2d13843c2', ({ tp, fp }) => [[
    ...six('1password', [g('A3-[A-Z0-9]{6}-[A-Z0-9]{11}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}')]),
    ...six('1password', [g('A3-[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}')]),
    tp(),
    tp(),
  ], [
    fp(),
    fp(),
  ]]),
  ['adafruit-api-key', 'adafruit.go@fbb4636fc422', six('adafruit', [g(AXS(32))]), []],
  ['adobe-client-id', 'adobe.go@d58c408a5e3f', six('adobe', [g(HEX(32))]), []],
  ['adobe-client-secret', 'adobe.go@d58c408a5e3f', [lit('adobeClient := "p8e-', g(HEX(32)), '"')], []],
  ['airtable-api-key', 'airtable.go@d58c408a5e3f', six('airtable', [g(AN(17))]), []],
  ['alibaba-access-key-id', 'alibaba.go@7c56229a9a0b', [lit('alibabaKey := "LTAI', g(HEX(20)), '"')], []],
  rule('anthropic-api-key', 'anthropic.go@ce9b98a0a958', ({ tp, fp }) => [[
    tp(),
    ...one('anthropic', ['sk-ant-api03-', g(AXS(93)), 'AA']),
  ], [
    fp(),
    fp(),
    // (the third fp, an admin key, is a true positive of anthropic-admin-api-key: not a negative)
  ]]),
  rule('anthropic-admin-api-key', 'anthropic.go@ce9b98a0a958', ({ tp, fp }) => [[
    tp(),
    ...one('anthropic', ['sk-ant-admin01-', g(AXS(93)), 'AA']),
  ], [
    fp(),
    fp(),
  ]]),
  rule('artifactory-reference-token', 'artifactory.go@fd0086c6d84f', ({ fp }) => [[lit('artifactoryRefToken := "cmVmd', g(AN(59)), '"')], [
    fp(),
    lit('wrongStart := "cmVMd', g(AN(59)), '"'),
    lit('wrongLength := "cmVmd', g(AN(49)), '"'),
    lit('partOfAlongUnrelatedBlob gYnkgcmVmd', g(AN(59)), 'VyZSB2'),
  ]]),
  rule('atlassian-api-token', 'atlassian.go@3f5669d54579', ({ tp, fp, secret }) => [[
    ...six('atlassian', [g(AN(20) + '[a-f0-9]{4}')]),
    ...six('confluence', [g(AN(20) + '[a-f0-9]{4}')]),
    ...six('jira', [g(AN(20) + '[a-f0-9]{4}')]),
    tp(),
    ...six('jira', secret()),
  ], [fp()]]),
  rule('aws-access-token', 'aws.go@b35e7ea22a6f', ({ fp, secret }) => [[
    ...six('AWS', secret()),
    ...six('AWS', ['AKIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ASIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ABIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ACCA', g('[A-Z2-7]{16}')]),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
  ]]),
  rule('beamer-api-token', 'beamer.go@d58c408a5e3f', ({ fp }) => [six('beamer', ['b_', g(AX(44))]), [
    fp(),
  ]]),
  ['bitbucket-client-id', 'bitbucket.go@d4800d433f16', six('bitbucket', [g(AN(32))]), []],
  ['bittrex-secret-key', 'bittrex.go@fbb4636fc422', six('bittrex', [g(AN(32))]), []],
  ['clojars-api-token', 'clojars.go@1a23fa94d4aa', six('clojars', ['CLOJARS_', g(AN(60))]), []],
  // cloudflare.go: each rule's fps are the other cloudflare rules' samples, true positives of
  // those rules, so they are not negatives here.
  rule('cloudflare-origin-ca-key', 'cloudflare.go@fbb4636fc422', ({ tp, secret }) => [[
    ...six('cloudflare', secret()),
    tp(),
    tp(),
  ], []]),
  ['codecov-access-token', 'codecov.go@80f931f08672', six('codecov', [g(AN(32))]), []],
  ['coinbase-access-token', 'coinbase.go@fbb4636fc422', six('coinbase', [g(AXS(64))]), []],
  ['confluent-secret-key', 'confluent.go@fbb4636fc422', six('confluent', [g(AN(64))]), []],
  ['confluent-access-token', 'confluent.go@fbb4636fc422', six('confluent', [g(AN(16))]), []],
  ['contentful-delivery-api-token', 'contentful.go@fd366778c5fb', six('contentful', [g(AN(43))]), []],
  ['digitalocean-access-token', 'digitalocean.go@5eda8a05dbe0', six('do', ['doo_v1_', g(HEX(64))]), []],
  ['discord-api-token', 'discord.go@7c56229a9a0b', six('discord', [g(HEX(64))]), []],
  rule('discord-client-id', 'discord.go@7c56229a9a0b', ({ fp }) => [six('discord', [g(NUM(18))]), [fp()]]),
  rule('discord-client-secret', 'discord.go@7c56229a9a0b', ({ fp }) => [six('discord', [g(NUM(32))]), [fp()]]),
  ['doppler-api-token', 'doppler.go@d58c408a5e3f', six('doppler', ['dp.pt.', g(AN(43))]), []],
  ['dropbox-api-token', 'dropbox.go@d4800d433f16', six('dropbox', [g(AN(15))]), []],
  rule('easypost-test-api-token', 'easypost.go@1a23fa94d4aa', ({ fp }) => [[
    ...six('EZTK', [g('EZTK[a-zA-Z0-9]{54}')]),
    lit(g('EZTK[a-zA-Z0-9]{54}')),
    lit('EZTK', g('[a-zA-Z0-9]{54}')),
    lit('example.com?t=EZTK', g('[a-zA-Z0-9]{54}'), '&q=1'),
  ], [fp()]]),
  rule('facebook-access-token', 'facebook.go@d88bc094f782', ({ tp }) => [[
    tp(),
    tp(),
    tp(),
  ], []]),
  ['finicity-client-secret', 'finicity.go@fd366778c5fb', six('finicity', [g(AN(20))]), []],
  ['finicity-api-token', 'finicity.go@fd366778c5fb', six('finicity', [g(HEX(32))]), []],
  ['flickr-access-token', 'flickr.go@fbb4636fc422', six('flickr', [g(AN(32))]), []],
  ['flutterwave-public-key', 'flutterwave.go@2d2383f58d48', six('flutterwavePubKey', ['FLWPUBK_TEST-', g(HEX(32)), '-X']), []],
  ['freshbooks-access-token', 'freshbooks.go@fbb4636fc422', six('freshbooks', [g(AN(64))]), []],
  rule('github-fine-grained-pat', 'github.go@a7e2844d8c9a', ({ fp }) => [six('github', ['github_pat_', g(AN(82))]), [
    fp(),
  ]]),
  rule('github-oauth', 'github.go@a7e2844d8c9a', ({ fp }) => [six('github', ['gho_', g(AN(36))]), [fp()]]),
  ['gitlab-feature-flag-client-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glffct-', g(AN(20))]), []],
  ['gitlab-kubernetes-agent-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glagent-', g(AN(50))]), []],
  rule('gitlab-pat', 'gitlab.go@2c097d4b318b', ({ fp }) => [six('gitlab', ['glpat-', g(AN(20))]), [fp()]]),
  rule('gitlab-ptt', 'gitlab.go@2c097d4b318b', ({ fp }) => [six('gitlab', ['glptt-', g(HEX(40))]), [fp()]]),
  rule('gitlab-runner-authentication-token-routable', 'gitlab.go@2c097d4b318b', ({ fp }) => [six('gitlab', ['glrt-t', g(NUM(1)), '_', g(AN(27)), '.', g(AN(2)), g(AN(7))]), [
    fp(),
  ]]),
  ['gitlab-scim-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glsoat-', g(AN(20))]), []],
  ['gitlab-session-cookie', 'gitlab.go@2c097d4b318b', six('gitlab', ['_gitlab_session=', g(AN(32))]), []],
  ['grafana-api-key', 'grafana.go@7c56229a9a0b', six('grafana-api-key', ['eyJrIjoi', g(AN(70))]), []],
  ['harness-api-key', 'harness.go@d58c408a5e3f', [
    ...six('harness', ['pat.', g(AN(22)), '.', g(AN(24)), '.', g(AN(20))]),
    ...six('harness', ['sat.', g(AN(22)), '.', g(AN(24)), '.', g(AN(20))]),
  ], []],
  rule('hashicorp-tf-api-token', 'hashicorp.go@1a23fa94d4aa', ({ tp, fp }) => [[
    ...six('hashicorpToken', [g(HEX(14)), '.atlasv1.', g(AX('60,70'))]),
    tp(),
  ], [fp()]]),
  rule('vault-service-token', 'hashicorp_vault.go@81fc668f98e2', ({ tp, fp }) => [[
    ...one('vault', [g('s\\.[0-9][a-zA-Z0-9]{23}')]),
    tp(),
    ...one('vault', [g('hvs\\.[0-9][\\w\\-]{89}')]),
    tp(),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
  ]]),
  rule('heroku-api-key-v2', 'heroku.go@6f251eef65b7', ({ tp }) => [[
    ...six('heroku', [g('HRKU-AA[0-9a-zA-Z_-]{58}')]),
    tp(),
    tp(),
  ], []]),
  rule('huggingface-access-token', 'huggingface.go@7c56229a9a0b', ({ tp, fp }) => [[
    ...six('huggingface', ['hf_', g('[a-zA-Z]{34}')]),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    // (one binary-looking sample with U+FFFD characters is not transcribed)
    fp(),
    fp(),
    fp(),
  ]]),
  rule('huggingface-organization-api-token', 'huggingface.go@7c56229a9a0b', ({ tp, fp }) => [[
    ...six('huggingface', ['api_org_', g('[a-zA-Z]{34}')]),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    lit('api_org_', g('[a-zA-Z]{34}')),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
  ]]),
  ['intercom-api-key', 'intercom.go@fbb4636fc422', six('intercom', [g(AX(60))]), []],
  rule('intra42-client-secret', 'intra42.go@fbb4636fc422', ({ tp }) => [[
    lit('clientSecret := "s-s4t2ud-', g(HEX(64)), '"'),
    lit('clientSecret := "s-s4t2af-', g(HEX(64)), '"'),
    tp(),
    tp(),
  ], []]),
  ['jfrog-api-key', 'jfrog.go@f6af25410b1e', [lit('--set imagePullSecretJfrog.password=', g(AN(73)))], []],
  ['jfrog-identity-token', 'jfrog.go@f6af25410b1e', [
    ...six('jfrog', [g(AN(64))]),
    ...six('artifactory', [g(AN(64))]),
    ...six('bintray', [g(AN(64))]),
    ...six('xray', [g(AN(64))]),
    lit('"artifactory", "', g(AN(64)), '"'),
  ], []],
  // jwt.go: the generated samples and 12 of its 30-odd literal tokens (the shorter ones).
  rule('jwt', 'jwt.go@1a23fa94d4aa', ({ tp }) => [[
    ...six('jwt', [g('ey[a-zA-Z0-9]{17,}\\.ey[a-zA-Z0-9\\/\\\\_-]{17,}\\.(?:[a-zA-Z0-9\\/\\\\_-]{10,}={0,2})?')]),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
  ], []]),
  ['kucoin-access-token', 'kucoin.go@fd366778c5fb', six('kucoin', [g(HEX(24))]), []],
  ['launchdarkly-access-token', 'launchdarkly.go@91cfe8e3a459', six('launchdarkly', [g(AX(40))]), []],
  ['linear-api-key', 'linear.go@d58c408a5e3f', six('linear', ['lin_api_', g(AN(40))]), []],
  ['mailgun-pub-key', 'mailgun.go@80f931f08672', six('mailgun', ['pubkey-', g(HEX(32))]), []],
  ['mailgun-signing-key', 'mailgun.go@80f931f08672', six('mailgun', [g(HEX(32)), '-00001111-22223333']), []],
  ['mapbox-api-token', 'mapbox.go@5eda8a05dbe0', six('mapbox', ['pk.', g(AN(60)), '.', g(AN(22))]), []],
  ['mattermost-access-token', 'mattermost.go@fbb4636fc422', six('mattermost', [g(AN(26))]), []],
  rule('maxmind-license-key', 'maxmind.go@81fc668f98e2', ({ secret }) => [six('maxmind', secret()), []]),
  rule('messagebird-client-id', 'messagebird.go@8717170241b3', ({ tp, secret }) => [[
    ...six('MessageBird', secret()),
    tp(),
  ], []]),
  ['netlify-access-token', 'netlify.go@80f931f08672', six('netlify', [g(AX('40,46'))]), []],
  ['new-relic-user-api-key', 'newrelic.go@8717170241b3', six('new-relic', ['NRAK-', g(AN(27))]), []],
  ['new-relic-insert-key', 'newrelic.go@8717170241b3', six('new-relic', ['NRII-', g(HEX(32))]), []],
  rule('notion-api-token', 'notion.go@8fd9677bfae2', ({ tp, fp }) => [[
    tp(),
    tp(),
    tp(),
  ], [
    fp(),
    fp(),
    fp(),
  ]]),
  ['npm-access-token', 'npm.go@d58c408a5e3f', six('npmAccessToken', ['npm_', g(AN(36))]), []],
  ['nytimes-access-token', 'nytimes.go@fbb4636fc422', six('nytimes', [g(AN(32))]), []],
  rule('okta-access-token', 'okta.go@91cfe8e3a459', ({ tp, fp }) => [[
    ...six('okta', [g('00[\\w=\\-]{40}')]),
    tp(),
    tp(),
  ], [
    fp(),
    fp(),
  ]]),
  rule('openai-api-key', 'openai.go@2c097d4b318b', ({ tp }) => [[
    ...six('openaiApiKey', ['sk-', g(AN(20)), 'T3BlbkFJ', g(AN(20))]),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
  ], []]),
  ['plaid-client-id', 'plaid.go@f99da796308e', six('plaid', [g('[a-zA-Z0-9]{24}')]), []],
  ['plaid-secret-key', 'plaid.go@f99da796308e', six('plaid', [g(AN(30))]), []],
  ['plaid-api-token', 'plaid.go@f99da796308e', six('plaid', [g('access-(?:sandbox|development|production)-' + HEX8_4)]), []],
  ['planetscale-password', 'planetscale.go@5eda8a05dbe0', [
    ...six('planetScale', ['pscale_pw_', g(AX(32))]),
    ...six('planetScale', ['pscale_pw_', g(AX(43))]),
    ...six('planetScale', ['pscale_pw_', g(AX(64))]),
  ], []],
  ['planetscale-api-token', 'planetscale.go@5eda8a05dbe0', [
    ...six('planetScale', ['pscale_tkn_', g(AX(32))]),
    ...six('planetScale', ['pscale_tkn_', g(AX(43))]),
    ...six('planetScale', ['pscale_tkn_', g(AX(64))]),
  ], []],
  rule('prefect-api-token', 'prefect.go@91cfe8e3a459', ({ fp }) => [six('api-token', ['pnu_', g(AN(36))]), [
    fp(),
  ]]),
  ['pypi-upload-token', 'pypi.go@2d2383f58d48', six('pypi', ['pypi-AgEIcHlwaS5vcmc', g(HEX(32)), g(HEX(32))]), []],
  ['rapidapi-access-token', 'rapidapi.go@91cfe8e3a459', six('rapidapi', [g(AXS(50))]), []],
  rule('scalingo-api-token', 'scalingo.go@fbb4636fc422', ({ tp }) => [[
    ...six('scalingo', ['tk-us-', g(AXS(48))]),
    tp(),
  ], []]),
  ['sendbird-access-token', 'sendbird.go@8717170241b3', six('sendbird', [g(HEX(40))]), []],
  ['sendbird-access-id', 'sendbird.go@8717170241b3', six('sendbird', [g(HEX8_4)]), []],
  ['sendgrid-api-token', 'sendgrid.go@7c56229a9a0b', six('sengridAPIToken', ['SG.', g(AX(66))]), []],
  ['sendinblue-api-token', 'sendinblue.go@d58c408a5e3f', six('sendinblue', ['xkeysib-', g(HEX(64)), '-', g(AN(16))]), []],
  ['sentry-access-token', 'sentry.go@d58c408a5e3f', six('sentry', [g(HEX(64))]), []],
  ['settlemint-personal-access-token', 'settlemint.go@22d78ab2c4fb', six('settlemintToken', ['sm_pat_', g(AN(16))]), [
    lit('nonMatchingToken := "', g(AN(16)), '"'),
    lit('nonMatchingToken := "sm_pat_', g(AN(10)), '"'),
  ]],
  ['settlemint-application-access-token', 'settlemint.go@22d78ab2c4fb', six('settlemintToken', ['sm_aat_', g(AN(16))]), [
    lit('nonMatchingToken := "', g(AN(16)), '"'),
    lit('nonMatchingToken := "sm_aat_', g(AN(10)), '"'),
  ]],
  ['shippo-api-token', 'shippo.go@fbb4636fc422', [
    ...six('shippo', ['shippo_live_', g(HEX(40))]),
    ...six('shippo', ['shippo_test_', g(HEX(40))]),
  ], []],
  ['shopify-private-app-access-token', 'shopify.go@1a23fa94d4aa', six('shopify', ['shppa_', g(HEX(32))]), []],
  rule('slack-bot-token', 'slack.go@c4aff7c5cb87', ({ tp, fp, secret }) => [[
    ...six('bot', secret()),
    tp(),
    tp(),
    tp(),
    lit('"bot_token4": "xoxb-', g(NUM(13)), '-', g(NUM(12)), '-', g(AN(24)), '"'),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
  ]]),
  rule('slack-config-refresh-token', 'slack.go@c4aff7c5cb87', ({ tp, fp, secret }) => [[
    ...six('refresh', secret()),
    tp(),
    tp(),
    lit('"refresh_token3": "xoxe-1-', g(AN(146)), '"'),
  ], [fp(), fp()]]),
  rule('slack-legacy-bot-token', 'slack.go@c4aff7c5cb87', ({ tp, fp, secret }) => [[
    ...six('slack', secret()),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    lit('"bot_token10": "xoxb-', g(NUM(10)), '-', g(AN(24))),
    lit('"bot_token11": "xoxb-', g(NUM(12)), '-', g(AN(23))),
  ], [
    fp(),
    fp(),
    fp(),
  ]]),
  rule('slack-legacy-workspace-token', 'slack.go@c4aff7c5cb87', ({ tp, fp, secret }) => [[
    ...six('slack', secret()),
    tp(),
    lit('"access_token1": "xoxa-', g(NUM(1)), '-', g(AN(12))),
    lit('"access_token2": "xoxa-', g(AN(12))),
    lit('"refresh_token1": "xoxr-', g(NUM(1)), '-', g(AN(12))),
    lit('"refresh_token2": "xoxr-', g(AN(12))),
  ], [fp()]]),
  rule('slack-webhook-url', 'slack.go@c4aff7c5cb87', ({ tp }) => [[
    lit('hooks.slack.com/services/', g(AN(44))),
    lit('http://hooks.slack.com/services/', g(AN(45))),
    lit('https://hooks.slack.com/services/', g(AN(46))),
    tp(),
    tp(),
    lit('hooks.slack.com/workflows/', g(AN(44))),
    lit('http://hooks.slack.com/workflows/', g(AN(45))),
    lit('https://hooks.slack.com/workflows/', g(AN(46))),
    tp(),
    tp(),
    lit('https://hooks.slack.com/triggers/', g(AN(56))),
  ], []]),
  rule('snyk-api-token', 'snyk.go@24bd56765728', ({ tp, secret }) => [[
    ...six('snyk', secret()),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
  ], []]),
  rule('sonar-api-token', 'sonar.go@84df63c82c66', ({ tp, secret }) => [[
    ...six('sonar', secret()),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
    tp(),
  ], []]),
  ['squarespace-access-token', 'squarespace.go@5eda8a05dbe0', six('squarespace', [g(HEX8_4)]), []],
  rule('sumologic-access-token', 'sumologic.go@d58c408a5e3f', ({ tp, fp }) => [[
    ...six('sumo', [g(AN(64))]),
    tp(),
    tp(),
    tp(),
    tp(),
  ], [
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
    fp(),
  ]]),
  ['telegram-bot-api-token', 'telegram.go@5d31072b13f5', (() => {
    const valid = val([g(NUM(8) + ':A' + AXS(34))])
    return [
      ...six('telegram', valid),
      ...six('telegram', [g(NUM(5) + ':A' + AXS(34))]),
      ...six('telegram', [g(NUM(16) + ':A' + AXS(34))]),
      lit('TELEGRAM_API_TOKEN = ' + valid),
      lit('telegram bot: ' + valid),
    ]
  })(), [
    ...one('telegram', [g(NUM(4) + ':A' + AXS(34))]),
    ...one('telegram', [g(NUM(17) + ':A' + AXS(34))]),
    ...one('telegram', [g('<xsd:element name="AgencyIdentificationCode" type="clm' + NUM(5) + ':AgencyIdentificationCodeContentType'), '"/>']),
    ...one('telegram', [g('token:"clm' + NUM(5) + ':AgencyIdentificationCodeContentType"')]),
    ...one('telegram', [g('<xsd:element name="AgencyIdentificationCode" type="clm' + NUM(8) + ':AgencyIdentificationCodeContentType"/>')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':Ahello' + AXS(34) + '\\"')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':A-some-other-thing-' + AXS(34) + '\\"')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':A_' + AXS(34) + '\\"')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':A' + AXS(34) + 'hello\\"')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':A' + AXS(34) + '-some-other-thing\\"')]),
    ...one('telegram', [g('telegram_api_token = \\"' + NUM(8) + ':A_' + AXS(34) + '_\\"')]),
  ]],
  ['twitter-api-key', 'twitter.go@d4800d433f16', six('twitter', [g(AN(25))]), []],
  ['twitter-api-secret', 'twitter.go@d4800d433f16', six('twitter', [g(AN(50))]), []],
  ['twitter-bearer-token', 'twitter.go@d4800d433f16', six('twitter', [g('A{22}[a-zA-Z0-9%]{80,100}')]), []],
  ['yandex-aws-access-token', 'yandex.go@80f931f08672', six('yandex', [g('YC[a-zA-Z0-9_\\-]{38}')]), []],
  ['yandex-api-key', 'yandex.go@80f931f08672', six('yandex', [g('AQVN[A-Za-z0-9_\\-]{35,38}')]), []],
  ['yandex-access-token', 'yandex.go@80f931f08672', six('yandex', [g('t1\\.[A-Z0-9a-z_-]+[=]{0,2}\\.[A-Z0-9a-z_-]{86}[=]{0,2}')]), []],
]

if (LITERALS.size) throw new Error(`literals of rules not in RULES: ${[...LITERALS.keys()].join(', ')}`)

/** Each rule's secret regex (gitleaks-rules.tsv) as a JavaScript regex, where JavaScript can compile it. */
function secretRegexes() {
  const out = new Map()
  for (const l of readFileSync(join(dir, 'gitleaks-rules.tsv'), 'utf8').split('\n')) {
    if (!l.trim() || l.startsWith('#')) continue
    const [id, , re] = l.split('\t')
    if (!re || re === '-') continue
    // Case-insensitive throughout: the regex only locates the secret inside a true positive.
    const flags = 'gi'
    const src = re.replace(/\(\?i\)/g, '').replace(/\(\?-?i:/g, '(?:').replace(/\\z/g, '$')
    try {
      out.set(id, new RegExp(src, flags))
    } catch {
      // a construct JavaScript does not have: the span stays unknown
    }
  }
  return out
}

const cp = (s) => [...s].length
const regexes = secretRegexes()
const source = (file) => `gitleaks/gitleaks@${file.split('@')[1]}:cmd/generate/config/rules/${file.split('@')[0]}`
const rows = []
for (const [id, file, tps, fps] of RULES) {
  for (const t of tps) {
    let spans = []
    let at = t.secret ? t.text.indexOf(t.secret) : -1
    let secret = t.secret
    if (at < 0 && regexes.has(id)) {
      const re = regexes.get(id)
      re.lastIndex = 0
      let best = null
      for (const m of t.text.matchAll(re)) if (!best || m[0].length > best[0].length) best = m
      if (best) [at, secret] = [best.index, best[0]]
    }
    if (at >= 0) {
      const start = cp(t.text.slice(0, at))
      spans = [{ start, end: start + cp(secret) }]
    }
    rows.push({ rule_id: id, label: 'tp', text: t.text, known_secret_spans: spans, source: source(file) })
  }
  for (const f of fps) rows.push({ rule_id: id, label: 'fp', text: f.text, known_secret_spans: [], source: source(file) })
}
writeFileSync(join(corpus, 'gitleaks_rule_samples.rest.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
const known = rows.filter((r) => r.label === 'tp' && r.known_secret_spans.length).length
console.log(
  `redact-gitleaks-rest: ${rows.length} rows from ${RULES.length} rules (${rows.filter((r) => r.label === 'tp').length} tp, ${known} with a known span; ${rows.filter((r) => r.label === 'fp').length} fp)`,
)
