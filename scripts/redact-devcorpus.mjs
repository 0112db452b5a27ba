// The generated development corpus of `npm run eval:redact` (issue 19): positives and near-miss
// negatives per rule, built at run time from documented formats (never real secrets, never
// written down: the values are drawn from a seeded generator on every run, so no file holds a
// token-shaped literal).
//
// Each row: { cls, rule, label: 'pos' | 'neg', text, spans: [[start, end], ...] } with UTF-16
// offsets (JavaScript string indices). Classes:
//   secret     provider token formats (prefix, length, alphabet; the source of each format is
//              named beside it) in the contexts agents write them in; negatives are near misses
//              (too short, placeholder body, the prefix alone in prose)
//   config     credentials in connection strings and configuration files (.env, .npmrc, .pypirc,
//              .netrc, docker auths, Kubernetes secrets, nuget.config, JDBC), private-key armour
//   lookalike  what an agent's memory is full of and must keep: git SHAs, UUIDs, timestamps,
//              versions, order ids, digests (negatives only)
//   card       payment cards of every major network (IIN ranges and lengths from the networks'
//              published tables, as summarised in ISO/IEC 7812 and Wikipedia's "Payment card
//              number"), Luhn-valid; negatives: Luhn-invalid, no card context, look-alikes
//   phone      national and international formats of many countries, with extensions;
//              negatives: dates, versions, amounts, ranges, ids
//   id         national identifiers with check digits (UK NINO and NHS, Canadian SIN, Aadhaar,
//              CPF/CNPJ, IBAN of every country)

export function devCorpus(seed = 19) {
  const rng = prng(seed)
  const rows = []
  const R = { rng, int: (n) => Math.floor(rng() * n), pick: (xs) => xs[Math.floor(rng() * xs.length)] }
  R.chars = (alphabet, n) => {
    let s = ''
    for (let i = 0; i < n; i++) s += alphabet[R.int(alphabet.length)]
    return s
  }
  R.digits = (n) => R.chars(D, n)
  /** `template` with `{}` replaced by `value`; the span of the value. */
  const put = (cls, rule, label, template, value) => {
    const at = template.indexOf('{}')
    const text = template.slice(0, at) + value + template.slice(at + 2)
    rows.push({ cls, rule, label, text, spans: label === 'pos' ? [[at, at + value.length]] : [] })
  }
  secrets(R, put)
  configs(R, rows)
  lookalikes(R, put)
  cards(R, put)
  phones(R, put)
  ids(R, put)
  return rows
}

/** The corpus's seeded generator (mulberry32), shared with the scripts and tests that draw from it. */
export function prng(seed) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = Math.imul(s ^ (s >>> 15), 1 | s)
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const UP = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const LO = 'abcdefghijklmnopqrstuvwxyz'
const D = '0123456789'
const A62 = UP + LO + D
const U64 = A62 + '_-'
const B64 = A62 + '+/'
const HEX = '0123456789abcdef'
const HEXU = '0123456789ABCDEF'
const UN = UP + D
const LN = LO + D
const LET = UP + LO
const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

// ---------------------------------------------------------------------------------------------
// Provider tokens: [rule, source, ...parts]; a part is a literal string or [alphabet, length].

