//! Provider token formats: one entry per credential format whose shape alone identifies it
//! (a distinctive prefix, length and alphabet), covering the breadth of gitleaks' rule set and
//! the prefixed formats of other scanners' detectors. Each format is the provider's documented
//! one (the source is named beside the rule, and in the format table of
//! `scripts/redact-devcorpus.mjs`, which generates positives and near misses for every format);
//! `docs/redaction-coverage.md` lists them.
//!
//! Each rule names the keywords that make it worth running: the keyword prefilter
//! (Aho-Corasick, ASCII case-insensitive) finds them, and only then is the rule's regex run, in a
//! small window around the keyword. Patterns are written in the common subset of Rust `regex`
//! (compiled with Unicode off, so `\b`, `\w` and `\d` are ASCII) and JavaScript `RegExp`, so that
//! the benchmark can run the very same list in JS (`__redactionPatterns()`).
//!
//! Keyword-plus-value formats without a distinctive shape (`alibabaToken = "..."`,
//! `sourcegraph: <hex>`) are not listed here: the assignment detector in `secrets.rs` handles
//! them generically, with every provider name of the catalogue (`catalogue.rs`) as context.

use super::text::Lexicon;

/// What must follow a match for it to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
  /// Nothing is checked (the pattern's own classes are greedy).
  Any,
  /// Not followed by `[A-Za-z0-9]`.
  NotAlnum,
  /// Not followed by `[A-Za-z0-9_-]`.
  NotToken,
  /// Followed by whitespace, a quote, `; , ) ] } > < & |`, a backslash escape, the end of the
  /// text, or a `.` that ends a sentence.
  Delim,
}

/// Where the engine looks for a rule's keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
  /// At the start of a word (after a non-word byte, `-`, `/` or `+`): most token prefixes.
  WordStart,
  /// Right after a `:` (`:A` of Telegram bot tokens).
  Colon,
  /// Right before a `~` (`Q~` of Azure AD client secrets).
  Tilde,
  /// Inside a run of token characters at least this long (`-us` of Mailchimp keys).
  Infix(usize),
  /// At a `|` between a digit and a token character (`<app id>|<secret>` of Facebook app
  /// access tokens).
  Pipe,
}

#[derive(Clone, Debug)]
pub struct TokenRule {
  /// Finding kind, e.g. `github_token`.
  pub kind: &'static str,
  /// Keywords that trigger the rule (matched case-insensitively unless `exact`).
  pub keywords: &'static [&'static str],
  /// The keyword must appear with exactly this case (`AKIA`, not `akia`).
  pub exact: bool,
  /// Regex source (Rust/JS common subset).
  pub pattern: &'static str,
  /// Match the pattern case-insensitively.
  pub ci: bool,
  /// How many bytes before the keyword a match may start.
  pub back: usize,
  /// Longest possible match, bounding the search window.
  pub max_len: usize,
  pub end: End,
  /// Reject masks and documentation examples (`ghp_xxxx...`, `...EXAMPLE`).
  pub placeholder: bool,
  /// Minimum Shannon entropy (bits/byte) of the whole match.
  pub min_entropy: f64,
  /// At least this many `[A-Za-z0-9]` must directly follow the keyword (a cheap pre-check).
  pub tail: usize,
  /// The byte before the match must not be a token character (`[A-Za-z0-9_~.-]`).
  pub left_delim: bool,
  /// Finding a match blocks the whole text (private keys).
  pub blocks: bool,
  pub trigger: Trigger,
}

