// Writes `testdata/corpus/gitleaks_rule_samples.rest.jsonl` (issue 29): gitleaks' OWN true and
// false-positive samples (the `tps` / `fps` its rule generators define in
// `cmd/generate/config/rules/*.go`, gitleaks/gitleaks, MIT) for the rules that are NOT in the
// development split `gitleaks_rule_samples.dev.jsonl`. It is the public stand-in for the issue's
// held-out figure ("gitleaks' own samples of the rules not shown"), so it is measured, not tuned on.
//
// The samples below are transcribed as data from the files named beside each rule (the commit is the
// one the file was read at). Where gitleaks draws a random secret (`secrets.NewSecret(regex)`), the
// regex is kept and a value is drawn from it with a seeded generator (seed 2911), and where it wraps
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

// [rule id, file@commit, true positives, false positives]
const RULES = [
  ['1password-secret-key', '1password.go@fca2d13843c2', [
    ...six('1password', [g('A3-[A-Z0-9]{6}-[A-Z0-9]{11}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}')]),
    ...six('1password', [g('A3-[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}')]),
    lit('A3-ASWWYB-798JRYLJVD4-23DC2-86TVM-H43EB'),
    lit('A3-ASWWYB-798JRY-LJVD4-23DC2-86TVM-H43EB'),
  ], [
    lit('A3-XXXXXX-XXXXXXXXXXX-XXXXX-XXXXX-XXXXX'),
    lit('A3-xXXXXX-XXXXXX-XXXXX-XXXXX-XXXXX-XXXXX'),
  ]],
  ['adafruit-api-key', 'adafruit.go@fbb4636fc422', six('adafruit', [g(AXS(32))]), []],
  ['adobe-client-id', 'adobe.go@d58c408a5e3f', six('adobe', [g(HEX(32))]), []],
  ['adobe-client-secret', 'adobe.go@d58c408a5e3f', [lit('adobeClient := "p8e-', g(HEX(32)), '"')], []],
  ['airtable-api-key', 'airtable.go@d58c408a5e3f', six('airtable', [g(AN(17))]), []],
  ['alibaba-access-key-id', 'alibaba.go@7c56229a9a0b', [lit('alibabaKey := "LTAI', g(HEX(20)), '"')], []],
  ['anthropic-api-key', 'anthropic.go@ce9b98a0a958', [
    lit('sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzAA'),
    ...one('anthropic', ['sk-ant-api03-', g(AXS(93)), 'AA']),
  ], [
    lit('sk-ant-api03-abc123xyz-456de-klMnopqrstuvwx-3456yza789bcde-1234fghijklmnopAA'),
    lit('sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzBB'),
    // (the third fp, an admin key, is a true positive of anthropic-admin-api-key: not a negative)
  ]],
  ['anthropic-admin-api-key', 'anthropic.go@ce9b98a0a958', [
    lit('sk-ant-admin01-abc12fake-456def789ghij-klmnopqrstuvwx-3456yza789bcde-12fakehijklmnopby56aaaogaopaaaabc123xyzAA'),
    ...one('anthropic', ['sk-ant-admin01-', g(AXS(93)), 'AA']),
  ], [
    lit('sk-ant-admin01-abc123xyz-456de-klMnopqrstuvwx-3456yza789bcde-1234fghijklmnopAA'),
    lit('sk-ant-admin01-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzBB'),
  ]],
  ['artifactory-reference-token', 'artifactory.go@fd0086c6d84f', [lit('artifactoryRefToken := "cmVmd', g(AN(59)), '"')], [
    lit('lowEntropy := cmVmdXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX'),
    lit('wrongStart := "cmVMd', g(AN(59)), '"'),
    lit('wrongLength := "cmVmd', g(AN(49)), '"'),
    lit('partOfAlongUnrelatedBlob gYnkgcmVmd', g(AN(59)), 'VyZSB2'),
  ]],
  ['atlassian-api-token', 'atlassian.go@3f5669d54579', [
    ...six('atlassian', [g(AN(20) + '[a-f0-9]{4}')]),
    ...six('confluence', [g(AN(20) + '[a-f0-9]{4}')]),
    ...six('jira', [g(AN(20) + '[a-f0-9]{4}')]),
    lit('JIRA_API_TOKEN=HXe8DGg1iJd2AopzyxkFB7F2'),
    ...six('jira', 'ATATT3xFfGF0K3irG5tKKi-6u-wwaXQFeGwZ-IHR-hQ3CulkKtMSuteRQFfLZ6jihHThzZCg_UjnDt-4Wl_gIRf4zrZJs5JqaeuBhsfJ4W5GD6yGg3W7903gbvaxZPBjxIQQ7BgFDSkPS8oPispw4KLz56mdK-G6CIvLO6hHRrZHY0Q3tvJ6JxE=C63992E6'),
  ], [lit('getPagesInConfluenceSpace,searchConfluenceUsingCql')]],
  ['aws-access-token', 'aws.go@b35e7ea22a6f', [
    ...six('AWS', 'AKIALALEMEL33243OLIB'),
    ...six('AWS', ['AKIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ASIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ABIA', g('[A-Z2-7]{16}')]),
    ...six('AWS', ['ACCA', g('[A-Z2-7]{16}')]),
  ], [
    lit('key = AKIAXXXXXXXXXXXXXXXX'),
    lit('aws_access_key: AKIAIOSFODNN7EXAMPLE'),
    lit('msgstr "Näytä asiakirjamallikansio."'),
    lit('TODAYINASIAASACKOFRICEFELLOVER'),
    lit('CTTCATAGGGTTCACGCTGTGTAAT-ACG--CCTGAGGC-CACA-AGGGGACTTCAGCAACCGTCGGG-GATTC-ATTGCCA-A--TGGAAGCAATC-TA-TGGGTTA-TCGCGGAGTCCGCAAAGACGGCCAGTATG-AAGCAGATTTCGCAC-CAATGTGACTGCATTTCGTG-ATCGGGGTAAGTA-TC-GCCGATTC-GC--CCGTCCA-AGT-CGAAG-TA--GGCAATATAAAGCTGC-CATTGCCGAAGCTATCTCGCTA-TACTTGAT-AATCGGCGG-TAG-CACAG-GTCGCAGTATCG-AC-T--AGG-CCTCTCAAAAGTT-GGGTCCCGGCCTCTGGGAAAAACACCTCT-A-AGCGTCAATCAGCTCGGTTTCGCATATTA-TGATATCCCCCGTTGACCAATTGA--TAGTACCCGAGCTTACCGTCGG-ATTCTGGAGTCTT-ATGAGGTTACCGACGA-CGCAGTACCATAAGT-GCGCAATTTGACTGTTCCCGTCGAGTAACCA-AGCTTTGCTCA-CCGGGATGCGCGCCGATGTGACCAGGGGGCGCATGTTACATTGAC-A-GCTGGATCATGTTATGAC-GTGGGTC-ATGCTAAAAGCCTAAAGGACGGT-GCATTAGTAT-TACCGGGACCTCATATCAATGCGCTCGCTAGTTCCTCTTCTCTTGATAACGTATATGCGTCAGGCGCCCGTCCGCCTCCAATACGTG-ACAACGTC-AGTACTGAGCCTC--AA-ACATCGTCTTGTTCG-CC-TACAAAGGATCGGTAGAAAACTCAATATTCGGGTATAAGGTCGTAGGAAGTGTGTCGCCCAGGGCCG-CTAGA-AGCGCACACAAGCG-CTCCTGTCAAGGAGTTG-GTGAAAA-ATGAAC--GACT-ATTGCGTCAC--CTACCTCT-AAGTTTTT-GACAATTTCATGGACGAATTGA-AGCGTCCACAAGCATCTGCCGTAGATATGCGGTAGGTTTTTACATATG-TCACTGCAGAGTCACGGACA-CACATCGCTGTCAAAATGCTCGTACCTAGT-GT-TTGCGATCCCCC-GCGGCATTA-TCTTTTGAACCCTCGTCCCTGTGG-CTCTGATGATTGAG-GTCTGTA-TTCCCTCGTTGTGGGGGGATTGGACCTT-TGTATAGGTTCTTTAACCG-ATGGGGGGCCG--ATCGA-A-TA-TGCTCCTGTTTGCCCCGAACCTT-ACCTCGG-TCCAGACA-CTAAGAAAAACCCC-C-ACTGTAAGGTGCTGAGCCTTTGGATAGCC-CGCGAATGAT-CC-TAGTTGACAA-CTGAACGCGCTCGAACA-TGCCC-GCCCTCTGA--CTGCTGTCTG-GCACCTTTAGACACGCGTCGAC-CATATATT-AGCGCTGTCTGTGG-AGGT-TGTGTCTTGTTGCTCA-CT-CATTATCTGT-AACTGGCTCC-CTC-CCAT-TGGCGTCTTTACACCAACCGCTAGGTTACAGTGCA-TCTAGCGCCTATTATCAGGGCGT-TTGCAGCGGCGCGGTGGCTATGT-GTTAGACATATC-CTTACACTGTATGCTAG-AGCAAGCCAC-TCTGAATGGGTTGC-CGATGAATGA-TCTTGATC-GAGCTCGCA-AC---TACATGGAGTCCGAAGTGAACCTACGGATGATCGTATTCCAACACGAGGATC-TATACGTATAGG-A-GGCG-TAATCCACAATTTAGTAACTCTTGACGC---GGATGAAAAT-GTCGTTACACCTTCCAGAGGCTCGG-GTATATATATGACCT--TGTGATTGAGGACGATCTAGAATAA-CT-GT-G-CT-AAAGTACAGTAGTTTCTATGT-GGTAGGTGGAGAATACAGAGTAG-ATGATTC-GTGGGCCACA-C--T-ACTTTCAT-TAGAGCAGAGA-C-GTGAGTGAGTTTTACACTAGCCAGATGGACCG-GTGA-AGTCTAACAGCCACCGCTT-GTGAGGTCGTTTCCCAGTC-ACCCTACTACAGGCAAAAACTCAGTGT-CC-GTGA-GTGCGTTAGTGATATTCCCTAACGGTTAGGTAACT-CATGAATTCA-AT-TAAGCGTGTCC-CGGT-CACGCCCCCATGGGGGCCTTCTTGGGAGG--AGCATCTTAT--AT-GCTCACGTGGTT-GATAGG-A-T-AATACACTTTTAGTCAGTCCATCAATAAC-AAAGGAAC---CAGGTGGTCGCAGATA-TCCCGCTGATATAGCACTGTGTAAACTCAGGTGATA-CTAAGC--GCTCTAAT-ACG-CTTAATGGCAATGCCCAGTTC--ACGACTAGCTTATGAGGCCCAGCTATGGACTGCGGC-GGCATGTCGGC-GATGGTTGCCCTCGCCCTAAATTATGTACGA-T-ACCGCCT-CTTGTTCT-CCGCCCATAGGGT-C--AGCAGGCGATAGACTCCCAGAAATTTCCTCGTCGT-CCGAATAAGACTAACACGACTA-TT-CCTCTAC-GT-G-AA-CTTATCA-CAAATG-GCT-TACC-TAGGTGGTGGCAGATCACTTTCCGGTG-TATTACGAATTGACGCATACCGAC-A-CGC-GCTTGTTGGATAATCGACTCTAACCTCCTCTCTGGCACATGT-GCTGGATTACCTC-TATTTT-TCTCGCTTAG--GGAACG-T-CCTCTGTCGCGTGAG-GTACGTTTCACGGGAG-CGGCTTGTTCATGCCACGTCCATTATCGA-AGTG-C-GTAAGG-A-GAGCCCTA--GACTCTACACGGAAA-TC-AAC-GTAGAAGGCTC-A-CT'),
  ]],
  ['beamer-api-token', 'beamer.go@d58c408a5e3f', six('beamer', ['b_', g(AX(44))]), [
    lit('│   ├── R21A-A-V010SP13RC181024R16900-CN-B_250K-Release-OTA-97B6C6C59241976086FABDC41472150C.bfu'),
  ]],
  ['bitbucket-client-id', 'bitbucket.go@d4800d433f16', six('bitbucket', [g(AN(32))]), []],
  ['bittrex-secret-key', 'bittrex.go@fbb4636fc422', six('bittrex', [g(AN(32))]), []],
  ['clojars-api-token', 'clojars.go@1a23fa94d4aa', six('clojars', ['CLOJARS_', g(AN(60))]), []],
  // cloudflare.go: each rule's fps are the other cloudflare rules' samples, true positives of
  // those rules, so they are not negatives here.
  ['cloudflare-origin-ca-key', 'cloudflare.go@fbb4636fc422', [
    ...six('cloudflare', 'v1.0-aaa334dc886f30631ba0a610-0d98ef66290d7e50aac7c27b5986c99e6f3f1084c881d8ac0eae5de1d1aa0644076ff57022069b3237d19afe60ad045f207ef2b16387ee37b749441b2ae2e9ebe5b4606e846475d4a5'),
    lit('CLOUDFLARE_ORIGIN_CA: v1.0-aaa334dc886f30631ba0a610-0d98ef66290d7e50aac7c27b5986c99e6f3f1084c881d8ac0eae5de1d1aa0644076ff57022069b3237d19afe60ad045f207ef2b16387ee37b749441b2ae2e9ebe5b4606e846475d4a5'),
    lit('CLOUDFLARE_ORIGIN_CA: v1.0-15d20c7fccb4234ac5cdd756-d5c2630d1b606535cf9320ae7456b090e0896cec64169a92fae4e931ab0f72f111b2e4ffed5b2bb40f6fba6b2214df23b188a23693d59ce3fb0d28f7e89a2206d98271b002dac695ed'),
  ], []],
  ['codecov-access-token', 'codecov.go@80f931f08672', six('codecov', [g(AN(32))]), []],
  ['coinbase-access-token', 'coinbase.go@fbb4636fc422', six('coinbase', [g(AXS(64))]), []],
  ['confluent-secret-key', 'confluent.go@fbb4636fc422', six('confluent', [g(AN(64))]), []],
  ['confluent-access-token', 'confluent.go@fbb4636fc422', six('confluent', [g(AN(16))]), []],
  ['contentful-delivery-api-token', 'contentful.go@fd366778c5fb', six('contentful', [g(AN(43))]), []],
  ['digitalocean-access-token', 'digitalocean.go@5eda8a05dbe0', six('do', ['doo_v1_', g(HEX(64))]), []],
  ['discord-api-token', 'discord.go@7c56229a9a0b', six('discord', [g(HEX(64))]), []],
  ['discord-client-id', 'discord.go@7c56229a9a0b', six('discord', [g(NUM(18))]), [lit('discord=000000000000000000')]],
  ['discord-client-secret', 'discord.go@7c56229a9a0b', six('discord', [g(NUM(32))]), [lit('discord=00000000000000000000000000000000')]],
  ['doppler-api-token', 'doppler.go@d58c408a5e3f', six('doppler', ['dp.pt.', g(AN(43))]), []],
  ['dropbox-api-token', 'dropbox.go@d4800d433f16', six('dropbox', [g(AN(15))]), []],
  ['easypost-test-api-token', 'easypost.go@1a23fa94d4aa', [
    ...six('EZTK', [g('EZTK[a-zA-Z0-9]{54}')]),
    lit(g('EZTK[a-zA-Z0-9]{54}')),
    lit('EZTK', g('[a-zA-Z0-9]{54}')),
    lit('example.com?t=EZTK', g('[a-zA-Z0-9]{54}'), '&q=1'),
  ], [lit('...6wqX6fNUXA/rYqRvfQ+EZTKGqQRiRyqAFRQshGPWOIAwNWGORfKHSBnVNFtVmWYoW6PH23lkqbbDWep95C/3VmWq/edti6...')]],
  ['facebook-access-token', 'facebook.go@d88bc094f782', [
    lit('{"facebook access_token":"911602140448729|AY-lRJZq9BoDLobvAiP25L7RcMg","token_type":"bearer"}'),
    lit('facebook 1308742762612587|rhoK1cbv0DOU_RTX_87O4MkX7AI'),
    lit('facebook 1477036645700765|wRPf2v3mt2JfMqCLK8n7oltrEmc'),
  ], []],
  ['finicity-client-secret', 'finicity.go@fd366778c5fb', six('finicity', [g(AN(20))]), []],
  ['finicity-api-token', 'finicity.go@fd366778c5fb', six('finicity', [g(HEX(32))]), []],
  ['flickr-access-token', 'flickr.go@fbb4636fc422', six('flickr', [g(AN(32))]), []],
  ['flutterwave-public-key', 'flutterwave.go@2d2383f58d48', six('flutterwavePubKey', ['FLWPUBK_TEST-', g(HEX(32)), '-X']), []],
  ['freshbooks-access-token', 'freshbooks.go@fbb4636fc422', six('freshbooks', [g(AN(64))]), []],
  ['github-fine-grained-pat', 'github.go@a7e2844d8c9a', six('github', ['github_pat_', g(AN(82))]), [
    lit('github_pat_xxxxxxxxxxxxxxxxxxxxxx_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'),
  ]],
  ['github-oauth', 'github.go@a7e2844d8c9a', six('github', ['gho_', g(AN(36))]), [lit('gho_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')]],
  ['gitlab-feature-flag-client-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glffct-', g(AN(20))]), []],
  ['gitlab-kubernetes-agent-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glagent-', g(AN(50))]), []],
  ['gitlab-pat', 'gitlab.go@2c097d4b318b', six('gitlab', ['glpat-', g(AN(20))]), [lit('glpat-XXXXXXXXXXX-XXXXXXXX')]],
  ['gitlab-ptt', 'gitlab.go@2c097d4b318b', six('gitlab', ['glptt-', g(HEX(40))]), [lit('glptt-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')]],
  ['gitlab-runner-authentication-token-routable', 'gitlab.go@2c097d4b318b', six('gitlab', ['glrt-t', g(NUM(1)), '_', g(AN(27)), '.', g(AN(2)), g(AN(7))]), [
    lit('glrt-tx_xxxxxxxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxx'),
  ]],
  ['gitlab-scim-token', 'gitlab.go@2c097d4b318b', six('gitlab', ['glsoat-', g(AN(20))]), []],
  ['gitlab-session-cookie', 'gitlab.go@2c097d4b318b', six('gitlab', ['_gitlab_session=', g(AN(32))]), []],
  ['grafana-api-key', 'grafana.go@7c56229a9a0b', six('grafana-api-key', ['eyJrIjoi', g(AN(70))]), []],
  ['harness-api-key', 'harness.go@d58c408a5e3f', [
    ...six('harness', ['pat.', g(AN(22)), '.', g(AN(24)), '.', g(AN(20))]),
    ...six('harness', ['sat.', g(AN(22)), '.', g(AN(24)), '.', g(AN(20))]),
  ], []],
  ['hashicorp-tf-api-token', 'hashicorp.go@1a23fa94d4aa', [
    ...six('hashicorpToken', [g(HEX(14)), '.atlasv1.', g(AX('60,70'))]),
    lit('#token = "hE1hlYILrSqpqh.atlasv1.ARjZuyzl33F71WR55s6ln5GQ1HWIwTDDH3MiRjz7OnpCfaCb1RCF5zGaSncCWmJdcYA"'),
  ], [lit('token        = "xxxxxxxxxxxxxx.atlasv1.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"')]],
  ['vault-service-token', 'hashicorp_vault.go@81fc668f98e2', [
    ...one('vault', [g('s\\.[0-9][a-zA-Z0-9]{23}')]),
    lit('token: s.ZC9Ecf4M5g9o34Q6RkzGsj0z'),
    ...one('vault', [g('hvs\\.[0-9][\\w\\-]{89}')]),
    lit('-vaultToken hvs.CAESIP2jTxc9S2K7Z6CtcFWQv7-044m_oSsxnPE1H3nF89l3GiYKHGh2cy5sQmlIZVNyTWJNcDRsYWJpQjlhYjVlb1cQh6PL8wEYAg"'),
  ], [
    lit("  credentials: new AWS.SharedIniFileCredentials({ profile: '<YOUR_PROFILE>' })"),
    lit('INFO 4 --- [           main] o.s.b.f.s.DefaultListableBeanFactory     : Overriding bean definition for bean'),
    lit('s.xxxxxxxxxxxxxxxxxxxxxxxx'),
    lit('s.THISSTRINGISALLUPPERCASE'),
    lit('s.thisstringisalllowercase'),
    lit('s.AcceptanceTimeoutSeconds '),
    lit('s.makeKubeConfigController = args'),
    lit('hvs.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'),
  ]],
  ['heroku-api-key-v2', 'heroku.go@6f251eef65b7', [
    ...six('heroku', [g('HRKU-AA[0-9a-zA-Z_-]{58}')]),
    lit('const KEY = "HRKU-AAlQ1aVoHDujJ9QsDHdHlHO0hbzhoERRSO45ZQusSYHg_____w4_hLrAym_u""'),
    lit('API_Key = "HRKU-AAy9Ppr_HD2pPuTyIiTYInO0hbzhoERRSO93ZQusSYHgaD7_WQ07FnF7L9FX"'),
  ], []],
  ['huggingface-access-token', 'huggingface.go@7c56229a9a0b', [
    ...six('huggingface', ['hf_', g('[a-zA-Z]{34}')]),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('huggingface-cli login --token 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'),
    lit('-H "Authorization: Bearer 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"'),
    lit('DEV=1 HF_TOKEN=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 poetry run python app.py'),
    lit("use_auth_token='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')"),
    lit('CI_HUB_USER_TOKEN = "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"'),
    lit('- Change line 5 and add your Hugging Face token, that is, instead of \'hf_token = "ADD_YOUR_HUGGING_FACE_TOKEN_HERE"\', you will need to change it to something like\'hf_token = "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"\''),
    lit('# Not critical, only usable on the sandboxed CI instance.\n\t\tTOKEN = "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"'),
    lit('    parser.add_argument("--hf_token", type=str, default=\'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\', help="Hugging Face Access Token to access PyAnnote gated models")'),
  ], [
    lit('- (id)hf_requiredCharacteristicTypesForDisplayMetadata;'),
    lit('amazon.de#@#div[data-cel-widget="desktop-rhf_SponsoredProductsRemoteRHFSearchEXPSubsK2ClickPagination"]'),
    lit('                            _kHMSymptomhf_generatedByHomeAppForDebuggingPurposesKey,'),
    lit('    #define OSCHF_DebugGetExpectedAverageCrystalAmplitude NOROM_OSCHF_DebugGetExpectedAverageCrystalAmplitude'),
    lit('  M_UINT       (ServingCellPriorityParametersDescription_t,  H_PRIO,  2, &hf_servingcellpriorityparametersdescription_h_prio),'),
    lit('+HWI-ST565_0092:4:1101:5508:5860#ACTTGA/1\n\t\tbb_eeeeegfgffhiiiiiiiiiiihiiiiicgafhf_eefghihhiiiifhifhhdhifhiiiihifdgdhggf\\bbceceedbcd\n\t\t@HWI-ST565_0092:4:1101:7621:5770#ACTTGA/1'),
    // (one binary-looking sample with U+FFFD characters is not transcribed)
    lit("                    change_dir(cwd)\n\t\tsubdirs = glob.glob('HF_CAASIMULIAComputeServicesBuildTime.HF*.Linux64')\n\t\tif len(subdirs) == 1:"),
    lit('        os.environ.get("HF_AUTH_TOKEN",\n\t\t"hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),'),
    lit('# HuggingFace API Token https://huggingface.co/settings/tokens\n\t\tHUGGINGFACE_API_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,'),
  ]],
  ['huggingface-organization-api-token', 'huggingface.go@7c56229a9a0b', [
    ...six('huggingface', ['api_org_', g('[a-zA-Z]{34}')]),
    lit('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'),
    lit('`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`'),
    lit("\\'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'\\"),
    lit('def test_private_space(self):\n        hf_token = "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"  # Intentionally revealing this key for testing purposes\n        io = gr.load('),
    lit('hf_token = "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"  # Intentionally revealing this key for testing purposes'),
    lit('"news_train_dataset = datasets.load_dataset(\'nlpHakdang/aihub-news30k\',  data_files = \\"train_news_text.csv\\", use_auth_token=\'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\')\\n",'),
    lit("os.environ['HUGGINGFACEHUB_API_TOKEN'] = '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'"),
    lit('api_org_', g('[a-zA-Z]{34}')),
  ], [
    lit('public static final String API_ORG_EXIST = "APIOrganizationExist";'),
    lit("const api_org_controller = require('../../controllers/api/index').organizations;"),
    lit('API_ORG_CREATE("https://qyapi.weixin.qq.com/cgi-bin/department/create?access_token=ACCESS_TOKEN"),'),
    lit('def test_internal_api_org_inclusion_with_href(api_name, href, expected, monkeypatch, called_with):\n\t\tmonkeypatch.setattr("requests.sessions.Session.request", called_with)'),
    lit('    def _api_org_96726c78_4ae3_402f_b08b_7a78c6903d2a(self, method, url, body, headers):\n        body = self.fixtures.load("api_org_96726c78_4ae3_402f_b08b_7a78c6903d2a.xml")\n        return httplib.OK, body, headers, httplib.responses[httplib.OK]'),
    lit('<p>You should see a token <code>hf_xxxxx</code> (old tokens are <code>api_XXXXXXXX</code> or <code>api_org_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX</code>).</p>'),
    lit('  From Hugging Face docs:\n\t\tYou should see a token hf_xxxxx (old tokens are api_XXXXXXXX or api_org_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx).\n\t\tIf you do not submit your API token when sending requests to the API, you will not be able to run inference on your private models.'),
  ]],
  ['intercom-api-key', 'intercom.go@fbb4636fc422', six('intercom', [g(AX(60))]), []],
  ['intra42-client-secret', 'intra42.go@fbb4636fc422', [
    lit('clientSecret := "s-s4t2ud-', g(HEX(64)), '"'),
    lit('clientSecret := "s-s4t2af-', g(HEX(64)), '"'),
    lit('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'),
    lit('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'),
  ], []],
  ['jfrog-api-key', 'jfrog.go@f6af25410b1e', [lit('--set imagePullSecretJfrog.password=', g(AN(73)))], []],
  ['jfrog-identity-token', 'jfrog.go@f6af25410b1e', [
    ...six('jfrog', [g(AN(64))]),
    ...six('artifactory', [g(AN(64))]),
    ...six('bintray', [g(AN(64))]),
    ...six('xray', [g(AN(64))]),
    lit('"artifactory", "', g(AN(64)), '"'),
  ], []],
  // jwt.go: the generated samples and 12 of its 30-odd literal tokens (the shorter ones).
  ['jwt', 'jwt.go@1a23fa94d4aa', [
    ...six('jwt', [g('ey[a-zA-Z0-9]{17,}\\.ey[a-zA-Z0-9\\/\\\\_-]{17,}\\.(?:[a-zA-Z0-9\\/\\\\_-]{10,}={0,2})?')]),
    lit('python examples/cli.py eyJhbGciOiJIUzI1NiJ9.eyJJc3N1ZXIiOiJJc3N1ZXIiLCJVc2VybmFtZSI6IkJhZFNlY3JldHMiLCJleHAiOjE1OTMxMzM0ODMsImlhdCI6MTQ2NjkwMzA4M30.ovqRikAo_0kKJ0GVrAwQlezymxrLGjcEiW_s3UJMMCo'),
    lit('"Authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VybmFtZTpib2IifQ.HcfCW67Uda-0gz54ZWTqmtgJnZeNem0Q757eTa9EZuw"'),
    lit('"value": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE1ODk1ODU1NjN9.PtfDS1niGoZ7pV6kplI-_q1fVKLnknQ3IwcrLZhoVCU",'),
    lit("//                  authorization: 'eyJhbGciOiJIUzUxMiIsImlhdCI6MTU3Njk5Njc5OSwiZXhwIjoxNTg0ODU5MTk5fQ.eyJ1aWQiOjQ1NzQyN30.0ei5UE6OgLBzN2_IS7xUIbIfW_S1Wzl42q2UeusbboxuzvctO_4Mz6YRr6f0PBLUVZMETxt8F0_4-yqIJ3_kUQ',"),
    lit('"authorization": "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiZ3Vlc3QiLCJzdWIiOiJZV3hwWTJVPSIsIm5iZiI6MTUxNDg1MTEzOSwiZXhwIjoxNjQxMDgxNTM5fQ.K5DnnbbIOspRbpCr2IKXE9cPVatGOCBrBQobQmBmaeU"'),
    lit('2020/11/04 21:08:40 Access Token:\n\t\t"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VyX2lkIjoiYTAwYzI3ZDEtYjVhYS00NjU0LWFmMTYtYjExNzNkZTY1NjI5Iiwicm9sZXMiOlsiYWRtaW4iXSwiaWF0IjoxNjA0NTE2OTIwLCJleHAiOjE2MDQ1MTc4MjAsImp0aSI6IjYzNmVmMDc0LTE2MzktNGJhZi1hNGNiLTQ4ZDM4NGMxMzliYSIsImlzcyI6Im15YXBwIn0.T9B0zG0AHShO5JfQgrMQBlToH33KHgp8nLMPFpN6QmM"'),
    lit('      # The following default key is generated by the local Supabase start and doesn\'t change\n\t\t- SUPABASE_SERVICE_ROLE_KEY=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6ImFub24iLCJleHAiOjE5ODM4MTI5OTZ9.CRXP1A7WOeoJeXxjNni43kdQwgnWNReilDMblYTn_I0'),
    lit('Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhIjoxLCJiIjoyLCJjIjozfQ.hxhGCCCmGV9nT1slief1WgEsOsfdnlVizNrODxfh1M8'),
    lit("--header 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJhY3RvclR5cGUiOiJVU0VSIiwiYWN0b3JJZCI6ImRhdGFodWIiLCJ0eXBlIjoiUEVSU09OQUwiLCJ2ZXJzaW9uIjoiMSIsImV4cCI6MTY1MDY2MDY1NSwianRpIjoiM2E4ZDY3ZTItOTM5Yi00NTY3LWE0MjYtZDdlMDA1ZGU3NjJjIiwic3ViIjoiZGF0YWh1YiIsImlzcyI6ImRhdGFodWItbWV0YWRhdGEtc2VydmljZSJ9.pp_vW2u1tiiTT7U0nDF2EQdcayOMB8jatiOA8Je4JJA' \\"),
    lit('String tokenWithNoneAlg = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.";'),
    lit("# Req: Invoke-RestMethod -Uri 'http://localhost:8085/users' -Headers @{ 'X-API-KEY' = 'eyJhbGciOiJub25lIn0.eyJ1c2VybmFtZSI6Im1vcnR5Iiwic3ViIjoiMTIzIn0.' }"),
    lit('{"signatures": [ "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJmaWxlcyI6W3sibmFtZSI6Ii5tYW5pZmVzdCIsImhhc2giOiJjMjEzMTU0NGM3MTZhMjVhNWUzMWY1MDQzMDBmNTI0MGU4MjM1Y2FkYjlhNTdmMGJkMWI2ZjRiZDc0YjI2NjEyIiwiYWxnb3JpdGhtIjoiU0hBMjU2In0seyJuYW1lIjoicm9sZXMvYmluZGluZ3MvZGF0YS5qc29uIiwiaGFzaCI6IjQyY2ZlNjc2OGI1N2JiNWY3NTAzYzE2NWMyOGRkMDdhYzViODEzNTU0ZWJjODUwZjJjYzM1ODQzZTcxMzdiMWQifV0sImlhdCI6MTU5MjI0ODAyNywiaXNzIjoiSldUU2VydmljZSIsImtleWlkIjoibXlQdWJsaWNLZXkiLCJzY29wZSI6IndyaXRlIn0.ZjtUgXC6USwmhv4XP9gFH6MzZwpZrGpAL_2sTK1P-mg"]}'),
  ], []],
  ['kucoin-access-token', 'kucoin.go@fd366778c5fb', six('kucoin', [g(HEX(24))]), []],
  ['launchdarkly-access-token', 'launchdarkly.go@91cfe8e3a459', six('launchdarkly', [g(AX(40))]), []],
  ['linear-api-key', 'linear.go@d58c408a5e3f', six('linear', ['lin_api_', g(AN(40))]), []],
  ['mailgun-pub-key', 'mailgun.go@80f931f08672', six('mailgun', ['pubkey-', g(HEX(32))]), []],
  ['mailgun-signing-key', 'mailgun.go@80f931f08672', six('mailgun', [g(HEX(32)), '-00001111-22223333']), []],
  ['mapbox-api-token', 'mapbox.go@5eda8a05dbe0', six('mapbox', ['pk.', g(AN(60)), '.', g(AN(22))]), []],
  ['mattermost-access-token', 'mattermost.go@fbb4636fc422', six('mattermost', [g(AN(26))]), []],
  ['maxmind-license-key', 'maxmind.go@81fc668f98e2', six('maxmind', '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'), []],
  ['messagebird-client-id', 'messagebird.go@8717170241b3', [
    ...six('MessageBird', '12345678-ABCD-ABCD-ABCD-1234567890AB'),
    lit('const MessageBirdClientID = "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
  ], []],
  ['netlify-access-token', 'netlify.go@80f931f08672', six('netlify', [g(AX('40,46'))]), []],
  ['new-relic-user-api-key', 'newrelic.go@8717170241b3', six('new-relic', ['NRAK-', g(AN(27))]), []],
  ['new-relic-insert-key', 'newrelic.go@8717170241b3', six('new-relic', ['NRII-', g(HEX(32))]), []],
  ['notion-api-token', 'notion.go@8fd9677bfae2', [
    lit('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'),
    lit('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'),
    lit('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'),
  ], [
    lit('ntn_12345678901'),
    lit('ntn_123456789012345678901234567890123456789012345678901234567890'),
    lit('ntn_12345678901abc'),
  ]],
  ['npm-access-token', 'npm.go@d58c408a5e3f', six('npmAccessToken', ['npm_', g(AN(36))]), []],
  ['nytimes-access-token', 'nytimes.go@fbb4636fc422', six('nytimes', [g(AN(32))]), []],
  ['okta-access-token', 'okta.go@91cfe8e3a459', [
    ...six('okta', [g('00[\\w=\\-]{40}')]),
    lit('"oktaApiToken": "00ebObu4zSNkyc6dimLvUwq4KpTEop-PCEnnfSTpD3",'),
    lit('\t\t\tvar OktaApiToken = "00fWkOjwwL9xiFd-Vfgm_ePATIRxVj852Iblbb1DS_";'),
  ], [
    lit('oktaKey = 00000000000000000000000000000000000TUVWXYZ'),
    lit('rookTable = 0023452Lllk2KqjLBvaxANWEgTd7bqjsxjo8aZj0wd'),
  ]],
  ['openai-api-key', 'openai.go@2c097d4b318b', [
    ...six('openaiApiKey', ['sk-', g(AN(20)), 'T3BlbkFJ', g(AN(20))]),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
    lit('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'),
  ], []],
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
  ['prefect-api-token', 'prefect.go@91cfe8e3a459', six('api-token', ['pnu_', g(AN(36))]), [
    lit('PREFECT_API_KEY = "pnu_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"'),
  ]],
  ['pypi-upload-token', 'pypi.go@2d2383f58d48', six('pypi', ['pypi-AgEIcHlwaS5vcmc', g(HEX(32)), g(HEX(32))]), []],
  ['rapidapi-access-token', 'rapidapi.go@91cfe8e3a459', six('rapidapi', [g(AXS(50))]), []],
  ['scalingo-api-token', 'scalingo.go@fbb4636fc422', [
    ...six('scalingo', ['tk-us-', g(AXS(48))]),
    lit('scalingo_api_token = "tk-us-loys7ib9yrxcys_ta2sq85mjar6lgcsspkd9x61s7h5epf_-"'),
  ], []],
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
  ['slack-bot-token', 'slack.go@c4aff7c5cb87', [
    ...six('bot', 'xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD'),
    lit('"bot_token1": "xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD"'),
    lit('"bot_token2": "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1MBS"'),
    lit('"bot_token3": "xoxb-4614724432022-5152386766518-O5WzjWGLG0wcCm2WPrjEmnys"'),
    lit('"bot_token4": "xoxb-', g(NUM(13)), '-', g(NUM(12)), '-', g(AN(24)), '"'),
  ], [
    lit('xoxb-xxxxxxxxx-xxxxxxxxxx-xxxxxxxxxxxx'),
    lit('xoxb-xxx'),
    lit('xoxb-12345-abcd234'),
    lit('xoxb-xoxb-my-bot-token'),
  ]],
  ['slack-config-refresh-token', 'slack.go@c4aff7c5cb87', [
    ...six('refresh', 'xoxe-1-My0xLTMxNzcwMjQ0MTcxMy01MTU4MTUyNjkxNzE0LTUxODE4NDI0MDY3MzYtMjA5MGFkOTFlZThkZWE2OGFlZDYwYWJjODNhYzAxYjA5ZjVmODBhYjgzN2QyNDdjOTNlOGY5NTg2YWM1OGM4Mg'),
    lit('"refresh_token1": "xoxe-1-My0xLTMxNzcwMjQ0MTcxMy01MTU4MTUyNjkxNzE0LTUxODE4NDI0MDY3MzYtMjA5MGFkOTFlZThkZWE2OGFlZDYwYWJjODNhYzAxYjA5ZjVmODBhYjgzN2QyNDdjOTNlOGY5NTg2YWM1OGM4Mg"'),
    lit('"refresh_token2": "xoxe-1-My0xLTM0MTQwNDE0MDE3Ni01MTgyMDc1NDk2MDgwLTU0MjQ1NjIwNzgxODEtNGJkYTZhYTUxY2M1ODk3ZTNkN2YzMTgxMDI1ZDQzNzgwNWY4NWQ0ODdhZGIzM2ViOGI0MTM0MjdlNGVmYzQ4Ng"'),
    lit('"refresh_token3": "xoxe-1-', g(AN(146)), '"'),
  ], [lit('xoxe-1-xxx'), lit('XOxE-RROAmw, Home and Garden, 5:24, 20120323')]],
  ['slack-legacy-bot-token', 'slack.go@c4aff7c5cb87', [
    ...six('slack', 'xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1'),
    lit('"bot_token1": "xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1"'),
    lit('"bot_token2": "xoxb-282029623751-BVtmnS3BQitmjZvjpQL7PSGP"'),
    lit('"bot_token3": "xoxb-47834520726-N3otsrwj8Cf99cs8GhiRZsX1"'),
    lit('"bot_token4": "xoxb-123456789012-Xw937qtWSXJss1lFaKe"'),
    lit('"bot_token5": "xoxb-312554961652-uSmliU84rFhnUSBq9YdKh6lS"'),
    lit('"bot_token6": "xoxb-51351043345-Lzwmto5IMVb8UK36MghZYMEi"'),
    lit('"bot_token7": "xoxb-130154379991-ogFL0OFP3w6AwdJuK7wLojpK"'),
    lit('"bot_token8": "xoxb-159279836768-FOst5DLfEzmQgkz7cte5qiI"'),
    lit('"bot_token9": "xoxb-50014434-slacktokenx29U9X1bQ"'),
    lit('"bot_token10": "xoxb-', g(NUM(10)), '-', g(AN(24))),
    lit('"bot_token11": "xoxb-', g(NUM(12)), '-', g(AN(23))),
  ], [
    lit('xoxb-xxxxxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx'),
    lit('xoxb-Slack_BOT_TOKEN'),
    lit('xoxb-abcdef-abcdef'),
  ]],
  ['slack-legacy-workspace-token', 'slack.go@c4aff7c5cb87', [
    ...six('slack', 'xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c'),
    lit('"access_token": "xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c"'),
    lit('"access_token1": "xoxa-', g(NUM(1)), '-', g(AN(12))),
    lit('"access_token2": "xoxa-', g(AN(12))),
    lit('"refresh_token1": "xoxr-', g(NUM(1)), '-', g(AN(12))),
    lit('"refresh_token2": "xoxr-', g(AN(12))),
  ], [lit('https://github.com/xoxa-nyc/xoxa-nyc.github.io/blob/master/README.md')]],
  ['slack-webhook-url', 'slack.go@c4aff7c5cb87', [
    lit('hooks.slack.com/services/', g(AN(44))),
    lit('http://hooks.slack.com/services/', g(AN(45))),
    lit('https://hooks.slack.com/services/', g(AN(46))),
    lit('http://hooks.slack.com/services/T024TTTTT/BBB72BBL/AZAAA9u0pA4ad666eMgbi555'),
    lit('https://hooks.slack.com/services/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'),
    lit('hooks.slack.com/workflows/', g(AN(44))),
    lit('http://hooks.slack.com/workflows/', g(AN(45))),
    lit('https://hooks.slack.com/workflows/', g(AN(46))),
    lit('https://hooks.slack.com/workflows/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'),
    lit('http://hooks.slack.com/workflows/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'),
    lit('https://hooks.slack.com/triggers/', g(AN(56))),
  ], []],
  ['snyk-api-token', 'snyk.go@24bd56765728', [
    ...six('snyk', '12345678-ABCD-ABCD-ABCD-1234567890AB'),
    lit('const SNYK_TOKEN = "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('const SNYK_KEY = "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_TOKEN := "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_TOKEN ::= "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_TOKEN :::= "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_TOKEN ?= "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_API_KEY ?= "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_API_TOKEN = "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
    lit('SNYK_OAUTH_TOKEN = "12345678-ABCD-ABCD-ABCD-1234567890AB"'),
  ], []],
  ['sonar-api-token', 'sonar.go@84df63c82c66', [
    ...six('sonar', '12345678ABCDEFH1234567890ABCDEFH12345678'),
    lit('const SONAR_LOGIN = "12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR_LOGIN := "12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR.LOGIN ::= "12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR.LOGIN :::= "12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR.LOGIN ?= "12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('const SONAR_TOKEN = "squ_12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR_LOGIN := "sqp_12345678ABCDEFH1234567890ABCDEFH12345678"'),
    lit('SONAR.TOKEN = "sqa_12345678ABCDEFH1234567890ABCDEFH12345678"'),
  ], []],
  ['squarespace-access-token', 'squarespace.go@5eda8a05dbe0', six('squarespace', [g(HEX8_4)]), []],
  ['sumologic-access-token', 'sumologic.go@d58c408a5e3f', [
    ...six('sumo', [g(AN(64))]),
    lit('export SUMOLOGIC_ACCESSKEY="3HSa1hQfz6BYzlxf7Yb1WKG3Hyovm56LMFChV2y9LgkRipsXCujcLb5ej3oQUJlx"'),
    lit('SUMO_ACCESS_KEY: gxq3rJQkS6qovOg9UY2Q70iH1jFZx0WBrrsiAYv4XHodogAwTKyLzvFK4neRN8Dk'),
    lit('SUMOLOGIC_ACCESSKEY: 9RITWb3I3kAnSyUolcVJq4gwM17JRnQK8ugRaixFfxkdSl8ys17ZtEL3LotESKB7'),
    lit('sumo_access_key = "3Kof2VffNQ0QgYIhXUPJosVlCaQKm2hfpWE6F1fT9YGY74blQBIPsrkCcf1TwKE5"'),
  ], [
    lit('#   SUMO_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'),
    lit('-e SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`'),
    lit('SUMO_ACCESS_KEY={SumoAccessKey}'),
    lit('SUMO_ACCESS_KEY=${SUMO_ACCESS_KEY:=$2}'),
    lit('sumo_access_key   = "<SUMOLOGIC ACCESS KEY>"'),
    lit('SUMO_ACCESS_KEY: AbCeFG123'),
    lit('sumOfExposures = 3Kof2VffNQ0QgYIhXUPJosVlCaQKm2hfpWE6F1fT9YGY74blQBIPsrkCcf1TwKE5;'),
  ]],
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