const FORMATS = [
  // cloud
  ['aws_access_key_id', 'docs.aws.amazon.com IAM identifiers (AKIA/ASIA + 16 base32)', 'AKIA', [B32, 16]],
  ['aws_access_key_id', 'docs.aws.amazon.com IAM identifiers', 'ASIA', [UN, 16]],
  ['aws_bedrock_api_key', 'docs.aws.amazon.com Bedrock API keys (ABSK + base64)', 'ABSK', [B64, 120]],
  ['google_api_key', 'cloud.google.com API keys (AIza + 35)', 'AIza', [U64, 35]],
  ['google_oauth_secret', 'developers.google.com OAuth client secrets (GOCSPX-)', 'GOCSPX-', [U64, 28]],
  ['google_oauth_token', 'developers.google.com OAuth access tokens (ya29.)', 'ya29.', [U64, 120]],
  ['azure_client_secret', 'learn.microsoft.com Entra client secrets (3 chars, digit, Q~, 31-34)', [A62, 3], [D, 1], 'Q~', [A62 + '_~.', 34]],
  ['digitalocean_token', 'docs.digitalocean.com API tokens (dop_v1_ + 64 hex)', 'dop_v1_', [HEX, 64]],
  ['digitalocean_token', 'docs.digitalocean.com OAuth tokens (doo_v1_)', 'doo_v1_', [HEX, 64]],
  ['alibaba_access_key_id', 'alibabacloud.com AccessKey ID (LTAI + 20)', 'LTAI', [A62, 20]],
  ['heroku_api_key', 'devcenter.heroku.com API keys (HRKU-AA + 58)', 'HRKU-AA', [U64, 58]],
  ['hashicorp_tf_token', 'developer.hashicorp.com Terraform API tokens (.atlasv1.)', [A62, 14], '.atlasv1.', [A62, 67]],
  ['vault_token', 'developer.hashicorp.com Vault token prefixes (hvs.)', 'hvs.', [U64, 95]],
  ['vault_token', 'developer.hashicorp.com Vault batch tokens (hvb.)', 'hvb.', [U64, 140]],
  ['databricks_token', 'docs.databricks.com personal access tokens (dapi + 32 hex)', 'dapi', [HEX, 32]],
  ['doppler_token', 'docs.doppler.com token formats (dp.pt.)', 'dp.pt.', [A62, 43]],
  ['dynatrace_token', 'docs.dynatrace.com token format (dt0c01.)', 'dt0c01.', [UN, 24], '.', [UN, 64]],
  ['fly_io_token', 'fly.io macaroon tokens (fo1_)', 'fo1_', [U64, 43]],
  ['openshift_token', 'docs.openshift.com user tokens (sha256~)', 'sha256~', [U64, 43]],
  ['planetscale_token', 'planetscale.com service tokens (pscale_tkn_)', 'pscale_tkn_', [A62, 43]],
  ['scalingo_token', 'doc.scalingo.com API tokens (tk-us-)', 'tk-us-', [U64, 48]],
  ['cloudflare_origin_ca_key', 'developers.cloudflare.com Origin CA keys (v1.0-)', 'v1.0-', [HEX, 24], '-', [HEX, 146]],
  ['yandex_api_key', 'yandex.cloud API keys (AQVN)', 'AQVN', [A62, 36]],
  ['yandex_api_key', 'yandex.cloud IAM tokens (t1.)', 't1.', [U64, 20], '.', [U64, 86]],
  ['yandex_api_key', 'yandex.cloud static access keys (YC + 38)', 'YC', [U64, 38]],
  // source hosting, CI/CD
  ['github_token', 'github.blog 2021-04-05 token formats (ghp_ + 36, CRC32)', 'ghp_', [A62, 36]],
  ['github_token', 'github.blog token formats (gho_)', 'gho_', [A62, 36]],
  ['github_token', 'github.blog token formats (ghu_)', 'ghu_', [A62, 36]],
  ['github_token', 'github.blog token formats (ghs_)', 'ghs_', [A62, 36]],
  ['github_token', 'github.blog token formats (ghr_)', 'ghr_', [A62, 76]],
  ['github_token', 'docs.github.com fine-grained PATs (github_pat_)', 'github_pat_', [A62, 22], '_', [A62, 59]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glpat-)', 'glpat-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glptt-)', 'glptt-', [HEX, 40]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glrt-)', 'glrt-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (gldt-)', 'gldt-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glft-)', 'glft-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glimt-)', 'glimt-', [U64, 25]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glagent-)', 'glagent-', [U64, 50]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (gloas-)', 'gloas-', [U64, 64]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glsoat-)', 'glsoat-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glffct-)', 'glffct-', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com token prefixes (glcbt-)', 'glcbt-', [A62, 2], '_', [U64, 20]],
  ['gitlab_token', 'docs.gitlab.com runner registration (GR1348941)', 'GR1348941', [U64, 20]],
  ['bitbucket_token', 'support.atlassian.com app passwords (ATBB)', 'ATBB', [A62, 32]],
  ['atlassian_token', 'support.atlassian.com API tokens (ATATT3)', 'ATATT3', [U64, 186]],
  ['buildkite_token', 'buildkite.com API access tokens (bkua_)', 'bkua_', [HEX, 40]],
  ['circleci_token', 'circleci.com personal API tokens (CCIPAT_)', 'CCIPAT_', [A62, 22], '_', [HEX, 40]],
  ['docker_hub_token', 'docs.docker.com personal access tokens (dckr_pat_)', 'dckr_pat_', [U64, 27]],
  ['octopus_deploy_api_key', 'octopus.com API keys (API- + 26)', 'API-', [UN, 26]],
  ['pulumi_token', 'pulumi.com access tokens (pul-)', 'pul-', [HEX, 40]],
  ['sourcegraph_token', 'sourcegraph.com access tokens (sgp_)', 'sgp_', [HEX, 16], '_', [HEX, 40]],
  ['sonar_token', 'docs.sonarsource.com tokens (squ_)', 'squ_', [HEX, 40]],
  // package registries
  ['npm_token', 'docs.npmjs.com access tokens (npm_ + 36, CRC32)', 'npm_', [A62, 36]],
  ['pypi_token', 'pypi.org API tokens (pypi-AgEIcHlwaS5vcmc macaroon)', 'pypi-AgEIcHlwaS5vcmc', [U64, 70]],
  ['rubygems_token', 'guides.rubygems.org API keys (rubygems_ + 48 hex)', 'rubygems_', [HEX, 48]],
  ['nuget_token', 'nuget.org API keys (oy2 + 43)', 'oy2', [LN, 43]],
  ['clojars_token', 'clojars.org deploy tokens (CLOJARS_)', 'CLOJARS_', [A62, 60]],
  ['artifactory_token', 'jfrog.com API keys (AKCp)', 'AKCp', [A62, 69]],
  ['artifactory_token', 'jfrog.com reference tokens (cmVmd)', 'cmVmd', [A62, 59]],
  // messaging
  ['slack_token', 'api.slack.com token types (xoxb-)', 'xoxb-', [D, 11], '-', [D, 12], '-', [A62, 24]],
  ['slack_token', 'api.slack.com token types (xoxp-)', 'xoxp-', [D, 11], '-', [D, 11], '-', [D, 12], '-', [HEX, 32]],
  ['slack_token', 'api.slack.com app-level tokens (xapp-)', 'xapp-1-', [UN, 11], '-', [D, 13], '-', [HEX, 64]],
  ['slack_token', 'api.slack.com config tokens (xoxe.xoxp-)', 'xoxe.xoxp-1-', [UN, 164]],
  ['webhook_url', 'api.slack.com incoming webhooks', 'https://hooks.slack.com/services/T', [UN, 8], '/B', [UN, 8], '/', [A62, 24]],
  ['webhook_url', 'discord.com webhooks', 'https://discord.com/api/webhooks/', [D, 18], '/', [U64, 68]],
  ['twilio_api_key', 'twilio.com API keys (SK + 32 hex)', 'SK', [HEX, 32]],
  ['sendgrid_api_key', 'docs.sendgrid.com API keys (SG.)', 'SG.', [U64, 22], '.', [U64, 43]],
  ['sendinblue_api_key', 'brevo.com API keys (xkeysib-)', 'xkeysib-', [HEX, 64], '-', [A62, 16]],
  ['mailgun_api_key', 'documentation.mailgun.com private keys (key-)', 'key-', [HEX, 32]],
  ['mailgun_api_key', 'documentation.mailgun.com public validation keys (pubkey-)', 'pubkey-', [HEX, 32]],
  ['mailchimp_api_key', 'mailchimp.com API keys (32 hex -usN)', [HEX, 32], '-us', [D, 2]],
  ['telegram_bot_token', 'core.telegram.org bot tokens (id:AA...)', [D, 10], ':AA', [U64, 33]],
  ['discord_token', 'discord.com bot tokens (base64 id . 6 . 27+)', 'MT', ['AEIMQUYcgk', 1], [A62, 21], '.', [U64, 6], '.', [U64, 38]],
  // payments
  ['stripe_key', 'docs.stripe.com API keys (sk_live_)', 'sk_live_', [A62, 24]],
  ['stripe_key', 'docs.stripe.com restricted keys (rk_test_)', 'rk_test_', [A62, 99]],
  ['stripe_key', 'docs.stripe.com webhook secrets (whsec_)', 'whsec_', [A62, 32]],
  ['square_token', 'developer.squareup.com access tokens (EAAA)', 'EAAA', [U64, 60]],
  ['square_token', 'developer.squareup.com OAuth secrets (sq0csp-)', 'sq0csp-', [U64, 43]],
  ['shopify_token', 'shopify.dev access tokens (shpat_)', 'shpat_', [HEX, 32]],
  ['shopify_token', 'shopify.dev shared secrets (shpss_)', 'shpss_', [HEX, 32]],
  ['flutterwave_key', 'developer.flutterwave.com secret keys', 'FLWSECK_TEST-', [HEX, 32], '-X'],
  ['shippo_token', 'goshippo.com API tokens (shippo_live_)', 'shippo_live_', [HEX, 40]],
  ['easypost_token', 'easypost.com API keys (EZAK)', 'EZAK', [A62, 54]],
  ['duffel_token', 'duffel.com access tokens (duffel_test_)', 'duffel_test_', [U64, 43]],
  ['paypal_token', 'developer.paypal.com Braintree access tokens', 'access_token$production$', [LN, 16], '$', [HEX, 32]],
  ['plaid_token', 'plaid.com access tokens (access-<env>-<uuid>)', 'access-production-', [HEX, 8], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 12]],
  ['facebook_token', 'developers.facebook.com access tokens (EAAC)', 'EAAC', [A62, 120]],
  // AI
  ['openai_api_key', 'platform.openai.com project keys (sk-proj-)', 'sk-proj-', [U64, 120]],
  ['openai_api_key', 'platform.openai.com legacy keys (T3BlbkFJ marker)', 'sk-', [A62, 20], 'T3BlbkFJ', [A62, 20]],
  ['openai_api_key', 'platform.openai.com service-account keys (sk-svcacct-)', 'sk-svcacct-', [U64, 120]],
  ['anthropic_api_key', 'docs.anthropic.com API keys (sk-ant-api03-)', 'sk-ant-api03-', [U64, 93], 'AA'],
  ['anthropic_api_key', 'docs.anthropic.com admin keys (sk-ant-admin01-)', 'sk-ant-admin01-', [U64, 93], 'AA'],
  ['huggingface_token', 'huggingface.co user access tokens (hf_)', 'hf_', [LET, 34]],
  ['perplexity_api_key', 'docs.perplexity.ai API keys (pplx-)', 'pplx-', [A62, 48]],
  ['groq_api_key', 'console.groq.com API keys (gsk_)', 'gsk_', [A62, 52]],
  ['replicate_token', 'replicate.com API tokens (r8_)', 'r8_', [A62, 37]],
  ['xai_api_key', 'docs.x.ai API keys (xai-)', 'xai-', [A62, 80]],
  ['langsmith_api_key', 'docs.smith.langchain.com API keys (lsv2_pt_)', 'lsv2_pt_', [HEX, 32], '_', [HEX, 10]],
  ['pinecone_api_key', 'docs.pinecone.io API keys (pcsk_)', 'pcsk_', [A62, 5], '_', [A62, 60]],
  // observability, SaaS
  ['onepassword_token', 'developer.1password.com service account tokens (ops_eyJ)', 'ops_eyJ', [B64, 260]],
  ['onepassword_secret_key', 'support.1password.com Secret Key (A3-)', 'A3-', [UN, 6], '-', [UN, 11], '-', [UN, 5], '-', [UN, 5], '-', [UN, 5]],
  ['adobe_client_secret', 'developer.adobe.com client secrets (p8e-)', 'p8e-', [A62, 32]],
  ['age_secret_key', 'age-encryption.org secret keys (Bech32)', 'AGE-SECRET-KEY-1', ['QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58]],
  ['clickhouse_api_key', 'clickhouse.com cloud API secrets (4b1d)', '4b1d', [A62, 38]],
  ['defined_networking_token', 'docs.defined.net API tokens (dnkey-)', 'dnkey-', [A62, 26], '-', [A62, 52]],
  ['frameio_token', 'developer.frame.io tokens (fio-u-)', 'fio-u-', [U64, 64]],
  ['grafana_token', 'grafana.com cloud tokens (glc_)', 'glc_', [A62, 40]],
  ['grafana_token', 'grafana.com service account tokens (glsa_)', 'glsa_', [A62, 32], '_', [HEX, 8]],
  ['infracost_token', 'infracost.io API keys (ico-)', 'ico-', [A62, 32]],
  ['intra42_secret', 'api.intra.42.fr client secrets (s-s4t2ud-)', 's-s4t2ud-', [HEX, 64]],
  ['linear_api_key', 'linear.app API keys (lin_api_)', 'lin_api_', [A62, 40]],
  ['mapbox_token', 'docs.mapbox.com secret tokens (sk.eyJ)', 'sk.eyJ', [A62, 60], '.', [U64, 22]],
  ['newrelic_key', 'docs.newrelic.com user keys (NRAK-)', 'NRAK-', [UN, 27]],
  ['newrelic_key', 'docs.newrelic.com insert keys (NRII-)', 'NRII-', [A62 + '-', 32]],
  ['newrelic_key', 'docs.newrelic.com license keys (36 hex + NRAL)', [HEX, 36], 'NRAL'],
  ['notion_token', 'developers.notion.com integration tokens (ntn_)', 'ntn_', [D, 11], [A62, 35]],
  ['postman_token', 'learning.postman.com API keys (PMAK-)', 'PMAK-', [HEX, 24], '-', [HEX, 34]],
  ['prefect_token', 'docs.prefect.io API keys (pnu_)', 'pnu_', [A62, 36]],
  ['readme_token', 'docs.readme.com API keys (rdme_)', 'rdme_', [LN, 70]],
  ['sentry_token', 'docs.sentry.io user auth tokens (sntryu_)', 'sntryu_', [HEX, 64]],
  ['settlemint_token', 'console.settlemint.com tokens (sm_pat_)', 'sm_pat_', [A62, 16]],
  ['typeform_token', 'typeform.com personal tokens (tfp_)', 'tfp_', [A62, 59]],
  ['figma_token', 'figma.com personal access tokens (figd_)', 'figd_', [U64, 40]],
  ['supabase_token', 'supabase.com access tokens (sbp_)', 'sbp_', [HEX, 40]],
  ['tailscale_key', 'tailscale.com API keys (tskey-api-)', 'tskey-api-', [A62, 10], '-', [A62, 30]],
  ['contentful_token', 'contentful.com personal access tokens (CFPAT-)', 'CFPAT-', [U64, 43]],
  ['netlify_token', 'docs.netlify.com personal access tokens (nfp_)', 'nfp_', [A62, 36]],
  ['render_token', 'render.com API keys (rnd_)', 'rnd_', [A62, 32]],
  ['airtable_token', 'airtable.com personal access tokens (pat.)', 'pat', [A62, 14], '.', [HEX, 64]],
  ['hubspot_token', 'developers.hubspot.com private app tokens (pat-na1-)', 'pat-na1-', [HEX, 8], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 12]],
  ['dropbox_token', 'dropbox.com short-lived access tokens (sl.)', 'sl.', [U64, 140]],
  ['twitter_token', 'developer.x.com app-only bearer tokens (22 A + 80+)', 'AAAAAAAAAAAAAAAAAAAAA', [A62 + '%', 90]],
  ['databricks_token', 'docs.databricks.com OAuth secrets (dose)', 'dose', [HEX, 32]],
  ['doppler_token', 'docs.doppler.com service tokens (dp.st.)', 'dp.st.', [A62, 43]],
  ['harness_token', 'developer.harness.io API tokens (pat.)', 'pat.', [U64, 22], '.', [A62, 24], '.', [A62, 20]],
  ['tencent_secret_id', 'cloud.tencent.com CAM SecretId (AKID + 32)', 'AKID', [A62, 32]],
  ['amazon_mws_token', 'developer-docs.amazon.com MWS auth tokens (amzn.mws. + UUID)', 'amzn.mws.', [HEX, 8], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 12]],
  ['google_oauth_token', 'developers.google.com refresh tokens (1//0)', '1//0', [U64, 100]],
  ['azure_devops_token', 'learn.microsoft.com Azure DevOps PATs (AZDO signature at 76)', [A62, 76], 'AZDO', [A62, 4]],
  ['astra_token', 'docs.datastax.com Astra tokens (AstraCS:)', 'AstraCS:', [LET, 24], ':', [HEX, 64]],
  ['bitbucket_token', 'confluence.atlassian.com Bitbucket DC HTTP access tokens (BBDC-)', 'BBDC-', [A62, 44]],
  ['mailersend_token', 'developers.mailersend.com API tokens (mlsn.)', 'mlsn.', [HEX, 64]],
  ['resend_api_key', 'resend.com API keys (re_)', 're_', [A62, 8], '_', [A62, 24]],
  ['slack_token', 'api.slack.com client tokens (xoxc-)', 'xoxc-', [D, 12], '-', [D, 12], '-', [HEX, 64]],
  ['razorpay_key', 'razorpay.com key ids (rzp_live_)', 'rzp_live_', [A62, 14]],
  ['openrouter_api_key', 'openrouter.ai API keys (sk-or-v1-)', 'sk-or-v1-', [HEX, 64]],
  ['nvidia_api_key', 'build.nvidia.com API keys (nvapi-)', 'nvapi-', [U64, 64]],
  ['elevenlabs_api_key', 'elevenlabs.io API keys (sk_ + 48 hex)', 'sk_', [HEX, 48]],
  ['langfuse_key', 'langfuse.com secret keys (sk-lf-)', 'sk-lf-', [HEX, 8], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 12]],
  ['posthog_token', 'posthog.com personal API keys (phx_)', 'phx_', [A62, 47]],
  ['supabase_token', 'supabase.com secret keys (sb_secret_)', 'sb_secret_', [U64, 31]],
  ['linear_api_key', 'linear.app OAuth tokens (lin_oauth_)', 'lin_oauth_', [HEX, 64]],
  ['docker_hub_token', 'docs.docker.com organization access tokens (dckr_oat_)', 'dckr_oat_', [U64, 32]],
  // trufflehog detector formats (issue 29)
  ['dynatrace_token', 'trufflehog dynatrace: platform tokens (dt0s01.)', 'dt0s01.', [UN, 24], '.', [UN, 64]],
  ['buildkite_token', 'trufflehog buildkite v2: user API tokens (bkua_)', 'bkua_', [LN, 40]],
  ['besttime_api_key', 'trufflehog besttime: private API keys (pri_ + 32 hex)', 'pri_', [HEX, 32]],
  ['teamwork_token', 'trufflehog teamworkspaces: API tokens (tkn.v1_)', 'tkn.v1_', [A62, 71], '='],
  ['wakatime_api_key', 'trufflehog wakatime: API keys (waka_ + UUID)', 'waka_', [HEX, 8], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 4], '-', [HEX, 12]],
  ['adafruit_io_key', 'trufflehog adafruitio: IO keys (aio_)', 'aio_', [A62, 28]],
  ['apify_token', 'trufflehog apify: API tokens (apify_api_)', 'apify_api_', [A62, 36]],
  ['aws_appsync_api_key', 'trufflehog awsappsync: GraphQL API keys (da2-)', 'da2-', [LN, 26]],
  ['jwt', 'RFC 7519 JSON Web Token', 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ', [U64, 60], '.', [U64, 43]],
]