fn rule(kind: &'static str, keywords: &'static [&'static str], pattern: &'static str) -> TokenRule {
  TokenRule {
    kind,
    keywords,
    exact: false,
    pattern,
    ci: false,
    back: 0,
    max_len: 320,
    end: End::Delim,
    placeholder: true,
    min_entropy: 0.0,
    tail: 1,
    left_delim: false,
    blocks: false,
    trigger: Trigger::WordStart,
  }
}

impl TokenRule {
  fn exact(mut self) -> Self {
    self.exact = true;
    self
  }
  fn ci(mut self) -> Self {
    self.ci = true;
    self
  }
  fn back(mut self, n: usize) -> Self {
    self.back = n;
    self
  }
  fn max(mut self, n: usize) -> Self {
    self.max_len = n;
    self
  }
  fn end(mut self, e: End) -> Self {
    self.end = e;
    self
  }
  fn raw(mut self) -> Self {
    self.placeholder = false;
    self
  }
  fn entropy(mut self, h: f64) -> Self {
    self.min_entropy = h;
    self
  }
  fn tail(mut self, n: usize) -> Self {
    self.tail = n;
    self
  }
  fn left_delim(mut self) -> Self {
    self.left_delim = true;
    self
  }
  fn blocks(mut self) -> Self {
    self.blocks = true;
    self
  }
  fn trigger(mut self, t: Trigger) -> Self {
    self.trigger = t;
    self
  }
}

/// The provider token rules.
pub fn token_rules() -> Vec<TokenRule> {
  use End::{Any, Delim, NotAlnum, NotToken};
  vec![
    // --- cloud providers ---
    rule(
      "aws_access_key_id",
      &["AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA", "ASCA", "A3T"],
      r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ASCA)[A-Z0-9]{16}\b",
    )
    .exact()
    // No entropy floor: 16 characters of a 32-letter alphabet after `AKIA` fall below 3 bits per
    // byte for about 1 random key in 5,400 (found by the `redact` fuzz target), and a key with a
    // known prefix and shape is a secret. Masks and documentation keys are placeholders instead.
    .tail(12)
    .end(NotAlnum),
    rule("aws_bedrock_api_key", &["ABSK"], r"\bABSK[A-Za-z0-9+/]{109,269}={0,2}").exact().tail(40).end(NotToken),
    rule("aws_bedrock_api_key", &["bedrock-api-key-"], r"\bbedrock-api-key-[A-Za-z0-9+/=]{100,}").tail(40).max(4096),
    rule("google_api_key", &["AIza"], r"\bAIza[A-Za-z0-9_-]{35}").exact().end(NotToken).tail(0),
    rule("google_oauth_secret", &["GOCSPX-"], r"\bGOCSPX-[A-Za-z0-9_-]{28}").exact().end(NotToken).tail(0),
    rule("google_oauth_token", &["ya29."], r"\bya29\.[A-Za-z0-9_-]{30,2048}").end(NotToken).max(2100),
    rule("azure_client_secret", &["Q~"], r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}")
      .exact()
      .back(4)
      .left_delim()
      .entropy(3.0)
      .tail(0)
      .end(Delim).trigger(Trigger::Tilde),
    rule("digitalocean_token", &["dop_v1_", "doo_v1_", "dor_v1_"], r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    rule("alibaba_access_key_id", &["LTAI"], r"\bLTAI[A-Za-z0-9]{20}\b").exact().entropy(2.0).tail(20),
    rule("cloudflare_origin_ca_key", &["v1.0-"], r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}").max(200),
    rule("heroku_api_key", &["HRKU-AA"], r"\bHRKU-AA[A-Za-z0-9_-]{58}").exact().end(NotToken).tail(0),
    rule("hashicorp_tf_token", &["atlasv1"], r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}").back(15).end(NotToken).tail(0),
    rule("vault_token", &["hvs.", "hvb."], r"\bhv[sb]\.[A-Za-z0-9_-]{90,300}").end(NotToken).tail(20),
    rule("databricks_token", &["dapi"], r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b").tail(32).entropy(3.0),
    rule("doppler_token", &["dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."], r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9_]{40,44}\b"),
    rule("dynatrace_token", &["dt0c01."], r"\bdt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}\b"),
    rule("fly_io_token", &["fo1_"], r"\bfo1_[A-Za-z0-9_-]{43}").end(NotToken).tail(0),
    rule("fly_io_token", &["fm1a_", "fm1r_", "fm2_"], r"\bfm(?:1[ar]|2)_[A-Za-z0-9+/]{100,2048}={0,3}").end(NotToken).max(2100),
    rule("openshift_token", &["sha256~"], r"\bsha256~[A-Za-z0-9_-]{43}").end(NotToken).tail(0),
    rule("planetscale_token", &["pscale_tkn_", "pscale_oauth_", "pscale_pw_"], r"\bpscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}").tail(0),
    rule("scalingo_token", &["tk-us-"], r"\btk-us-[A-Za-z0-9_-]{48}").end(NotToken).tail(0),
    rule("heroku_api_key", &["HRKU-"], r"\bHRKU-[A-Za-z0-9_-]{60,}").exact().end(NotToken),
    // yandex.cloud/docs/iam/concepts/authorization: IAM tokens `t1.` (two base64url parts, the
    // second 86 long) and static access key ids `YC` + 38.
    rule("yandex_api_key", &["t1."], r"\bt1\.[A-Za-z0-9_-]+={0,2}\.[A-Za-z0-9_-]{86}={0,2}").tail(10).max(600).end(NotToken),
    rule("yandex_api_key", &["YC"], r"\bYC[A-Za-z0-9_-]{38}").exact().entropy(3.5).tail(38).end(NotToken),
    // Tencent Cloud CAM SecretId (cloud.tencent.com/document/product/598): `AKID` + 32.
    rule("tencent_secret_id", &["AKID"], r"\bAKID[A-Za-z0-9]{32}\b").exact().entropy(3.5).tail(32),
    // Amazon MWS auth tokens (developer-docs.amazon.com/sp-api): `amzn.mws.` + UUID.
    rule("amazon_mws_token", &["amzn.mws."], r"\bamzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    // Google OAuth refresh tokens (developers.google.com/identity/protocols/oauth2): `1//0` + 40+.
    rule("google_oauth_token", &["1//0"], r"\b1//0[A-Za-z0-9_-]{40,512}").tail(0).max(520).end(NotToken),
    // Azure DevOps personal access tokens (learn.microsoft.com, 2024 format): 84 characters with
    // the `AZDO` signature at 76.
    rule("azure_devops_token", &["AZDO"], r"\b[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}\b").exact().back(76).max(8).tail(0).trigger(Trigger::Infix(84)),
    // DataStax Astra application tokens (docs.datastax.com): `AstraCS:` + 24 letters `:` 64 hex.
    rule("astra_token", &["AstraCS:"], r"\bAstraCS:[A-Za-z]{24}:[a-f0-9]{64}\b").exact().tail(0),
    // --- source hosting and CI ---
    rule("github_token", &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"\bgh[pousr]_[A-Za-z0-9]{36,251}\b").entropy(3.0).tail(36).end(NotToken),
    rule("github_token", &["github_pat_"], r"\bgithub_pat_[A-Za-z0-9_]{50,244}\b").tail(20).end(NotToken),
    rule(
      "gitlab_token",
      &["glpat-", "glptt-", "glrt-", "gldt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-"],
      r"\bgl(?:pat|ptt|rt|dt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{9})?",
    )
    .entropy(3.0)
    .tail(0)
    .end(NotToken),
    rule("gitlab_token", &["glcbt-"], r"\bglcbt-[0-9A-Za-z]{1,5}_[0-9A-Za-z_-]{20}").end(NotToken),
    rule("gitlab_token", &["GR1348941"], r"\bGR1348941[A-Za-z0-9_-]{20}").exact().entropy(3.0).end(NotToken),
    // The cookie as written (`_gitlab_session=<32>`) is the credential: redacted whole.
    rule("gitlab_token", &["_gitlab_session="], r"_gitlab_session=[0-9a-z]{32}").tail(0),
    rule("bitbucket_token", &["ATBB"], r"\bATBB[A-Za-z0-9_=.-]{28,}").exact().entropy(3.0).end(NotToken).tail(20),
    rule("atlassian_token", &["ATATT3"], r"\bATATT3[A-Za-z0-9_=-]{186}").exact().end(NotToken).max(200),
    rule("buildkite_token", &["bkua_"], r"\bbkua_[a-f0-9]{40}\b"),
    rule("circleci_token", &["CCIPAT_"], r"\bCCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}\b").exact(),
    rule("docker_hub_token", &["dckr_pat_", "dckr_oat_"], r"\bdckr_[op]at_[A-Za-z0-9_-]{27,}").end(NotToken),
    // Bitbucket Data Center HTTP access tokens (confluence.atlassian.com/bitbucketserver): `BBDC-`.
    rule("bitbucket_token", &["BBDC-"], r"\bBBDC-[A-Za-z0-9+/@_-]{40,}").exact().entropy(3.5).tail(30).end(NotToken),
    rule("octopus_deploy_api_key", &["API-"], r"\bAPI-[A-Z0-9]{26}\b").exact().entropy(3.0).tail(26),
    // Pulumi access tokens: `pul-` + 40 (hex in Pulumi's docs and gitleaks; trufflehog's detector
    // and its tests take any lowercase letter and digit, so the wider alphabet, with an entropy floor).
    rule("pulumi_token", &["pul-"], r"\bpul-[a-z0-9]{40}\b").tail(40).entropy(3.0),
    rule("sourcegraph_token", &["sgp_"], r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b").entropy(3.0).tail(0),
    rule("sonar_token", &["squ_", "sqp_", "sqa_"], r"\bsq[upa]_[a-f0-9]{40}\b"),
    // --- package registries ---
    rule("npm_token", &["npm_"], r"\bnpm_[A-Za-z0-9]{36}\b").tail(36).entropy(2.5),
    rule("pypi_token", &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"], r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}").max(1100).end(NotToken),
    rule("rubygems_token", &["rubygems_"], r"\brubygems_[a-f0-9]{48}\b"),
    rule("nuget_token", &["oy2"], r"\boy2[a-z0-9]{43}\b").tail(43).entropy(3.0),
    rule("clojars_token", &["CLOJARS_"], r"\bCLOJARS_[A-Za-z0-9]{60}\b").ci(),
    // --- communication ---
    rule("slack_token", &["xoxb-"], r"\bxoxb-[0-9]{8,14}-[A-Za-z0-9-]{10,}").end(NotToken),
    rule("slack_token", &["xoxp-", "xoxe-"], r"\bxox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9-]{28,34}").end(NotToken),
    rule("slack_token", &["xoxo-", "xoxs-"], r"\bxox[os]-[0-9]+-[0-9]+-[0-9]+-[A-Fa-f0-9]+").end(NotToken),
    // Legacy workspace tokens hold dash-separated ids (`xoxa-2-511111111-31111111111-...-<hex>`).
    rule("slack_token", &["xoxa-", "xoxr-"], r"\bxox[ar]-(?:[0-9]-)?[0-9A-Za-z]{8,48}(?:-[0-9A-Za-z]{8,48}){0,4}").entropy(2.0).end(NotToken),
    rule("slack_token", &["xoxe.xoxb-", "xoxe.xoxp-"], r"\bxoxe\.xox[bp]-[0-9]-[A-Z0-9]{163,166}").ci().end(NotToken),
    rule("slack_token", &["xoxe-"], r"\bxoxe-[0-9]-[A-Z0-9]{146}").ci().end(NotToken),
    rule("slack_token", &["xapp-"], r"\bxapp-[0-9]-[A-Z0-9]{8,}-[0-9]{8,}-[A-Z0-9]{24,}").ci().end(NotToken),
    rule("webhook_url", &["hooks.slack.com"], r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,100}").back(8).tail(0).end(Any),
    rule("webhook_url", &["webhook.office.com"], r"https://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/-]{50,300}").back(64).tail(0).end(Any),
    rule("webhook_url", &["api/webhooks/"], r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,20}/[A-Za-z0-9_-]{60,100}").back(40).tail(0).end(Any),
    rule("twilio_api_key", &["SK"], r"\bSK[0-9a-fA-F]{32}\b").exact().entropy(3.0).tail(32),
    // The documented `SG.<22>.<43>`, and gitleaks' wider definition of the same 66 characters
    // (any of `A-Za-z0-9=_.-`), which keys pasted through encoders take.
    rule("sendgrid_api_key", &["SG."], r"\bSG\.(?:[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{39,50}|[A-Za-z0-9=_.-]{66})").exact().entropy(3.5).end(NotToken),
    rule("sendinblue_api_key", &["xkeysib-"], r"\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b"),
    rule("mailgun_api_key", &["key-"], r"\bkey-[0-9a-f]{32}\b").tail(32).entropy(3.0),
    rule("mailgun_api_key", &["pubkey-"], r"\bpubkey-[0-9a-f]{32}\b").tail(32).entropy(3.0),
    // MailerSend API tokens (developers.mailersend.com): `mlsn.` + 64 hex.
    rule("mailersend_token", &["mlsn."], r"\bmlsn\.[a-f0-9]{64}\b").tail(64),
    // Resend API keys (resend.com/docs): `re_` + 8 + `_` + 24.
    rule("resend_api_key", &["re_"], r"\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b").tail(8).entropy(3.0),
    // Discord bot tokens (discord.com/developers/docs/reference#authentication): the base64 of
    // the bot's snowflake id, `.`, 6, `.`, 27-38. The id is ASCII digits, so its base64 starts
    // with one of these three characters (`MT` for a leading 1, then a character of
    // `[AEIMQUYcgk]`): keywords that English words seldom start with.
    rule(
      "discord_token",
      &[
      "MTA", "MTE", "MTI", "MTM", "MTQ", "MTU", "MTY", "MTc", "MTg", "MTk", "MjA", "MjE", "MjI", "MjM", "MjQ", "MjU",
      "MjY", "Mjc", "Mjg", "Mjk", "MzA", "MzE", "MzI", "MzM", "MzQ", "MzU", "MzY", "Mzc", "Mzg", "Mzk", "NDA", "NDE",
      "NDI", "NDM", "NDQ", "NDU", "NDY", "NDc", "NDg", "NDk", "NTA", "NTE", "NTI", "NTM", "NTQ", "NTU", "NTY", "NTc",
      "NTg", "NTk", "NjA", "NjE", "NjI", "NjM", "NjQ", "NjU", "NjY", "Njc", "Njg", "Njk", "NzA", "NzE", "NzI", "NzM",
      "NzQ", "NzU", "NzY", "Nzc", "Nzg", "Nzk", "ODA", "ODE", "ODI", "ODM", "ODQ", "ODU", "ODY", "ODc", "ODg", "ODk",
      "OTA", "OTE", "OTI", "OTM", "OTQ", "OTU", "OTY", "OTc", "OTg", "OTk",
      ],
      r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b",
    )
    .exact()
    .entropy(3.5)
    .tail(20)
    .end(NotToken),
    rule("slack_token", &["xoxc-", "xoxd-"], r"\bxox[cd]-[A-Za-z0-9%/+=_-]{40,400}").entropy(3.5).tail(10).max(410).end(NotToken),
    rule("webhook_url", &["hooks.zapier.com"], r"(?:https?://)?hooks\.zapier\.com/hooks/catch/[0-9]+/[A-Za-z0-9]+").back(8).tail(0).end(Any),
    rule("mailchimp_api_key", &["-us"], r"\b[0-9a-f]{32}-us[0-9]{1,2}\b").back(32).max(8).tail(0).trigger(Trigger::Infix(35)),
    // The bot id, `:`, then `A` and 34 (core.telegram.org/bots/api#authorizing-your-bot shows
    // `AA` + 33; gitleaks `telegram-bot-api-token` takes any 5 to 16 digit id and `A` + 34).
    rule("telegram_bot_token", &[":A"], r"\b[0-9]{5,16}:A[A-Za-z0-9_-]{34}").exact().back(16).tail(0).entropy(3.0).end(NotToken).trigger(Trigger::Colon),
    // --- payments and commerce ---
    rule("stripe_key", &["sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"], r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,247}\b").entropy(2.0),
    rule("stripe_key", &["whsec_"], r"\bwhsec_[A-Za-z0-9+/=]{32,}").end(NotToken),
    rule("square_token", &["sq0atp-"], r"\bsq0atp-[0-9A-Za-z_-]{22,60}").end(NotToken),
    rule("square_token", &["sq0csp-"], r"\bsq0csp-[0-9A-Za-z_\\\]^-]{43}").end(Any),
    rule("square_token", &["EAAA"], r"\bEAAA[0-9A-Za-z_-]{22,60}").exact().entropy(3.0).end(NotToken).tail(22),
    rule("shopify_token", &["shpat_", "shpca_", "shppa_", "shpss_"], r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    rule("flutterwave_key", &["FLWSECK", "FLWPUBK"], r"\bFLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12}(?:[a-hA-H0-9]{20}-X)?\b").exact().tail(0),
    rule("shippo_token", &["shippo_"], r"\bshippo_(?:live|test)_[a-fA-F0-9]{40}\b"),
    rule("easypost_token", &["EZAK", "EZTK"], r"\bEZ[AT]K[A-Za-z0-9]{54}\b").exact().tail(54),
    rule("duffel_token", &["duffel_"], r"\bduffel_(?:test|live)_[A-Za-z0-9_=-]{43}").end(NotToken),
    rule("gocardless_token", &["live_"], r"\blive_[A-Za-z0-9_=-]{40}\b").entropy(3.5).tail(8).end(NotToken),
    // Braintree (PayPal) access tokens (developer.paypal.com/braintree):
    // `access_token$production$` + 16 + `$` + 32 hex.
    rule("paypal_token", &["access_token$"], r"\baccess_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}\b").tail(0),
    // Plaid access tokens (plaid.com/docs/api/tokens): `access-<environment>-` + UUID.
    rule(
      "plaid_token",
      &["access-sandbox-", "access-development-", "access-production-"],
      r"\baccess-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    )
    .tail(0),
    // Razorpay API key ids (razorpay.com/docs/api/authentication): `rzp_live_` / `rzp_test_` + 14.
    rule("razorpay_key", &["rzp_live_", "rzp_test_"], r"\brzp_(?:live|test)_[A-Za-z0-9]{14}\b").tail(14),
    rule("facebook_token", &["EAAM", "EAAC"], r"\bEAA[MC][A-Za-z0-9]{100,}").exact().entropy(3.5).tail(100).max(2048).end(Delim),
    // --- AI providers ---
    rule("openai_api_key", &["sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"], r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,300}").end(NotToken).max(340),
    // Found by its inner marker: triggered at every `sk-`, its pattern would scan 170 bytes each
    // time in a run of `sk-sk-sk-...`.
    rule("openai_api_key", &["T3BlbkFJ"], r"\bsk-[A-Za-z0-9_-]{20,74}T3BlbkFJ[A-Za-z0-9_-]{20,74}")
      .exact()
      .back(77)
      .max(82)
      .tail(20)
      .end(NotToken)
      .trigger(Trigger::Infix(51)),
    rule("openai_api_key", &["sk-"], r"\bsk-[A-Za-z0-9]{48}\b").tail(48).entropy(3.5),
    // API and admin keys end with `AA` (gitleaks `anthropic-api-key`, `anthropic-admin-api-key`).
    rule("anthropic_api_key", &["sk-ant-"], r"\bsk-ant-(?:(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{78,118}AA|(?:oat|ort|sid)[0-9]{2}-[A-Za-z0-9_-]{80,120})").end(NotToken).tail(0),
    rule("huggingface_token", &["hf_"], r"\bhf_[A-Za-z]{34}\b").entropy(3.0).tail(34),
    rule("huggingface_token", &["api_org_"], r"\bapi_org_[A-Za-z]{34}\b").entropy(3.0),
    // OpenRouter (openrouter.ai/docs/api-keys): `sk-or-v1-` + 64 hex.
    rule("openrouter_api_key", &["sk-or-v1-"], r"\bsk-or-v1-[a-f0-9]{64}\b").tail(0),
    // NVIDIA NGC / build.nvidia.com API keys: `nvapi-` + 64.
    rule("nvidia_api_key", &["nvapi-"], r"\bnvapi-[A-Za-z0-9_-]{64}").tail(30).end(NotToken),
    // ElevenLabs API keys (elevenlabs.io/docs): `sk_` + 48 hex.
    rule("elevenlabs_api_key", &["sk_"], r"\bsk_[a-f0-9]{48}\b").tail(48).entropy(3.0),
    // Langfuse secret keys (langfuse.com/docs): `sk-lf-` + UUID.
    rule("langfuse_key", &["sk-lf-"], r"\bsk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b").tail(0),
    rule("perplexity_api_key", &["pplx-"], r"\bpplx-[A-Za-z0-9]{48}").tail(48).end(NotAlnum),
    rule("groq_api_key", &["gsk_"], r"\bgsk_[A-Za-z0-9]{52}\b"),
    rule("replicate_token", &["r8_"], r"\br8_[A-Za-z0-9]{37}\b").tail(37),
    rule("xai_api_key", &["xai-"], r"\bxai-[A-Za-z0-9]{80}\b").tail(80),
    rule("langsmith_api_key", &["lsv2_"], r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b"),
    rule("pinecone_api_key", &["pcsk_"], r"\bpcsk_[A-Za-z0-9_]{50,}").end(NotToken),
    // --- observability, SaaS, misc ---
    rule("onepassword_token", &["ops_eyJ"], r"\bops_eyJ[A-Za-z0-9+/]{250,}={0,3}").max(4096).end(NotToken),
    rule("onepassword_secret_key", &["A3-"], r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b").exact().entropy(3.0).tail(6),
    rule("adobe_client_secret", &["p8e-"], r"\bp8e-[A-Za-z0-9]{32}\b").entropy(2.0),
    rule("age_secret_key", &["AGE-SECRET-KEY-1"], r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}").raw().blocks().end(Any),
    rule("artifactory_token", &["AKCp"], r"\bAKCp[A-Za-z0-9]{69}\b").exact().entropy(4.5).tail(69),
    rule("artifactory_token", &["cmVmd"], r"\bcmVmd[A-Za-z0-9]{59}\b").exact().entropy(4.5).tail(59),
    rule("authress_key", &["sc_", "ext_", "scauth_", "authress_"], r"\b(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}").tail(5).end(NotToken),
    rule("clickhouse_api_key", &["4b1d"], r"\b4b1d[A-Za-z0-9]{38}\b").entropy(3.0).tail(38),
    rule("defined_networking_token", &["dnkey-"], r"\bdnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}").end(NotToken),
    rule("frameio_token", &["fio-u-"], r"\bfio-u-[A-Za-z0-9_=-]{64}").end(NotToken),
    rule("grafana_token", &["eyJrIjoi"], r"\beyJrIjoi[A-Za-z0-9]{70,400}={0,3}").max(420).end(NotToken),
    rule("grafana_token", &["glc_"], r"\bglc_[A-Za-z0-9+/]{32,400}={0,3}").max(420).end(NotToken),
    rule("grafana_token", &["glsa_"], r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b"),
    rule("harness_token", &["pat.", "sat."], r"\b(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b").tail(0),
    rule("infracost_token", &["ico-"], r"\bico-[A-Za-z0-9]{32}\b").entropy(3.0).tail(32),
    rule("intra42_secret", &["s-s4t2ud-", "s-s4t2af-"], r"\bs-s4t2(?:ud|af)-[a-f0-9]{64}\b"),
    rule("jwt", &["ZXlK"], r"\bZXlK(?:aGJHY2lPaU|MGVYQWlPaU|cmFXUWlP|aGRXUWlPaU|cGMzTWlPaU|emRXSWlPaU)[A-Za-z0-9+/_-]{40,4000}={0,2}").exact().max(4100).end(NotToken),
    rule("linear_api_key", &["lin_api_"], r"\blin_api_[A-Za-z0-9]{40}\b"),
    rule("mapbox_token", &["sk.eyJ"], r"\bsk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}").tail(0).end(NotToken),
    rule("maxmind_license_key", &["_mmk"], r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b").back(37).max(8).tail(0).trigger(Trigger::Infix(40)),
    // New Relic license keys (docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys): 36 hex
    // and the `NRAL` suffix.
    rule("newrelic_key", &["NRAL"], r"\b[a-f0-9]{36}NRAL\b").exact().back(36).max(4).tail(0).trigger(Trigger::Infix(40)),
    rule("newrelic_key", &["NRAK-", "NRJS-", "NRII-"], r"\bNR(?:AK-[A-Z0-9]{27}|JS-[a-f0-9]{19}|II-[A-Za-z0-9-]{32})").exact().tail(0).end(NotToken),
    rule("notion_token", &["ntn_"], r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b"),
    rule("notion_token", &["secret_"], r"\bsecret_[A-Za-z0-9]{43}\b").entropy(4.0).tail(43),
    rule("postman_token", &["PMAK-"], r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b"),
    rule("prefect_token", &["pnu_"], r"\bpnu_[A-Za-z0-9]{36}\b"),
    rule("readme_token", &["rdme_"], r"\brdme_[a-z0-9]{70}\b"),
    rule("sentry_token", &["sntryu_"], r"\bsntryu_[a-f0-9]{64}\b").entropy(3.5),
    rule("sentry_token", &["sntrys_eyJpYXQiO"], r"\bsntrys_eyJpYXQiO[A-Za-z0-9+/=_]{60,1000}").max(1100).end(NotToken),
    rule("settlemint_token", &["sm_aat_", "sm_pat_", "sm_sat_"], r"\bsm_(?:aat|pat|sat)_[A-Za-z0-9]{16}\b").entropy(3.0),
    rule("typeform_token", &["tfp_"], r"\btfp_[A-Za-z0-9_.=-]{59}").end(NotToken),
    rule("yandex_api_key", &["AQVN"], r"\bAQVN[A-Za-z0-9_-]{35,38}\b").exact().tail(30),
    rule("figma_token", &["figd_"], r"\bfigd_[A-Za-z0-9_-]{40}").end(NotToken),
    rule("supabase_token", &["sbp_"], r"\bsbp_[a-f0-9]{40}\b"),
    rule("tailscale_key", &["tskey-"], r"\btskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}\b").tail(0),
    rule("firebase_fcm_key", &[":APA91b"], r"\bAAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{130,}").exact().back(12).tail(0).max(400).end(NotToken).trigger(Trigger::Colon),
    rule("contentful_token", &["CFPAT-"], r"\bCFPAT-[A-Za-z0-9_-]{43}").exact().end(NotToken),
    rule("netlify_token", &["nfp_"], r"\bnfp_[A-Za-z0-9]{36}\b"),
    rule("render_token", &["rnd_"], r"\brnd_[A-Za-z0-9]{32}\b").entropy(3.0),
    rule("airtable_token", &["pat"], r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b").tail(14),
    // Dropbox short-lived access tokens (dropbox.com/developers): `sl.` + 130+.
    rule("dropbox_token", &["sl."], r"\bsl\.(?:u\.)?[A-Za-z0-9_-]{130,1400}").tail(100).max(1410).end(NotToken),
    // X (Twitter) app-only bearer tokens (developer.x.com): 22 `A`s, then 80-110 characters.
    rule("twitter_token", &["AAAAAAAAAAAAAAAAAAAAA"], r"\bA{21}[A-Za-z0-9%]{80,110}").exact().raw().entropy(3.0).tail(0).end(NotToken),
    // Databricks OAuth secrets (docs.databricks.com): `dose` + 32 hex.
    rule("databricks_token", &["dose"], r"\bdose[a-f0-9]{32}\b").tail(32).entropy(3.0),
    // PostHog personal API keys (posthog.com/docs/api): `phx_` + 43-47.
    rule("posthog_token", &["phx_"], r"\bphx_[A-Za-z0-9]{43,47}\b").tail(40),
    // Supabase secret API keys (supabase.com/docs/guides/api/api-keys): `sb_secret_`.
    rule("supabase_token", &["sb_secret_"], r"\bsb_secret_[A-Za-z0-9_-]{20,80}").tail(20).end(NotToken),
    rule("linear_api_key", &["lin_oauth_"], r"\blin_oauth_[a-f0-9]{64}\b").tail(64),
    rule("hubspot_token", &["pat-na1-", "pat-eu1-"], r"\bpat-(?:na|eu)1-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}\b").tail(0),
    // --- trufflehog detector formats (issue 29): prefixed shapes of trufflehog's detectors
    // (`pkg/detectors/<name>`, the regex and the pattern tests' samples) that no rule above
    // covered. Each names its detector; the format, not a sample, is what is matched.
    // Dynatrace API and platform tokens (detector `dynatrace`): `dt0` + a letter + two digits,
    // a public part of 8-24 and a secret part of 64 uppercase letters and digits.
    rule("dynatrace_token", &["dt0"], r"\bdt0[a-z][0-9]{2}\.[A-Z0-9]{8,24}\.[A-Z0-9]{64}\b").exact().tail(0),
    // Buildkite user API tokens v2 (detector `buildkite` v2): `bkua_` + 40 lowercase letters
    // and digits (not only hex).
    rule("buildkite_token", &["bkua_"], r"\bbkua_[a-z0-9]{40}\b").entropy(3.0),
    // BestTime private API keys (detector `besttime`): `pri_` + 32 hex (`pub_` keys are public;
    // Paddle's price ids, `pri_` + 26, are ids).
    rule("besttime_api_key", &["pri_"], r"\bpri_[a-f0-9]{32}\b").tail(32).entropy(3.0),
    // Teamwork API tokens (detectors `teamworkcrm`, `teamworkdesk`, `teamworkspaces`):
    // `tkn.v1_` + 71 letters and digits + `=`.
    rule("teamwork_token", &["tkn.v1_"], r"\btkn\.v1_[A-Za-z0-9]{71}=").tail(40).end(NotToken),
    // WakaTime API keys (detector `wakatime`): `waka_` + a UUID.
    rule("wakatime_api_key", &["waka_"], r"\bwaka_[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}\b").tail(8),
    // Adafruit IO keys (detector `adafruitio`): `aio_` + 28 letters and digits.
    rule("adafruit_io_key", &["aio_"], r"\baio_[A-Za-z0-9]{28}\b").tail(28).entropy(3.0),
    // Apify API tokens (detector `apify`): `apify_api_` + letters and digits.
    rule("apify_token", &["apify_api_"], r"\bapify_api_[A-Za-z0-9]{30,64}\b").tail(30).entropy(3.0),
    // AWS AppSync GraphQL API keys (detector `awsappsync`): `da2-` + 26 lowercase letters and digits.
    rule("aws_appsync_api_key", &["da2-"], r"\bda2-[a-z0-9]{26}\b").tail(26).entropy(3.0),
    // A private key block in base64 (kubeconfig `client-key-data`, Kubernetes `tls.key`, CI
    // variables; detectors `kubeconfig`, `privatekey`): the encoding of `-----BEGIN <type> PRIVATE
    // KEY` for the PEM types that `secrets::pem_at` redacts in clear, and all the base64 after it
    // (the engine takes a match that its window cuts whole).
    rule(
      "private_key",
      &["LS0tLS1CRUdJTi"],
      r"\bLS0tLS1CRUdJTi(?:BSU0EgUFJJVkFURSBLRVkt|BQUklWQVRFIEtFWS0t|BFQyBQUklWQVRFIEtFWS0t|BPUEVOU1NIIFBSSVZBVEUgS0VZLS0t|BEU0EgUFJJVkFURSBLRVkt|BFTkNSWVBURUQgUFJJVkFURSBLRVkt|BQR1AgUFJJVkFURSBLRVkgQkxPQ0st)[A-Za-z0-9+/]*={0,2}",
    )
    .exact()
    .raw()
    .tail(0)
    .end(NotToken),
    // --- issue 29: formats of gitleaks' samples of the rules outside the dev split ---
    // Facebook app access tokens (developers.facebook.com/docs/facebook-login/guides/access-tokens,
    // "app access tokens"; gitleaks `facebook-access-token`): the app id, `|`, the app secret or
    // a token, written together; the id alone is public, the pair is the credential.
    rule("facebook_token", &["|"], r"\b[0-9]{15,16}\|[0-9A-Za-z_-]{27,40}").back(16).tail(27).entropy(3.0).end(NotToken).trigger(Trigger::Pipe),
    // New Relic admin, Insights query, REST API and synthetics location keys (prefixes of
    // secrets-patterns-db `Newrelic ... Key`, docs.newrelic.com API keys).
    rule("newrelic_key", &["NRAA-"], r"\bNRAA-[a-f0-9]{27}\b").exact().tail(27),
    rule("newrelic_key", &["NRIQ-"], r"\bNRIQ-[A-Za-z0-9_-]{32}").exact().tail(32).entropy(3.0).end(NotToken),
    rule("newrelic_key", &["NRRA-"], r"\bNRRA-[a-f0-9]{42}\b").exact().tail(42),
    rule("newrelic_key", &["NRSP-"], r"\bNRSP-[a-z]{2}[0-9]{2}[a-f0-9]{31}\b").exact().tail(35),
  ]
}

/// Known token prefixes. A value assigned to `token =` that starts with one but fails that
/// format's check is left to the format's rule (`xoxp-1234567890`, `sm_sat_om1ut2e75f`,
/// `dapi...g5`); a placeholder is judged on what follows the prefix (`ghp_your_token_here`).
pub const TOKEN_PREFIXES: &[&str] = &[
  "ghp_",
  "gho_",
  "ghu_",
  "ghs_",
  "ghr_",
  "github_pat_",
  "glpat-",
  "xoxb-",
  "xoxp-",
  "xoxa-",
  "xoxr-",
  "xoxs-",
  "xoxo-",
  "xoxe",
  "xapp-",
  "sk_live_",
  "sk_test_",
  "rk_live_",
  "rk_test_",
  "sk-ant-",
  "sk-proj-",
  "AKIA",
  "ASIA",
  "AIza",
  "npm_",
  "pypi-",
  "SG.",
  "shpat_",
  "shpss_",
  "shpca_",
  "shppa_",
  "dop_v1_",
  "doo_v1_",
  "dor_v1_",
  "dapi",
  "sm_sat_",
  "sm_pat_",
  "sm_aat_",
  "sntryu_",
  "sntrys_",
  "glc_",
  "glsa_",
  "hvs.",
  "hvb.",
  "pul-",
  "rdme_",
  "rubygems_",
  "pplx-",
  "lin_api_",
  "ntn_",
  "PMAK-",
  "pnu_",
  "dckr_pat_",
  "figd_",
  "sbp_",
  "fo1_",
  "sha256~",
  "GR1348941",
  "AKCp",
  "EZAK",
  "EZTK",
  "ops_eyJ",
  "sk-",
  "ABSK",
  "glcbt-",
  "glrt-",
  "glptt-",
  "gldt-",
  "glft-",
  "glimt-",
  "gloas-",
  // trufflehog detector formats (issue 29)
  "dt0c01.",
  "dt0s01.",
  "dt0s02.",
  "bkua_",
  "tkn.v1_",
  "waka_",
  "aio_",
  "apify_api_",
  "da2-",
];

/// Length of the longest of [`TOKEN_PREFIXES`] that `v` starts with (0: none). Asked for every
/// assigned value and random-looking token: a table of the prefixes' first two bytes rejects
/// most at once.
pub fn token_prefix_len(v: &[u8]) -> usize {
  static BY_PAIR: std::sync::OnceLock<rustc_hash::FxHashMap<[u8; 2], Vec<&'static [u8]>>> = std::sync::OnceLock::new();
  let Some(pair) = v.first_chunk::<2>() else { return 0 };
  let table = BY_PAIR.get_or_init(|| {
    let mut t: rustc_hash::FxHashMap<[u8; 2], Vec<&'static [u8]>> = rustc_hash::FxHashMap::default();
    for p in TOKEN_PREFIXES {
      let b = p.as_bytes();
      t.entry([b[0], b[1]]).or_default().push(b);
    }
    t
  });
  table.get(pair).map_or(0, |list| list.iter().filter(|p| v.starts_with(p)).map(|p| p.len()).max().unwrap_or(0))
}

/// The provider names of issue 19: words that make up placeholder values
/// (`stripe_secret_key_here`, see `placeholder.rs`). The identifier context of assignments uses
/// the whole provider catalogue (`catalogue.rs`), of which these are a part (`loa:rules`).
pub static PROVIDER_WORDS: Lexicon = Lexicon::new(&[
  "adafruit",
  "adobe",
  "airtable",
  "algolia",
  "alibaba",
  "amplitude",
  "anthropic",
  "artifactory",
  "asana",
  "atlassian",
  "auth0",
  "aws",
  "azure",
  "beamer",
  "bintray",
  "bitbucket",
  "bittrex",
  "braintree",
  "circleci",
  "clickhouse",
  "cloudflare",
  "codecov",
  "cohere",
  "coinbase",
  "confluence",
  "confluent",
  "contentful",
  "contribsys",
  "databricks",
  "datadog",
  "deepgram",
  "digitalocean",
  "discord",
  "docker",
  "doppler",
  "droneci",
  "dropbox",
  "duffel",
  "dynatrace",
  "easypost",
  "elevenlabs",
  "etsy",
  "facebook",
  "fastly",
  "finicity",
  "finnhub",
  "firebase",
  "flickr",
  "flutterwave",
  "frameio",
  "freshbooks",
  "gcp",
  "github",
  "gitlab",
  "gitter",
  "gocardless",
  "google",
  "grafana",
  "groq",
  "heroku",
  "hubspot",
  "huggingface",
  "infracost",
  "intercom",
  "jenkins",
  "jfrog",
  "jira",
  "kraken",
  "kucoin",
  "launchdarkly",
  "linear",
  "linkedin",
  "lob",
  "looker",
  "mailchimp",
  "mailgun",
  "mapbox",
  "mattermost",
  "meraki",
  "messagebird",
  "mistral",
  "netlify",
  "newrelic",
  "notion",
  "npm",
  "nytimes",
  "okta",
  "openai",
  "pagerduty",
  "paypal",
  "perplexity",
  "pinecone",
  "plaid",
  "planetscale",
  "postman",
  "privateai",
  "pulumi",
  "pypi",
  "rapidapi",
  "replicate",
  "rubygems",
  "sendbird",
  "sendgrid",
  "sentry",
  "shopify",
  "sidekiq",
  "slack",
  "snyk",
  "sonar",
  "sourcegraph",
  "square",
  "squarespace",
  "stripe",
  "sumo",
  "sumologic",
  "supabase",
  "telegram",
  "terraform",
  "travis",
  "trello",
  "twilio",
  "twitch",
  "twitter",
  "typeform",
  "vault",
  "vercel",
  "yandex",
  "zendesk",
]);

/// SHA-256 digests of public example keys that appear in SDK documentation and sample apps (the
/// Google API keys gitleaks' `gcp-api-key` rule allowlists): never secrets. Kept as digests so
/// that this source file holds nothing a secret scanner would flag.
pub const KNOWN_PUBLIC_SHA256: &[&str] = &[
  "f56e323494a6ffc2064e7a955908957d84f0755e5f975dabd64328d0359a8f7c",
  "2037abcaffb2b77785da716cf7ccff4ff4d00c4ea930db0167b7d71f50af7eb4",
  "3f370c9dd8225c63b5c77de1f785edc9712958f18bb612d5fa2e0ae33aeca682",
  "e4a5542bb7fd7b67e943c71ad29c34b5972c9840597e7eda53e666f44d5da0b9",
  "a19f89ab3555eac10c40741f6df79ecf0935998f15569f8db9d67bce0181fff6",
  "0b476bdf9acf2123d547b5ae76f1e59884d8ec9553ee0c47e9f31fd4768f3f3c",
  "eb540d2b6ee2a0a47c5779bc8a0141784c6b753840d4c6f4e2428a6e86e9e0b1",
  "37f8f09bdf12c2f2eae4ead7273a62ddb0c23459cbf902892f282b57f7ed6619",
  "8731261cb72d86267a32a532ebd3df429e2144e5e4ced7e13568bc9e6c8fb1b1",
  "49f777db995e8260da7ca9ffdf0c08d66f0453e97ec967018baf2cdfe3b582d0",
  "27a9a42931dff7eb2f8434e20a9bce976ea364e7bee49187f19d5cfeca9c7045",
  "dc0fcf046c61640cbd1e8b999ada3262d722c2ca4bf42dceac999020ffdbb614",
  "4c98242dcadc8b29005c6b4aad526552d5ea1842149154c0694adeec75847583",
  "ea9bb1082cf95663f5faca23b8b15ef2aa0fce0a5c6df9c32dcb85b2e0a4513d",
  "3a8b61d0f636b007840c0d40ba12bcf48465dc054cdc1a68704a33521d84b665",
  "a6c814bc555ae62c7bd8b58ec07bf559c7ed3a009976a1e0acc9cef0d4473b41",
];

/// Is `v` one of the published example keys?
pub fn is_known_public(v: &[u8]) -> bool {
  use sha2::{Digest, Sha256};
  if !(v.len() == 39 && v.starts_with(b"AIza")) {
    return false;
  }
  let digest = hex::encode(Sha256::digest(v));
  KNOWN_PUBLIC_SHA256.contains(&digest.as_str())
}
