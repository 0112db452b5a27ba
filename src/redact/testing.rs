//! For tests outside this crate (the fuzzer, with the `redact-testing` feature) and for the unit
//! tests: redaction that reports how much work it did, and fake tokens of every provider format.
//!
//! Fake tokens are generated at run time from a caller's random numbers, never written down: no
//! source file holds anything a secret scanner would flag.

use super::{redact_with_cuts, text, RedactOptions, Redaction};

/// The work bound the tests and the fuzzer hold redaction to: at most this many bytes examined per
/// byte of input, plus [`WORK_BASE`] (the fixed windows of a text shorter than them).
pub const WORK_PER_BYTE: u64 = 100;
pub const WORK_BASE: u64 = 1 << 16;

/// The most work (bytes examined) redaction may do on a text of `len` bytes.
pub fn work_bound(len: usize) -> u64 {
  WORK_BASE + WORK_PER_BYTE * len as u64
}

/// [`super::redact`] on the calling thread only (no split into pieces), and the work it did:
/// the number of bytes the detectors examined. Redaction time is linear in the length of the text
/// when this is at most a constant times the length.
pub fn redact_counting_work(text: &str, options: &RedactOptions) -> (Redaction, u64) {
  text::work::take();
  let r = redact_with_cuts(text, options, &[0, text.len()]);
  (r, text::work::take())
}