const POS_CONTEXTS = [
  '{}',
  'export SERVICE_TOKEN={}',
  'The key {} was in the logs.',
  '"credentials": {"value": "{}"}',
  'config:\n  apiKey: {}\n',
  'curl -H "Authorization: Bearer {}" https://api.example.com',
  "const client = new Client('{}')",
  'leaked: {}, rotate it',
]

function build(R, parts) {
  return parts.map((p) => (typeof p === 'string' ? p : R.chars(p[0], p[1]))).join('')
}

function secrets(R, put) {
  for (const [rule, , ...parts] of FORMATS) {
    for (let i = 0; i < 10; i++) put('secret', rule, 'pos', POS_CONTEXTS[i % POS_CONTEXTS.length], build(R, parts))
    // A JWT header alone already is one: no near misses of that kind.
    if (rule === 'jwt') continue
    // Near misses: each random part cut to a quarter, at most 8 (too short for the format), a
    // placeholder body, the prefix alone in prose.
    const lit = typeof parts[0] === 'string' ? parts[0] : ''
    const short = parts.map((p) => (typeof p === 'string' ? p : [p[0], Math.min(8, Math.max(2, Math.floor(p[1] / 4)))]))
    put('secret', rule, 'neg', 'see {} in the docs', build(R, short))
    if (lit.length >= 3) {
      const rest = parts.slice(1).reduce((n, p) => n + (typeof p === 'string' ? p.length : p[1]), 0)
      put('secret', rule, 'neg', 'TOKEN={}', lit + 'x'.repeat(rest))
      put('secret', rule, 'neg', 'token: {}', `<your-${rule.replace(/_/g, '-')}>`)
      put('secret', rule, 'neg', 'Tokens of this kind start with {} and are rotated every 90 days.', lit)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Credentials in connection strings, configuration files, private keys.

function configs(R, rows) {
  const pw = () => R.chars(A62, 6) + R.pick(['!', '#', '%', '_', '']) + R.digits(2) + R.chars(LO, 4)
  const tok = (n = 40) => R.chars(A62, n)
  const b64 = (s) => Buffer.from(s).toString('base64')
  /** rows from a template whose `{...}` markers are secrets (the span to cover). */
  const add = (rule, label, parts) => {
    let text = ''
    const spans = []
    for (const p of parts) {
      if (typeof p === 'string') text += p
      else {
        spans.push([text.length, text.length + p.s.length])
        text += p.s
      }
    }
    rows.push({ cls: 'config', rule, label, text, spans: label === 'pos' ? spans : [] })
  }
  const S = (s) => ({ s })
  for (let i = 0; i < 6; i++) {
    const host = R.pick(['db.internal', 'prod-db.example.net', '10.0.3.7', 'cluster0.ab1cd.mongodb.net'])
    add('url_postgres', 'pos', ['DATABASE_URL=postgres://app:', S(pw()), `@${host}:5432/app`])
    add('url_mysql', 'pos', ['mysql://root:', S(pw()), `@${host}:3306/shop`])
    add('url_mongodb_srv', 'pos', ['uri = "mongodb+srv://admin:', S(pw()), `@${host}/test?retryWrites=true"`])
    add('url_redis', 'pos', ['REDIS_URL=redis://default:', S(pw()), `@${host}:6379/0`])
    add('url_redis', 'pos', ['rediss://:', S(pw()), `@${host}:6380`])
    add('url_amqp', 'pos', ['amqp://guest:', S(pw()), `@${host}:5672/vhost`])
    add('jdbc', 'pos', [`jdbc:postgresql://${host}:5432/app?user=app&password=`, S(pw()), '&ssl=true'])
    add('jdbc', 'pos', [`jdbc:sqlserver://${host}:1433;databaseName=app;user=sa;password=`, S(pw()), ';'])
    add('jdbc', 'pos', [`jdbc:mysql://app:`, S(pw()), `@${host}:3306/app`])
    add('dotenv', 'pos', ['# .env\nNODE_ENV=production\nDB_PASSWORD=', S(pw()), '\nSTRIPE_SECRET=', S(tok(32)), '\n'])
    add('dotenv', 'pos', ['API_KEY="', S(tok(32)), '"\nPORT=3000\n'])
    add('npmrc', 'pos', ['//registry.npmjs.org/:_authToken=', S(tok(36)), '\n'])
    add('npmrc', 'pos', ['//npm.pkg.github.com/:_authToken=', S(tok(40)), '\nalways-auth=true\n'])
    add('npmrc', 'pos', ['_auth=', S(b64(`ci:${pw()}`)), '\nemail=ci@example.com\n'])
    add('pypirc', 'pos', ['[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = ', S(pw()), '\n'])
    add('netrc', 'pos', ['machine api.heroku.com\n  login me@example.com\n  password ', S(tok(32)), '\n'])
    add('netrc', 'pos', ['machine github.com login octocat password ', S(pw()), '\n'])
    add('docker_auths', 'pos', ['{\n  "auths": {\n    "https://index.docker.io/v1/": {\n      "auth": "', S(b64(`me:${pw()}`)), '"\n    }\n  }\n}'])
    add('k8s_secret', 'pos', ['apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  username: ', S(b64('admin')), '\n  password: ', S(b64(pw())), '\n'])
    add('k8s_secret', 'pos', ['kind: Secret\nstringData:\n  api-token: ', S(tok(32)), '\n'])
    add('nuget_config', 'pos', ['<packageSourceCredentials>\n  <feed>\n    <add key="Username" value="ci" />\n    <add key="ClearTextPassword" value="', S(pw()), '" />\n  </feed>\n</packageSourceCredentials>'])
    add('xml_appsettings', 'pos', ['<add key="ApiSecret" value="', S(tok(32)), '" />'])
    add('url_basic_auth', 'pos', ['git clone https://', S(tok(40)), '@github.com/acme/app.git'])
  }
  // Negatives: the same files with placeholders, variables and public parts.
  add('url_postgres', 'neg', ['DATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal:5432/app'])
  add('url_postgres', 'neg', ['postgres://user:password@localhost:5432/mydb'])
  add('url_redis', 'neg', ['REDIS_URL=redis://localhost:6379/0'])
  add('jdbc', 'neg', ['jdbc:postgresql://db.internal:5432/app?user=app&ssl=true'])
  add('dotenv', 'neg', ['NODE_ENV=production\nPORT=3000\nLOG_LEVEL=debug\n'])
  add('dotenv', 'neg', ['API_KEY=<your-api-key>\nDB_PASSWORD=changeme\n'])
  add('npmrc', 'neg', ['//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n'])
  add('npmrc', 'neg', ['registry=https://registry.npmjs.org/\nsave-exact=true\n'])
  add('netrc', 'neg', ['machine api.example.com login me password ${NETRC_PASSWORD}\n'])
  add('docker_auths', 'neg', ['{"auths": {"ghcr.io": {}}, "credsStore": "desktop"}'])
  add('k8s_secret', 'neg', ['kind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n  replicas: "3"\n'])
  add('nuget_config', 'neg', ['<add key="nuget.org" value="https://api.nuget.org/v3/index.json" protocolVersion="3" />'])
  // Private keys: every armour.
  const body = () => Array.from({ length: 6 }, () => R.chars(B64, 64)).join('\n')
  for (const label of ['RSA PRIVATE KEY', 'EC PRIVATE KEY', 'PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'DSA PRIVATE KEY', 'PGP PRIVATE KEY BLOCK']) {
    const b = `-----BEGIN ${label}-----\n${label.startsWith('PGP') ? 'Version: GnuPG v2\n\n' : ''}${body()}\n-----END ${label}-----`
    add('private_key', 'pos', ['key:\n', S(b), '\n'])
  }
  add('private_key', 'pos', [
    'saved as id.ppk:\n',
    S(`PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@host\nPublic-Lines: 2\n${R.chars(B64, 64)}\n${R.chars(B64, 20)}\nPrivate-Lines: 1\n${R.chars(B64, 48)}\nPrivate-MAC: ${R.chars(HEX, 64)}`),
    '\n',
  ])
  add('private_key', 'neg', [`-----BEGIN CERTIFICATE-----\n${body()}\n-----END CERTIFICATE-----`])
  add('private_key', 'neg', [`-----BEGIN PUBLIC KEY-----\n${body()}\n-----END PUBLIC KEY-----`])
  add('private_key', 'neg', ['Paste the key between -----BEGIN PRIVATE KEY----- and -----END PRIVATE KEY----- lines.'])
  add('private_key', 'neg', [`ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${R.chars(B64, 43)} me@host`])
}

// ---------------------------------------------------------------------------------------------
// What an agent's memory is full of and must keep.

function lookalikes(R, put) {
  const uuid = () => `${R.chars(HEX, 8)}-${R.chars(HEX, 4)}-4${R.chars(HEX, 3)}-a${R.chars(HEX, 3)}-${R.chars(HEX, 12)}`
  const n = (k) => String(R.int(k))
  const cases = {
    git_sha: () => [R.pick(['commit {}', 'fixed in {}', 'git checkout {}', 'HEAD is now at {}', 'Merge {} into main', '{}']), R.chars(HEX, R.pick([7, 8, 10, 12, 40]))],
    uuid: () => [R.pick(['request_id: {}', '"id": "{}"', 'trace {}', 'user {} logged in', '{}']), uuid()],
    timestamp: () => [
      '{}',
      R.pick([
        `2024-${String(1 + R.int(12)).padStart(2, '0')}-${String(1 + R.int(28)).padStart(2, '0')}T${String(R.int(24)).padStart(2, '0')}:${String(R.int(60)).padStart(2, '0')}:00Z`,
        `2025-03-0${1 + R.int(9)} 1${R.int(10)}:2${R.int(10)}:3${R.int(10)}.${R.digits(3)}`,
        `at 17${R.digits(8)}`,
        `ts=17${R.digits(11)}`,
        `[1${R.int(10)}:${R.digits(2)}:${R.digits(2)}.${R.digits(3)}]`,
        `${1 + R.int(28)}/0${1 + R.int(9)}/2024 0${R.int(10)}:${R.digits(2)}`,
        `took ${R.digits(4)} ms`,
      ]),
    ],
    version: () => [
      '{}',
      R.pick([`v${n(10)}.${n(30)}.${n(100)}`, `${n(5)}.${n(20)}.${n(9)}-beta.${n(9)}`, `Chrome/1${R.digits(2)}.0.${R.digits(4)}.${R.digits(3)}`, `node ${n(25)}.${n(20)}.${n(9)}`, `version ${n(9)}.${n(9)}.${n(9)}.${R.digits(4)}`, `rustc 1.${R.digits(2)}.0 (${R.chars(HEX, 9)} 2025-0${1 + R.int(9)}-1${R.int(10)})`]),
    ],
    order_id: () => [
      '{}',
      R.pick([`order #${R.digits(3)}-${R.digits(7)}-${R.digits(7)}`, `INV-2024-${R.digits(6)}`, `PO ${R.digits(10)}`, `ticket JIRA-${R.digits(4)}`, `tracking 1Z${R.chars(UN, 16)}`, `issue #${R.digits(5)}`, `PR #${R.digits(4)}`, `build ${R.digits(6)}`, `job ${R.digits(9)}`]),
    ],
    digest: () => [
      '{}',
      R.pick([`sha256:${R.chars(HEX, 64)}`, `"integrity": "sha512-${R.chars(B64, 86)}=="`, `etag: "${R.chars(HEX, 32)}"`, `md5 ${R.chars(HEX, 32)}`, `checksum ${R.chars(HEX, 64)}`]),
    ],
    code: () => [
      '{}',
      R.pick([
        'const tokenCount = countTokens(text)',
        'if (password.length < 12) throw new Error("too short")',
        'let apiKey = process.env.API_KEY',
        'password: string;',
        'token_type: "Bearer"',
        `pod web-${R.chars(LN, 10)}-${R.chars(LN, 5)} restarted`,
        `/usr/local/lib/node_modules/${R.pick(['typescript', 'eslint', 'prettier'])}/lib/index.js`,
        `color: #${R.chars(HEX, 6)};`,
        `listening on localhost:${3000 + R.int(6000)}`,
        `arn:aws:iam::${R.digits(12)}:role/deploy`,
        `max_tokens: ${R.digits(4)}`,
        `getUserAccountSettingsForTenant(${R.int(100)})`,
      ]),
    ],
    numbers: () => [
      '{}',
      R.pick([
        `total: ${R.digits(1)},${R.digits(3)},${R.digits(3)} rows`,
        `$${R.digits(2)},${R.digits(3)}.${R.digits(2)}`,
        `${1 + R.int(9)} ${R.digits(3)} ${R.digits(3)} EUR`,
        `pages 1${R.digits(2)}-2${R.digits(2)}`,
        `ISBN 978-3-16-${R.digits(6)}-0`,
        `score ${R.digits(2)}.${R.digits(2)}%`,
        `PID ${R.digits(5)}`,
      ]),
    ],
  }
  for (const [rule, gen] of Object.entries(cases)) {
    for (let i = 0; i < 30; i++) {
      const [tpl, v] = gen()
      put('lookalike', rule, 'neg', tpl, v)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Payment cards.

function luhnComplete(R, prefix, len) {
  const body = prefix + R.digits(len - prefix.length - 1)
  for (let c = 0; c < 10; c++) if (luhnOk(body + c)) return body + c
  return body + '0'
}
function luhnOk(s) {
  let sum = 0
  for (let i = 0; i < s.length; i++) {
    let v = s.charCodeAt(s.length - 1 - i) - 48
    if (i % 2) v = v * 2 > 9 ? v * 2 - 9 : v * 2
    sum += v
  }
  return sum % 10 === 0
}

/** [network, prefixes, lengths] */
const NETWORKS = [
  ['visa', ['4'], [13, 16, 19]],
  ['mastercard', ['51', '52', '53', '54', '55', '2221', '2500', '2720'], [16]],
  ['amex', ['34', '37'], [15]],
  ['discover', ['6011', '644', '649', '65'], [16, 19]],
  ['jcb16', ['3528', '3555', '3589', '3088', '3096', '3112', '3158', '3337'], [16]],
  ['jcb15', ['2131', '1800', '2100'], [15]],
  ['diners', ['300', '305', '36', '38', '39'], [14]],
  ['maestro', ['5018', '5020', '5038', '5893', '6304', '6759', '6761', '6762', '6763', '0604', '6390'], [12, 13, 16, 19]],
  ['unionpay', ['62', '81'], [16, 17, 18, 19]],
  ['mir', ['2200', '2204'], [16]],
  ['rupay', ['60', '652', '508', '353', '356'], [16]],
  ['troy', ['9792'], [16]],
  ['verve', ['506099', '650002'], [16, 19]],
  ['uatp', ['1'], [15]],
]
const CARD_CONTEXTS = ['card number {}', 'my credit card is {}', 'Card: {}', 'pay with card {} please', 'debit card {} exp 09/27', '{} (visa card)', 'cc {}', 'card no. {}']

function grouped(R, d) {
  const sep = R.pick([' ', '-', ''])
  if (!sep) return d
  if (d.length === 15 && (d.startsWith('34') || d.startsWith('37'))) return [d.slice(0, 4), d.slice(4, 10), d.slice(10)].join(sep)
  return d.match(/.{1,4}/g).join(sep)
}

function cards(R, put) {
  for (const [net, prefixes, lens] of NETWORKS) {
    for (let i = 0; i < 12; i++) {
      const d = luhnComplete(R, R.pick(prefixes), R.pick(lens))
      put('card', net, 'pos', CARD_CONTEXTS[i % CARD_CONTEXTS.length], grouped(R, d))
    }
  }
  // Without a card word: the major networks' full-length numbers.
  for (let i = 0; i < 20; i++) {
    const [, prefixes, lens] = R.pick(NETWORKS.slice(0, 4))
    put('card', 'no_context', 'pos', R.pick(['Paid with {} yesterday.', '{}', 'use {} for the test order']), grouped(R, luhnComplete(R, R.pick(prefixes), R.pick(lens))))
  }
  // Negatives: Luhn-invalid numbers beside "card", Luhn-valid ids without card context.
  for (let i = 0; i < 30; i++) {
    const [, prefixes, lens] = R.pick(NETWORKS)
    let d = luhnComplete(R, R.pick(prefixes), R.pick(lens))
    d = d.slice(0, -1) + ((+d.at(-1) + 1 + R.int(8)) % 10)
    put('card', 'bad_luhn', 'neg', R.pick(CARD_CONTEXTS), grouped(R, d))
  }
  // Luhn-valid 12-digit ids (one in ten ids is) without a card word: only the context could
  // make them cards.
  for (let i = 0; i < 30; i++) {
    put('card', 'no_card_context', 'neg', R.pick(['order {} shipped', 'invoice {}', 'ticket {}', 'job id {}', 'build {}']), luhnComplete(R, String(1 + R.int(9)), 12))
  }
  put('card', 'last_four', 'neg', 'card ending in {}', R.digits(4))
}

// ---------------------------------------------------------------------------------------------
// Phone numbers.

const PHONE_CONTEXTS = ['call me at {}', 'Phone: {}', 'my number is {}', 'Tel. {}', 'reach me on {} after 5pm', 'mobile {}', 'Contact: {}', 'You can reach Maria at {}.', 'phone number {}', 'ring {} tomorrow']
function phoneFormats(R) {
  const d = R.digits
  const nz = () => String(2 + R.int(8))
  return {
    us_dash: () => `${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}`,
    us_paren: () => `(${nz()}${d(2)}) ${nz()}${d(2)}-${d(4)}`,
    us_paren_tight: () => `(${nz()}${d(2)})${nz()}${d(2)}-${d(4)}`,
    us_dots: () => `${nz()}${d(2)}.${nz()}${d(2)}.${d(4)}`,
    us_plus1: () => `+1-${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}`,
    us_001: () => `001-${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}`,
    us_bare: () => `${nz()}${d(2)}${nz()}${d(6)}`,
    ext_x: () => `${nz()}${d(2)}-${nz()}${d(2)}-${d(4)}x${d(1 + R.int(5))}`,
    ext_paren_x: () => `(${nz()}${d(2)})${nz()}${d(2)}-${d(4)}x${d(3)}`,
    ext_dots_x: () => `${nz()}${d(2)}.${nz()}${d(2)}.${d(4)}x${d(4)}`,
    ext_word: () => `${nz()}${d(2)}-${nz()}${d(2)}-${d(4)} ext. ${d(3)}`,
    uk: () => R.pick([`020 ${d(4)} ${d(4)}`, `07${d(3)} ${d(6)}`, `+44 20 ${d(4)} ${d(4)}`, `+44(0)20 ${d(4)} ${d(4)}`, `(01${d(3)}) ${d(6)}`, `+44 7${d(3)} ${d(6)}`]),
    de: () => R.pick([`030 ${d(8)}`, `+49 30 ${d(8)}`, `(030) ${d(7)}`, `0170 ${d(7)}`, `+49(0)30 ${d(4)} ${d(4)}`, `0${nz()}${d(2)}-${d(6)}`]),
    fr: () => R.pick([`0${1 + R.int(7)} ${d(2)} ${d(2)} ${d(2)} ${d(2)}`, `+33 ${1 + R.int(7)} ${d(2)} ${d(2)} ${d(2)} ${d(2)}`, `0${1 + R.int(7)}.${d(2)}.${d(2)}.${d(2)}.${d(2)}`, `+33 (0)${1 + R.int(7)} ${d(2)} ${d(2)} ${d(2)} ${d(2)}`]),
    short7: () => `${nz()}${d(2)} ${d(4)}`,
    short7_dash: () => `${nz()}${d(2)}-${d(4)}`,
    nine_3x3: () => `${nz()}${d(2)} ${d(3)} ${d(3)}`,
    eight_2x4: () => `${nz()}${d(1)}-${d(2)}-${d(2)}-${d(2)}`,
    eight_2x4_spaces: () => `${nz()}${d(1)} ${d(2)} ${d(2)} ${d(2)}`,
    paren2_6: () => `(${nz()}${d(1)}) ${d(3)}-${d(3)}`,
    eight_4_4: () => `${nz()}${d(3)} ${d(4)}`,
    au: () => R.pick([`(02) ${d(4)} ${d(4)}`, `04${d(2)} ${d(3)} ${d(3)}`, `+61 4${d(2)} ${d(3)} ${d(3)}`]),
    in: () => R.pick([`9${d(4)} ${d(5)}`, `+91 9${d(4)} ${d(5)}`, `+91-9${d(9)}`]),
    cn: () => R.pick([`13${d(1)} ${d(4)} ${d(4)}`, `+86 13${d(1)} ${d(4)} ${d(4)}`]),
    jp: () => R.pick([`090-${d(4)}-${d(4)}`, `03-${d(4)}-${d(4)}`, `+81 90-${d(4)}-${d(4)}`]),
    br: () => R.pick([`(11) 9${d(4)}-${d(4)}`, `+55 11 9${d(4)}-${d(4)}`, `(21) ${d(4)}-${d(4)}`]),
    mx: () => R.pick([`55 ${d(4)} ${d(4)}`, `+52 55 ${d(4)} ${d(4)}`]),
    es_it: () => R.pick([`6${d(2)} ${d(3)} ${d(3)}`, `+34 6${d(2)} ${d(3)} ${d(3)}`, `3${d(2)} ${d(3)} ${d(4)}`, `+39 3${d(2)} ${d(7)}`]),
    nl_be: () => R.pick([`06-${d(8)}`, `06 ${d(8)}`, `+31 6 ${d(8)}`, `0${nz()}${d(1)} ${d(2)} ${d(2)} ${d(2)}`]),
    intl_plain: () => `+${R.pick(['353', '420', '48', '46', '47', '45', '358', '41', '43', '32', '351', '30', '90', '27', '234', '254', '62', '63', '66', '84', '82', '65', '852', '971', '972', '64'])} ${d(2 + R.int(2))} ${d(3)} ${d(3 + R.int(2))}`,
  }
}

function phones(R, put) {
  const f = phoneFormats(R)
  for (const [rule, gen] of Object.entries(f)) {
    for (let i = 0; i < 10; i++) put('phone', rule, 'pos', PHONE_CONTEXTS[(i + rule.length) % PHONE_CONTEXTS.length], gen())
  }
  const d = R.digits
  const negs = {
    date: () => R.pick([`2024-0${1 + R.int(9)}-1${R.int(10)}`, `1${R.int(10)}.0${1 + R.int(9)}.2024`, `0${1 + R.int(9)}/1${R.int(10)}/2025`, `2024 0${1 + R.int(9)} 1${R.int(10)}`]),
    time: () => `${R.int(24)}:${d(2)}:${d(2)}`,
    version: () => `${R.int(10)}.${R.int(30)}.${R.int(100)}`,
    amount: () => R.pick([`${1 + R.int(9)} ${d(3)} ${d(3)}`, `${d(3)} ${d(3)}`, `${1 + R.int(9)},${d(3)},${d(3)}`, `${d(2)} ${d(3)},${d(2)} EUR`]),
    range: () => R.pick([`${d(3)}-${d(3)}`, `${d(4)}-${d(4)}`, `pages ${d(2)}-${d(2)}`]),
    ids: () => R.pick([`ISBN 978-${d(1)}-${d(2)}-${d(6)}-${d(1)}`, `order ${d(3)}-${d(7)}-${d(7)}`, `PID ${d(5)}`, `port ${d(4)}`, `case ${d(2)}-${d(4)}`, `build ${d(4)}.${d(4)}`, `${d(2)}x${d(2)} grid`, `ref ${d(3)} ${d(3)}`]),
    counts: () => R.pick([`called ${R.int(10)} times in ${d(3)} ms`, `call ${d(3)} ${d(3)} rows`, `contact ${d(2)} users`, `number ${d(3)} of ${d(3)}`]),
  }
  for (const [rule, gen] of Object.entries(negs)) {
    for (let i = 0; i < 15; i++) put('phone', rule, 'neg', R.pick(['{}', 'see {}', 'at {} we', 'from {}', 'Phone batch {} done']), gen())
  }
}

// ---------------------------------------------------------------------------------------------
// National identifiers with check digits.

const IBAN_LENGTHS = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27,
  GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20,
  LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24,
  PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25,
  SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
  // Outside the SWIFT registry (Nordea's and IBAN.com's lists).
  AO: 25, BF: 28, BJ: 28, CF: 27, CG: 27, CI: 28, CM: 27, CV: 25, DZ: 26, GA: 27, GQ: 27, GW: 25, IR: 26, KM: 27, MA: 28,
  MG: 27, ML: 28, MZ: 25, NE: 28, SN: 28, TD: 27, TG: 28,
}

function ibanFor(R, cc, len) {
  const bban = R.digits(len - 4)
  const num = (bban + cc + '00').replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55))
  let rem = 0
  for (const ch of num) rem = (rem * 10 + +ch) % 97
  return `${cc}${String(98 - rem).padStart(2, '0')}${bban}`
}

function verhoeffDigit(num) {
  const d = [[0,1,2,3,4,5,6,7,8,9],[1,2,3,4,0,6,7,8,9,5],[2,3,4,0,1,7,8,9,5,6],[3,4,0,1,2,8,9,5,6,7],[4,0,1,2,3,9,5,6,7,8],[5,9,8,7,6,0,4,3,2,1],[6,5,9,8,7,1,0,4,3,2],[7,6,5,9,8,2,1,0,4,3],[8,7,6,5,9,3,2,1,0,4],[9,8,7,6,5,4,3,2,1,0]]
  const p = [[0,1,2,3,4,5,6,7,8,9],[1,5,7,6,2,8,3,0,9,4],[5,8,0,3,7,9,6,1,4,2],[8,9,1,6,0,4,3,5,2,7],[9,4,5,3,1,2,6,8,7,0],[4,2,8,6,5,7,3,9,0,1],[2,7,9,3,8,0,6,4,1,5],[7,0,4,6,9,1,3,2,5,8]]
  const inv = [0,4,3,2,1,5,6,7,8,9]
  let c = 0
  const digits = (num + '0').split('').reverse().map(Number)
  for (let i = 0; i < digits.length; i++) c = d[c][p[i % 8][digits[i]]]
  return inv[c]
}

function ids(R, put) {
  const d = R.digits
  for (const [cc, len] of Object.entries(IBAN_LENGTHS)) {
    const iban = ibanFor(R, cc, len)
    put('id', 'iban', 'pos', R.pick(['IBAN {}', 'transfer to {} please', 'Konto: {}']), R.int(2) ? iban : iban.match(/.{1,4}/g).join(' '))
  }
  for (let i = 0; i < 15; i++) {
    // UK National Insurance number (HMRC NIM39110): two prefix letters, six digits, A-D.
    const l1 = R.pick('ABCEGHJKLMNOPRSTWXYZ'.split('')), l2 = R.pick('ABCEGHJKLMNPRSTWXYZ'.split(''))
    const pre = ['BG', 'GB', 'NK', 'KN', 'TN', 'NT', 'ZZ'].includes(l1 + l2) ? 'AB' : l1 + l2
    const n = d(6)
    put('id', 'uk_nino', 'pos', R.pick(['NI number {}', 'National Insurance: {}', 'NINO {}']), R.int(2) ? `${pre}${n}${R.pick('ABCD'.split(''))}` : `${pre} ${n.slice(0, 2)} ${n.slice(2, 4)} ${n.slice(4)} ${R.pick('ABCD'.split(''))}`)
    // NHS number (NHS Data Dictionary): 10 digits, mod 11 check digit.
    let nhs
    do {
      const b = d(9)
      const s = [...b].reduce((a, c, k) => a + +c * (10 - k), 0)
      const c = 11 - (s % 11)
      if (c === 10) continue
      nhs = b + (c === 11 ? 0 : c)
    } while (!nhs)
    put('id', 'uk_nhs', 'pos', R.pick(['NHS number {}', 'NHS no: {}']), R.int(2) ? nhs : `${nhs.slice(0, 3)} ${nhs.slice(3, 6)} ${nhs.slice(6)}`)
    // Canadian SIN (Service Canada): 9 digits, Luhn.
    const sin = luhnComplete(R, String(1 + R.int(7)), 9)
    put('id', 'ca_sin', 'pos', R.pick(['SIN {}', 'social insurance number: {}']), R.int(2) ? sin : `${sin.slice(0, 3)} ${sin.slice(3, 6)} ${sin.slice(6)}`)
    // Aadhaar (UIDAI): 12 digits, first 2-9, Verhoeff check digit.
    const a = String(2 + R.int(8)) + d(10)
    const aadhaar = a + verhoeffDigit(a)
    put('id', 'in_aadhaar', 'pos', R.pick(['Aadhaar {}', 'aadhaar no. {}', 'UID: {}']), R.int(2) ? aadhaar : `${aadhaar.slice(0, 4)} ${aadhaar.slice(4, 8)} ${aadhaar.slice(8)}`)
    // CPF and CNPJ (Receita Federal): mod 11 check digits.
    const cpf = cpfComplete(d(9))
    put('id', 'br_cpf', 'pos', R.pick(['CPF {}', 'cpf: {}', '{}']), `${cpf.slice(0, 3)}.${cpf.slice(3, 6)}.${cpf.slice(6, 9)}-${cpf.slice(9)}`)
    const cnpj = cnpjComplete(d(8) + '0001')
    put('id', 'br_cnpj', 'pos', R.pick(['CNPJ {}', 'cnpj: {}', '{}']), `${cnpj.slice(0, 2)}.${cnpj.slice(2, 5)}.${cnpj.slice(5, 8)}/${cnpj.slice(8, 12)}-${cnpj.slice(12)}`)
  }
  // Negatives: bad check digits, and numbers of the same shape without their context.
  for (let i = 0; i < 10; i++) {
    const cpf = cpfComplete(d(9))
    const bad = cpf.slice(0, 10) + ((+cpf[10] + 1) % 10)
    put('id', 'br_cpf', 'neg', 'CPF {}', `${bad.slice(0, 3)}.${bad.slice(3, 6)}.${bad.slice(6, 9)}-${bad.slice(9)}`)
    const iban = ibanFor(R, 'DE', 22)
    put('id', 'iban', 'neg', 'IBAN {}', iban.slice(0, 2) + ((+iban[2] + 1) % 10) + iban.slice(3))
    put('id', 'uk_nino', 'neg', 'NI number {}', `QQ${d(6)}E`)
  }
}

function cpfComplete(b) {
  const dv = (s, w) => {
    const r = [...s].reduce((a, c, k) => a + +c * (w - k), 0) % 11
    return r < 2 ? 0 : 11 - r
  }
  const d1 = dv(b, 10)
  return b + d1 + dv(b + d1, 11)
}

function cnpjComplete(b) {
  const dv = (s) => {
    const w = s.length === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]
    const r = [...s].reduce((a, c, k) => a + +c * w[k], 0) % 11
    return r < 2 ? 0 : 11 - r
  }
  const d1 = dv(b)
  return b + d1 + dv(b + d1)
}