/// Fails, naming each, for the inputs `cases(n)` builds (name, text) whose redaction work is
/// not linear in their length: four times the input (`cases(4 * n)`, the same names in the
/// same order) may cost at most about four times the work, plus a constant for the fixed
/// windows at the edges, and never more than [`work_bound`].
#[cfg(test)]
pub(super) fn assert_linear_work(cases: impl Fn(usize) -> Vec<(&'static str, String)>, options: &RedactOptions) {
  let n = 16 * 1024;
  let mut failures = Vec::new();
  for ((name, a), (_, b)) in cases(n).iter().zip(&cases(4 * n)) {
    let (_, wa) = redact_counting_work(a, options);
    let (_, wb) = redact_counting_work(b, options);
    let per_byte = wb as f64 / b.len() as f64;
    if wb as f64 > 4.5 * wa as f64 + 65536.0 || wb > work_bound(b.len()) {
      failures.push(format!("{name}: {wa} at {} bytes, {wb} at {} bytes ({per_byte:.1} per byte)", a.len(), b.len()));
    }
  }
  assert!(failures.is_empty(), "superlinear or costly:\n{}", failures.join("\n"));
}

/// One piece of a token format.
#[derive(Clone, Copy, Debug)]
pub enum Part {
  Lit(&'static str),
  /// `n` characters drawn from the alphabet.
  Chars(&'static str, usize),
  /// A lowercase hex UUID, `8-4-4-4-12` (the random part of several providers' tokens).
  Uuid,
}

/// A provider token format: the finding kind it is redacted as, and its shape.
#[derive(Clone, Copy, Debug)]
pub struct TokenFormat {
  pub kind: &'static str,
  pub parts: &'static [Part],
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &str = "0123456789abcdef";
const HEX_MIXED: &str = "0123456789abcdefABCDEF";
const UPPER_NUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const LOWER_NUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const DIGITS: &str = "0123456789";

macro_rules! token_format {
  ($kind:expr, $($part:expr),+ $(,)?) => {
    TokenFormat { kind: $kind, parts: &[$($part),+] }
  };
}

use Part::{Chars as C, Lit as L, Uuid};

/// Token formats with a distinctive prefix and shape, one or more per provider rule.
pub const TOKEN_FORMATS: &[TokenFormat] = &[
  token_format!("aws_access_key_id", L("AKIA"), C("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
  token_format!("aws_access_key_id", L("ASIA"), C(UPPER_NUM, 16)),
  token_format!("google_api_key", L("AIza"), C(URLSAFE, 35)),
  token_format!("google_oauth_secret", L("GOCSPX-"), C(URLSAFE, 28)),
  token_format!("google_oauth_token", L("ya29."), C(URLSAFE, 120)),
  token_format!("digitalocean_token", L("dop_v1_"), C(HEX, 64)),
  token_format!("alibaba_access_key_id", L("LTAI"), C(ALNUM, 20)),
  token_format!("heroku_api_key", L("HRKU-AA"), C(URLSAFE, 58)),
  token_format!("vault_token", L("hvs."), C(URLSAFE, 95)),
  token_format!("databricks_token", L("dapi"), C(HEX, 32)),
  token_format!("doppler_token", L("dp.pt."), C(ALNUM, 43)),
  token_format!("dynatrace_token", L("dt0c01."), C(ALNUM, 24), L("."), C(ALNUM, 64)),
  token_format!("dynatrace_token", L("dt0s01."), C(UPPER_NUM, 24), L("."), C(UPPER_NUM, 64)),
  token_format!("dynatrace_token", L("dt0s02."), C(UPPER_NUM, 8), L("."), C(UPPER_NUM, 64)),
  token_format!("buildkite_token", L("bkua_"), C(LOWER_NUM, 40)),
  token_format!("besttime_api_key", L("pri_"), C(HEX, 32)),
  token_format!("teamwork_token", L("tkn.v1_"), C(ALNUM, 71), L("=")),
  token_format!("wakatime_api_key", L("waka_"), Uuid),
  token_format!("adafruit_io_key", L("aio_"), C(ALNUM, 28)),
  token_format!("apify_token", L("apify_api_"), C(ALNUM, 36)),
  token_format!("aws_appsync_api_key", L("da2-"), C(LOWER_NUM, 26)),
  token_format!("fly_io_token", L("fo1_"), C(URLSAFE, 43)),
  token_format!("openshift_token", L("sha256~"), C(URLSAFE, 43)),
  token_format!("planetscale_token", L("pscale_tkn_"), C(ALNUM, 43)),
  token_format!("scalingo_token", L("tk-us-"), C(URLSAFE, 48)),
  token_format!("github_token", L("ghp_"), C(ALNUM, 36)),
  token_format!("github_token", L("gho_"), C(ALNUM, 36)),
  token_format!("github_token", L("ghs_"), C(ALNUM, 36)),
  token_format!("github_token", L("github_pat_"), C(ALNUM, 22), L("_"), C(ALNUM, 59)),
  token_format!("gitlab_token", L("glpat-"), C(ALNUM, 20)),
  token_format!("gitlab_token", L("glrt-"), C(URLSAFE, 30)),
  token_format!("bitbucket_token", L("ATBB"), C(ALNUM, 32)),
  token_format!("atlassian_token", L("ATATT3"), C(URLSAFE, 186)),
  token_format!("buildkite_token", L("bkua_"), C(HEX, 40)),
  token_format!("circleci_token", L("CCIPAT_"), C(ALNUM, 22), L("_"), C(HEX, 40)),
  token_format!("docker_hub_token", L("dckr_pat_"), C(ALNUM, 27)),
  token_format!("octopus_deploy_api_key", L("API-"), C(UPPER_NUM, 26)),
  token_format!("pulumi_token", L("pul-"), C(HEX, 40)),
  token_format!("pulumi_token", L("pul-"), C(LOWER_NUM, 40)),
  token_format!("sourcegraph_token", L("sgp_"), C(HEX, 40)),
  token_format!("sonar_token", L("squ_"), C(HEX, 40)),
  token_format!("npm_token", L("npm_"), C(ALNUM, 36)),
  token_format!("pypi_token", L("pypi-AgEIcHlwaS5vcmc"), C(URLSAFE, 70)),
  token_format!("rubygems_token", L("rubygems_"), C(HEX, 48)),
  token_format!("nuget_token", L("oy2"), C(LOWER_NUM, 43)),
  token_format!("clojars_token", L("CLOJARS_"), C(ALNUM, 60)),
  token_format!("slack_token", L("xoxb-"), C(DIGITS, 11), L("-"), C(DIGITS, 12), L("-"), C(ALNUM, 24)),
  token_format!(
    "slack_token",
    L("xoxp-"),
    C(DIGITS, 11),
    L("-"),
    C(DIGITS, 11),
    L("-"),
    C(DIGITS, 12),
    L("-"),
    C(ALNUM, 32)
  ),
  token_format!("twilio_api_key", L("SK"), C(HEX, 32)),
  token_format!("sendgrid_api_key", L("SG."), C(URLSAFE, 22), L("."), C(URLSAFE, 43)),
  token_format!("sendinblue_api_key", L("xkeysib-"), C(HEX, 64), L("-"), C(ALNUM, 16)),
  token_format!("mailgun_api_key", L("key-"), C(HEX, 32)),
  token_format!("mailchimp_api_key", C(HEX, 32), L("-us"), C(DIGITS, 2)),
  token_format!("telegram_bot_token", C(DIGITS, 10), L(":AA"), C(URLSAFE, 33)),
  token_format!("stripe_key", L("sk_live_"), C(ALNUM, 24)),
  token_format!("stripe_key", L("rk_test_"), C(ALNUM, 99)),
  token_format!("stripe_key", L("whsec_"), C(ALNUM, 32)),
  token_format!("square_token", L("sq0atp-"), C(URLSAFE, 22)),
  token_format!("square_token", L("EAAA"), C(URLSAFE, 60)),
  token_format!("shopify_token", L("shpat_"), C(HEX_MIXED, 32)),
  token_format!("shippo_token", L("shippo_live_"), C(HEX, 40)),
  token_format!("easypost_token", L("EZAK"), C(ALNUM, 54)),
  token_format!("duffel_token", L("duffel_test_"), C(URLSAFE, 43)),
  token_format!("gocardless_token", L("live_"), C(ALNUM, 40)),
  token_format!("facebook_token", L("EAAC"), C(ALNUM, 120)),
  token_format!("openai_api_key", L("sk-proj-"), C(URLSAFE, 120)),
  token_format!("openai_api_key", L("sk-"), C(ALNUM, 20), L("T3BlbkFJ"), C(ALNUM, 20)),
  token_format!("openai_api_key", L("sk-"), C(ALNUM, 48)),
  token_format!("anthropic_api_key", L("sk-ant-api03-"), C(URLSAFE, 93), L("AA")),
  token_format!("huggingface_token", L("hf_"), C(LETTERS, 34)),
  token_format!("perplexity_api_key", L("pplx-"), C(ALNUM, 48)),
  token_format!("groq_api_key", L("gsk_"), C(ALNUM, 52)),
  token_format!("replicate_token", L("r8_"), C(ALNUM, 37)),
  token_format!("xai_api_key", L("xai-"), C(ALNUM, 80)),
  token_format!("langsmith_api_key", L("lsv2_pt_"), C(HEX, 32), L("_"), C(HEX, 10)),
  token_format!("pinecone_api_key", L("pcsk_"), C(ALNUM, 60)),
  token_format!("onepassword_token", L("ops_eyJ"), C(B64, 260)),
  token_format!("adobe_client_secret", L("p8e-"), C(ALNUM, 32)),
  token_format!("age_secret_key", L("AGE-SECRET-KEY-1"), C("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
  token_format!("clickhouse_api_key", L("4b1d"), C(ALNUM, 38)),
  token_format!("defined_networking_token", L("dnkey-"), C(ALNUM, 26), L("-"), C(ALNUM, 52)),
  token_format!("frameio_token", L("fio-u-"), C(URLSAFE, 64)),
  token_format!("grafana_token", L("glc_"), C(ALNUM, 40)),
  token_format!("grafana_token", L("glsa_"), C(ALNUM, 32), L("_"), C(HEX_MIXED, 8)),
  token_format!("infracost_token", L("ico-"), C(ALNUM, 32)),
  token_format!("intra42_secret", L("s-s4t2ud-"), C(HEX, 64)),
  token_format!("linear_api_key", L("lin_api_"), C(ALNUM, 40)),
  token_format!("newrelic_key", L("NRAK-"), C(UPPER_NUM, 27)),
  token_format!("notion_token", L("ntn_"), C(DIGITS, 11), C(ALNUM, 35)),
  token_format!("postman_token", L("PMAK-"), C(HEX, 24), L("-"), C(HEX, 34)),
  token_format!("prefect_token", L("pnu_"), C(ALNUM, 36)),
  token_format!("readme_token", L("rdme_"), C(LOWER_NUM, 70)),
  token_format!("sentry_token", L("sntryu_"), C(HEX, 64)),
  token_format!("settlemint_token", L("sm_pat_"), C(ALNUM, 16)),
  token_format!("typeform_token", L("tfp_"), C(ALNUM, 59)),
  token_format!("yandex_api_key", L("AQVN"), C(ALNUM, 36)),
  token_format!("figma_token", L("figd_"), C(URLSAFE, 40)),
  token_format!("supabase_token", L("sbp_"), C(HEX, 40)),
  token_format!("tailscale_key", L("tskey-api-"), C(ALNUM, 10), L("-"), C(ALNUM, 30)),
  token_format!("contentful_token", L("CFPAT-"), C(URLSAFE, 43)),
  token_format!("netlify_token", L("nfp_"), C(ALNUM, 36)),
  token_format!("render_token", L("rnd_"), C(ALNUM, 32)),
  token_format!("yandex_api_key", L("t1."), C(URLSAFE, 20), L("."), C(URLSAFE, 86)),
  token_format!("yandex_api_key", L("YC"), C(URLSAFE, 38)),
  token_format!("tencent_secret_id", L("AKID"), C(ALNUM, 32)),
  token_format!("google_oauth_token", L("1//0"), C(URLSAFE, 100)),
  token_format!("azure_devops_token", C(ALNUM, 76), L("AZDO"), C(ALNUM, 4)),
  token_format!("astra_token", L("AstraCS:"), C(LETTERS, 24), L(":"), C(HEX, 64)),
  token_format!("bitbucket_token", L("BBDC-"), C(ALNUM, 44)),
  token_format!("mailgun_api_key", L("pubkey-"), C(HEX, 32)),
  token_format!("mailersend_token", L("mlsn."), C(HEX, 64)),
  token_format!("resend_api_key", L("re_"), C(ALNUM, 8), L("_"), C(ALNUM, 24)),
  token_format!(
    "discord_token",
    L("MT"),
    C("AEIMQUYcgk", 1),
    C(ALNUM, 21),
    L("."),
    C(URLSAFE, 6),
    L("."),
    C(ALNUM, 38)
  ),
  token_format!("slack_token", L("xoxc-"), C(DIGITS, 12), L("-"), C(HEX, 64)),
  token_format!("paypal_token", L("access_token$production$"), C(LOWER_NUM, 16), L("$"), C(HEX, 32)),
  token_format!("plaid_token", L("access-sandbox-"), Uuid),
  token_format!("razorpay_key", L("rzp_live_"), C(ALNUM, 14)),
  token_format!("openrouter_api_key", L("sk-or-v1-"), C(HEX, 64)),
  token_format!("nvidia_api_key", L("nvapi-"), C(URLSAFE, 64)),
  token_format!("elevenlabs_api_key", L("sk_"), C(HEX, 48)),
  token_format!("langfuse_key", L("sk-lf-"), Uuid),
  token_format!("dropbox_token", L("sl."), C(URLSAFE, 140)),
  token_format!("twitter_token", L("AAAAAAAAAAAAAAAAAAAAA"), C(ALNUM, 90)),
  token_format!("databricks_token", L("dose"), C(HEX, 32)),
  token_format!("posthog_token", L("phx_"), C(ALNUM, 47)),
  token_format!("supabase_token", L("sb_secret_"), C(URLSAFE, 31)),
  token_format!("linear_api_key", L("lin_oauth_"), C(HEX, 64)),
  token_format!("docker_hub_token", L("dckr_oat_"), C(URLSAFE, 32)),
  token_format!("newrelic_key", C(HEX, 36), L("NRAL")),
  token_format!("newrelic_key", L("NRII-"), C("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-", 32)),
  token_format!("hubspot_token", L("pat-na1-"), Uuid),
];

/// A fake token of `format`, drawing characters with `next` (any source of random numbers).
pub fn fake_token(format: &TokenFormat, next: &mut impl FnMut() -> u64) -> String {
  let mut out = String::new();
  let mut chars = |out: &mut String, alphabet: &str, n: usize| {
    let a = alphabet.as_bytes();
    out.extend((0..n).map(|_| a[(next() % a.len() as u64) as usize] as char));
  };
  for part in format.parts {
    match *part {
      Part::Lit(s) => out.push_str(s),
      Part::Chars(alphabet, n) => chars(&mut out, alphabet, n),
      Part::Uuid => {
        for (i, n) in [8, 4, 4, 4, 12].into_iter().enumerate() {
          if i > 0 {
            out.push('-');
          }
          chars(&mut out, HEX, n);
        }
      }
    }
  }
  out
}

/// The seeded generator of the tests and the fuzzer (splitmix64): every value a test draws is
/// reproducible from its seed, and no source file holds the values themselves.
pub struct Rng(pub u64);

impl Rng {
  // Never exhausted: as an `Iterator` every call site would unwrap an `Option` that is never
  // `None`.
  #[allow(clippy::should_implement_trait)]
  pub fn next(&mut self) -> u64 {
    self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = self.0;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
  }
  pub fn below(&mut self, n: usize) -> usize {
    (self.next() % n.max(1) as u64) as usize
  }
  pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
    &xs[self.below(xs.len())]
  }
  pub fn chars(&mut self, alphabet: &str, n: usize) -> String {
    let a: Vec<char> = alphabet.chars().collect();
    (0..n).map(|_| *self.pick(&a)).collect()
  }
  pub fn digits(&mut self, n: usize) -> String {
    self.chars("0123456789", n)
  }
}
